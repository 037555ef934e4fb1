"""BM25 retrieval: analyse the query, score with the backend's lexical index."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from twokeys.analysis import Analyzer
from twokeys.fusion.adaptive import (
    QueryFeatures,
    TermEvidence,
    is_identifier_like,
    quoted_strings,
)
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
        if not explain and self.allowed is None:  # the plain search: the index's fast path
            return RetrieverResult(self.index.search_query(self.analyzer, query, k))
        terms = self.analyzer.query_terms(query)
        run = self.index.search(terms, k, allowed=self.allowed)
        return RetrieverResult(run, self.explain_hits(query, run, terms) if explain else {})

    def explain_hits(
        self, query: str, hits: Sequence[ScoredChunk], terms: Sequence[str] | None = None
    ) -> dict[int, tuple[Evidence, ...]]:
        """The evidence :meth:`retrieve` with ``explain`` gives ``hits`` (entries of its
        run): each one's matched terms and their weights, in one call to the index. The
        hybrid explains only the hits it returns, not every candidate it fuses."""
        if not hits:
            return {}
        if terms is None:
            terms = self.analyzer.query_terms(query)
        matched_all = self.index.explain_many(terms, [hit.row for hit in hits])
        return {
            hit.row: (Evidence(self.name, hit.rank, hit.score, matched_terms=matched),)
            for hit, matched in zip(hits, matched_all, strict=True)
        }

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, explain: bool = False
    ) -> list[RetrieverResult]:
        """:meth:`retrieve` for each query, scored as one batch on every core."""
        if explain or self.allowed is not None:
            return super().retrieve_many(queries, k, explain=explain)
        runs = self.index.search_many([self.analyzer.query_terms(q) for q in queries], k)
        return [RetrieverResult(run) for run in runs]

    def confidence(
        self, query: str, run: Sequence[ScoredChunk], terms: Sequence[str] | None = None
    ) -> float:
        """Share of the query's idf mass matched by the run's top hit (see fusion.confidence);
        ``terms``: the query's terms, if the caller has them."""
        if not run:
            return 0.0
        if terms is None:
            terms = self.analyzer.query_terms(query)
        counts = {t: float(c) for t, c in Counter(terms).items()}
        idf = dict(zip(counts, self.index.idf(list(counts)), strict=True))
        matched = [t for t, _ in self.index.explain(terms, run[0].row)]
        return lexical_confidence(counts, idf, matched)

    def features(self, query: str, result: RetrieverResult) -> QueryFeatures:
        """What query-adaptive fusion reads from ``query`` and this retriever's result."""
        found: list[str] = []
        missing: list[str] = []
        # the query's words analysed once each (the analysis is a pure function of the text)
        tokens = self.analyzer.tokens(query)
        token_terms = [self.analyzer.query_terms(token.text) for token in tokens]
        for token, terms_of_token in zip(tokens, token_terms, strict=True):
            if not (token.is_identifier and is_identifier_like(token.text)):
                continue
            whole = terms_of_token[:1]
            if whole:
                (found if self.index.has_term(whole[0]) else missing).append(whole[0])
        quoted = []
        for text in quoted_strings(query):
            terms = tuple(t for t in dict.fromkeys(self.analyzer.query_terms(text)))
            if terms and all(self.index.has_term(t) for t in terms):
                quoted.append(terms)
        words = sum(1 for terms_of_token in token_terms if terms_of_token)
        query_terms = self.analyzer.query_terms(query)
        return QueryFeatures(
            identifiers=tuple(dict.fromkeys(found)),
            missing_identifiers=tuple(dict.fromkeys(missing)),
            quoted=tuple(quoted),
            lexical_confidence=self.confidence(query, result.run, query_terms),
            n_terms=len(query_terms),
            n_words=words,
        )

    def term_evidence(
        self,
        query: str,
        run: Sequence[ScoredChunk],
        dense_top: Sequence[int],
        count_pieces: Callable[[Sequence[str]], list[int]],
    ) -> tuple[TermEvidence, ...]:
        """Per query term the corpus contains: its share of ``run``'s top-hit score,
        whether any chunk of ``dense_top`` (the dense run's best rows) contains it, how
        many pieces ``count_pieces`` (the dense model's tokenizer) cuts its word into, the
        share of the corpus' chunks holding it, and whether ``run``'s next chunks (as many
        as ``dense_top``, after the top hit) hold it."""
        terms = self.analyzer.query_terms(query)
        if not run or not terms:
            return ()
        # the top hit, dense_top, and BM25's next chunks (as many as dense_top) in one
        # call: one statement on a database backend instead of one per chunk
        nexts = [hit.row for hit in run[1 : len(dense_top)]]
        matched = self.index.explain_many(terms, [run[0].row, *dense_top, *nexts])
        top = dict(matched[0])
        total = sum(top.values())
        seen = {t for found in matched[1 : 1 + len(dense_top)] for t, _ in found}
        rest = {t for found in matched[1 + len(dense_top) :] for t, _ in found}
        words: dict[str, str] = {}  # term -> the query word it comes from
        for token in self.analyzer.tokens(query):
            for term in self.analyzer.terms_of(token, for_query=True):
                words.setdefault(term, token.text)
        unique = list(dict.fromkeys(terms))
        counts = self.index.document_frequencies(unique)  # one call: the terms held and
        if counts is None:  # their shares (without frequencies, term by term)
            wanted = [t for t in unique if self.index.has_term(t)]
            shares: list[float | None] = [None] * len(wanted)
        else:
            held = [(t, df) for t, df in zip(unique, counts[0], strict=True) if df > 0]
            wanted = [t for t, _ in held]
            shares = [df / counts[1] if counts[1] > 0 else None for _, df in held]
        if not wanted:
            return ()
        pieces = count_pieces([words.get(t, t) for t in wanted])
        return tuple(
            TermEvidence(
                t, top.get(t, 0.0) / total if total > 0 else 0.0, t in seen, n, share, t in rest
            )
            for t, n, share in zip(wanted, pieces, shares, strict=True)
        )
