"""BM25 retrieval: analyse the query, score with the backend's lexical index."""

from __future__ import annotations

from twokeys.analysis import Analyzer
from twokeys.retrievers.base import Retriever, RetrieverResult
from twokeys.store.base import LexicalIndex
from twokeys.types import Evidence


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
