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
    Reranker,
    get_reranker,
    register_reranker,
    register_reranker_family,
    reorder,
    reranker_names,
)


def _e5() -> Reranker:
    from twokeys.rerank.e5 import E5Reranker

    return E5Reranker()


def _proximity() -> Reranker:
    from twokeys.rerank.proximity import ProximityReranker

    return ProximityReranker()


def _cross_encoder(path: str) -> Reranker:
    from twokeys.rerank.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker(path)


register_reranker("e5", _e5)
register_reranker("proximity", _proximity)
register_reranker_family("cross-encoder", _cross_encoder)

__all__ = [
    "Reranker",
    "get_reranker",
    "register_reranker",
    "register_reranker_family",
    "reorder",
    "reranker_names",
]
