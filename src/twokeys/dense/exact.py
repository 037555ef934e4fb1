"""Exact cosine search: one matrix-vector product over normalised embeddings."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from twokeys.store.base import VectorIndex
from twokeys.topk import top_k
from twokeys.types import ScoredChunk


class ExactVectorIndex(VectorIndex):
    """Brute-force top-k over an (n, dim) array of L2-normalised rows (float32 or float16)."""

    def __init__(self, embeddings: npt.NDArray[np.floating]) -> None:
        self._embeddings = embeddings

    def search(self, query: npt.NDArray[np.float32], k: int) -> list[ScoredChunk]:
        if self._embeddings.shape[0] == 0:
            return []
        scores = self._embeddings @ query.astype(self._embeddings.dtype)
        rows, values = top_k(scores.astype(np.float32), k)
        return [
            ScoredChunk(row=int(r), score=float(s), rank=i + 1)
            for i, (r, s) in enumerate(zip(rows, values, strict=True))
        ]

    def similarity(self, query: npt.NDArray[np.float32], row: int) -> float:
        return float(self._embeddings[row].astype(np.float32) @ query)
