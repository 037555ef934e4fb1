"""The interface of a vector index: ranks chunk rows by cosine similarity to a query.

The embedded implementations are exact search (:mod:`twokeys.dense.exact`) and an HNSW
graph (:mod:`twokeys.dense.ann`); a server backend implements it over its own store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
import numpy.typing as npt

from twokeys.types import RowMask, ScoredChunk


class VectorIndex(ABC):
    """Ranks chunks by cosine similarity to a query vector."""

    @abstractmethod
    def search(
        self, query: npt.NDArray[np.float32], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        """The top ``k`` chunks, ordered by (-cosine, row); with ``allowed`` (a mask over
        rows), among those only."""

    @abstractmethod
    def similarity(self, query: npt.NDArray[np.float32], row: int) -> float:
        """Cosine similarity between the query and one chunk."""

    def similarities(
        self, query: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        """:meth:`similarity` for each of ``rows``, in their order (an index that can
        read them together does, in one go)."""
        return np.array([self.similarity(query, int(r)) for r in rows], np.float64)

    @abstractmethod
    def mean_similarity(self, query: npt.NDArray[np.float32]) -> float:
        """The query's mean cosine over all chunks: what a chunk picked at random scores,
        the dense run's chance level (the query times the mean chunk vector). 0.0 for an
        empty index."""
