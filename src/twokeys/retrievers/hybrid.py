"""Hybrid retrieval: run BM25 and dense separately, fuse their rankings with RRF.

``weighting="none"`` is plain RRF. ``weighting="confidence"`` is weighted RRF where the
lexical run's weight is the square of its confidence (the share of the query's idf
mass its top hit matches, :mod:`twokeys.fusion.confidence`) and the dense run's is 1:
an identifier that BM25 matches keeps its full say, a paraphrase whose words the
documents don't use stops dragging unrelated keyword matches up.
"""

from __future__ import annotations

from twokeys.errors import ConfigError
from twokeys.fusion.rrf import DEFAULT_K, rrf, rrf_term
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.retrievers.dense import DenseRetriever
from twokeys.retrievers.lexical import BM25Retriever
from twokeys.types import Evidence

WEIGHTINGS = ("none", "confidence")


class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(
        self,
        lexical: BM25Retriever,
        dense: DenseRetriever,
        *,
        candidates: int = 100,
        k: float = DEFAULT_K,
        weighting: str = "none",
    ) -> None:
        if candidates < 1:
            raise ConfigError(f"candidates: must be >= 1, got {candidates}")
        if weighting not in WEIGHTINGS:
            raise ConfigError(f"weighting: {weighting!r} is not one of {', '.join(WEIGHTINGS)}")
        self.lexical = lexical
        self.dense = dense
        self.candidates = candidates
        self.k = k
        self.weighting = weighting

    def weights(self, query: str, lexical: RetrieverResult) -> dict[str, float]:
        """Per-run RRF weights for this query."""
        if self.weighting == "none":
            return {self.lexical.name: 1.0, self.dense.name: 1.0}
        confidence = self.lexical.confidence(query, lexical.run)
        return {self.lexical.name: confidence**2, self.dense.name: 1.0}

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        depth = max(k, self.candidates)
        results = {
            self.lexical.name: self.lexical.retrieve(query, depth, explain=explain),
            self.dense.name: self.dense.retrieve(query, depth, explain=explain),
        }
        weights = self.weights(query, results[self.lexical.name])
        runs = {name: res.run for name, res in results.items()}
        fused = rrf(runs, self.k, weights)[:k]
        evidence: dict[int, tuple[Evidence, ...]] = {}
        if explain:
            for hit in fused:
                parts: list[Evidence] = []
                for name, res in results.items():
                    for ev in res.evidence.get(hit.row, ()):
                        parts.append(
                            Evidence(
                                ev.retriever,
                                ev.rank,
                                ev.score,
                                fused=weights[name] * rrf_term(ev.rank, self.k),
                                weight=weights[name],
                                matched_terms=ev.matched_terms,
                            )
                        )
                evidence[hit.row] = tuple(parts)
        return RetrieverResult(fused, evidence)
