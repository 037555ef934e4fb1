"""Dense retrieval: embed the query, exact cosine search over the chunk vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from twokeys.dense.encoder import Encoder
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.store.base import RowMask, VectorIndex
from twokeys.types import Evidence, ScoredChunk


class DenseRetriever(Retriever):
    name = "dense"

    def __init__(
        self, encoder: Encoder, index: VectorIndex, *, allowed: RowMask | None = None
    ) -> None:
        self.encoder = encoder
        self.index = index
        self.allowed = allowed  # the rows a filtered search ranks (None: all)

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        return self.retrieve_vector(self.encoder.encode_query(query), k, explain=explain)

    def retrieve_vector(
        self, vector: npt.NDArray[np.float32], k: int, *, explain: bool = False
    ) -> RetrieverResult:
        """:meth:`retrieve` for a query already encoded (``encoder.encode_query``)."""
        run = self.index.search(vector, k, allowed=self.allowed)
        evidence = self.explain_hits(run) if explain else {}
        return RetrieverResult(run, evidence, self.index.mean_similarity(vector))

    def explain_hits(self, hits: Sequence[ScoredChunk]) -> dict[int, tuple[Evidence, ...]]:
        """The evidence :meth:`retrieve` with ``explain`` gives ``hits`` (entries of its
        run): each one's rank and cosine."""
        return {hit.row: (Evidence(self.name, hit.rank, hit.score),) for hit in hits}
