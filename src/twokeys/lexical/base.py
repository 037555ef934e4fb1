"""The interface of a lexical index: ranks chunk rows by analysed query terms.

The embedded implementation is :class:`twokeys.lexical.index.ArrayLexicalIndex`; a
server backend implements it over its own term tables.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from twokeys.types import RowMask, ScoredChunk

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer


class LexicalIndex(ABC):
    """Ranks chunks by analysed query terms (BM25 in the embedded backend)."""

    @abstractmethod
    def search(
        self, terms: Sequence[str], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        """The top ``k`` chunks with a positive score, ordered by (-score, row); with
        ``allowed`` (a mask over rows, see :mod:`twokeys.filters`), among those only."""

    def search_query(self, analyzer: Analyzer, query: str, k: int) -> list[ScoredChunk]:
        """:meth:`search` of ``analyzer``'s query terms of ``query``: the same run. An index
        may find the terms its own quicker way (the embedded one: from the text straight to
        term ids, each distinct raw token analysed once)."""
        return self.search(analyzer.query_terms(query), k)

    def search_many(
        self, queries: Sequence[Sequence[str]], k: int, *, threads: int | None = None
    ) -> list[list[ScoredChunk]]:
        """:meth:`search` for each query's terms, with identical results.

        ``threads`` caps the threads a backend may use (None: one per core). This default
        searches one query after another.
        """
        return [self.search(terms, k) for terms in queries]

    @abstractmethod
    def explain(self, terms: Sequence[str], row: int) -> tuple[tuple[str, float], ...]:
        """Each matched query term and its contribution to ``row``'s score."""

    def explain_many(
        self, terms: Sequence[str], rows: Sequence[int]
    ) -> list[tuple[tuple[str, float], ...]]:
        """:meth:`explain` for each of ``rows``, in order, in one call (one round trip
        for a server backend). This default explains one row after another."""
        return [self.explain(terms, row) for row in rows]

    @abstractmethod
    def has_term(self, term: str) -> bool:
        """Whether any chunk contains ``term``."""

    @abstractmethod
    def idf(self, terms: Sequence[str]) -> list[float]:
        """BM25 idf of each term; a term no chunk contains gets the idf of df = 0."""

    def document_frequencies(self, terms: Sequence[str]) -> tuple[list[int], int] | None:
        """How many chunks hold each term, and how many chunks there are; None where the
        backend cannot tell (query-adaptive fusion then goes without term rarity)."""
        return None
