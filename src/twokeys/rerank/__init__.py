"""Reranking the fused top-N: the ``Reranker`` interface, its registry and the built-ins.

* ``cross-encoder:/path/to/model``: a sentence-transformers cross-encoder on disk
  (``pip install 'twokeys[rerank]'``), :mod:`twokeys.rerank.cross_encoder`.
* ``e5``: multilingual-e5-small cosine blended with the hybrid score
  (``pip install 'twokeys[rerank-e5]'``), :mod:`twokeys.rerank.e5`.
* ``proximity``: BM25TP term proximity blended with the hybrid score,
  :mod:`twokeys.rerank.proximity`.

None is on by default (proximity barely helps; e5 helps a little for seconds a query;
their modules give the figures): ``search --rerank NAME``, ``--mode hybrid+e5`` or
``SearchRequest(reranker=NAME)`` turns one on, reranking the top 20. Backends load
lazily, on first use.
"""

from __future__ import annotations

from twokeys.rerank.base import (
    IndexView,
    Reranker,
    get_reranker,
    register_reranker,
    register_reranker_family,
    reorder,
    reranker_names,
)

# named by path: a backend (and its model runtime) is imported on first use only
register_reranker("e5", "twokeys.rerank.e5:E5Reranker")
register_reranker("proximity", "twokeys.rerank.proximity:ProximityReranker")
register_reranker_family("cross-encoder", "twokeys.rerank.cross_encoder:CrossEncoderReranker")

__all__ = [
    "IndexView",
    "Reranker",
    "get_reranker",
    "register_reranker",
    "register_reranker_family",
    "reorder",
    "reranker_names",
]
