"""BM25 retrieval: analyse the query, score with the backend's lexical index."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from twokeys.analysis import Analyzer
from twokeys.fusion.adaptive import QueryFeatures, is_identifier_like, quoted_strings
from twokeys.fusion.confidence import lexical_confidence
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.store.base import LexicalIndex, RowMask
from twokeys.types import Evidence, ScoredChunk


class BM25Retriever(Retriever):
    name = "bm25"

    def __init__(
        self, analyzer: Analyzer, index: LexicalIndex, *, allowed: RowMask | None = None
    ) -> None:
        self.analyzer = analyzer
        self.index = index
        self.allowed = allowed  # the rows a filtered search ranks (None: all)

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        terms = self.analyzer.query_terms(query)
        run = self.index.search(terms, k, allowed=self.allowed)
        evidence = {}
        if explain:
            matched_all = self.index.explain_many(terms, [hit.row for hit in run])
            for hit, matched in zip(run, matched_all, strict=True):
                evidence[hit.row] = (
                    Evidence(self.name, hit.rank, hit.score, matched_terms=matched),
                )
        return RetrieverResult(run, evidence)

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, explain: bool = False
    ) -> list[RetrieverResult]:
        """:meth:`retrieve` for each query, scored as one batch on every core."""
        if explain or self.allowed is not None:
            return super().retrieve_many(queries, k, explain=explain)
        runs = self.index.search_many([self.analyzer.query_terms(q) for q in queries], k)
        return [RetrieverResult(run) for run in runs]

    def confidence(self, query: str, run: Sequence[ScoredChunk]) -> float:
        """Share of the query's idf mass matched by the run's top hit (see fusion.confidence)."""
        if not run:
            return 0.0
        terms = self.analyzer.query_terms(query)
        counts = {t: float(c) for t, c in Counter(terms).items()}
        idf = dict(zip(counts, self.index.idf(list(counts)), strict=True))
        matched = [t for t, _ in self.index.explain(terms, run[0].row)]
        return lexical_confidence(counts, idf, matched)

    def features(self, query: str, result: RetrieverResult) -> QueryFeatures:
        """What query-adaptive fusion reads from ``query`` and this retriever's result."""
        found: list[str] = []
        missing: list[str] = []
        for token in self.analyzer.tokens(query):
            if not (token.is_identifier and is_identifier_like(token.text)):
                continue
            whole = self.analyzer.query_terms(token.text)[:1]
            if whole:
                (found if self.index.has_term(whole[0]) else missing).append(whole[0])
        quoted = []
        for text in quoted_strings(query):
            terms = tuple(t for t in dict.fromkeys(self.analyzer.query_terms(text)))
            if terms and all(self.index.has_term(t) for t in terms):
                quoted.append(terms)
        return QueryFeatures(
            identifiers=tuple(dict.fromkeys(found)),
            missing_identifiers=tuple(dict.fromkeys(missing)),
            quoted=tuple(quoted),
            lexical_confidence=self.confidence(query, result.run),
            n_terms=len(self.analyzer.query_terms(query)),
        )
