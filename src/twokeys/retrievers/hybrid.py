"""Hybrid retrieval: run each retriever separately, fuse their rankings with RRF."""

from __future__ import annotations

from collections.abc import Sequence

from twokeys.errors import ConfigError
from twokeys.fusion.rrf import DEFAULT_K, rrf, rrf_term
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.types import Evidence


class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(
        self, retrievers: Sequence[Retriever], *, candidates: int = 100, k: float = DEFAULT_K
    ) -> None:
        if candidates < 1:
            raise ConfigError(f"candidates: must be >= 1, got {candidates}")
        self.retrievers = list(retrievers)
        self.candidates = candidates
        self.k = k

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        results = {
            r.name: r.retrieve(query, max(k, self.candidates), explain=explain)
            for r in self.retrievers
        }
        fused = rrf({name: res.run for name, res in results.items()}, self.k)[:k]
        evidence: dict[int, tuple[Evidence, ...]] = {}
        if explain:
            for hit in fused:
                parts: list[Evidence] = []
                for res in results.values():
                    for ev in res.evidence.get(hit.row, ()):
                        parts.append(
                            Evidence(
                                ev.retriever,
                                ev.rank,
                                ev.score,
                                fused=rrf_term(ev.rank, self.k),
                                matched_terms=ev.matched_terms,
                            )
                        )
                evidence[hit.row] = tuple(parts)
        return RetrieverResult(fused, evidence)
