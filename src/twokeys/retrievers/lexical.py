"""BM25 retrieval: analyse the query, score with the backend's lexical index."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from twokeys.analysis import Analyzer
from twokeys.fusion.confidence import lexical_confidence
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.store.base import LexicalIndex
from twokeys.types import Evidence, ScoredChunk


class BM25Retriever(Retriever):
    name = "bm25"

    def __init__(self, analyzer: Analyzer, index: LexicalIndex) -> None:
        self.analyzer = analyzer
        self.index = index

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        terms = self.analyzer.query_terms(query)
        run = self.index.search(terms, k)
        evidence = {}
        if explain:
            for hit in run:
                matched = self.index.explain(terms, hit.row)
                evidence[hit.row] = (
                    Evidence(self.name, hit.rank, hit.score, matched_terms=matched),
                )
        return RetrieverResult(run, evidence)

    def confidence(self, query: str, run: Sequence[ScoredChunk]) -> float:
        """Share of the query's idf mass matched by the run's top hit (see fusion.confidence)."""
        if not run:
            return 0.0
        terms = self.analyzer.query_terms(query)
        counts = {t: float(c) for t, c in Counter(terms).items()}
        idf = dict(zip(counts, self.index.idf(list(counts)), strict=True))
        matched = [t for t, _ in self.index.explain(terms, run[0].row)]
        return lexical_confidence(counts, idf, matched)
