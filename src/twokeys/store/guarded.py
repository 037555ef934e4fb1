"""The array lexical index with damage reported as a named file, not an IndexError.

Chunk rows in ``lexical.indices.npy`` are not scanned when an index opens (that would
read every posting); a row past the end raises inside numpy, and this wrapper turns it
into an :class:`~twokeys.errors.IndexFormatError` naming the files. A batch search
checks the bounds once first, since a sparse product would not check its indices.
``twokeys check`` finds the values that stay in range but are wrong.
"""

from __future__ import annotations

from collections.abc import Sequence

from twokeys.analysis import Analyzer
from twokeys.errors import IndexFormatError
from twokeys.lexical.index import ArrayLexicalIndex
from twokeys.store.base import LexicalIndex, RowMask
from twokeys.types import ScoredChunk


class GuardedLexicalIndex(LexicalIndex):
    """The array index with out-of-range arrays reported as a damaged file, not IndexError.

    Bounds are not scanned at open (that would read every posting); an index read past
    its end raises here, and ``twokeys check`` finds values that stay in range but wrong.
    """

    def __init__(self, inner: ArrayLexicalIndex, where: str, advice: str) -> None:
        self.inner = inner
        self._where = where  # the files named in errors
        self._advice = advice  # what to do, appended to errors
        self._bounds_checked = False

    def _damaged(self, exc: Exception) -> IndexFormatError:
        return IndexFormatError(f"{self._where}: arrays out of range ({exc}){self._advice}")

    def _damaged_or(self, exc: Exception) -> Exception:
        """The damaged-file error, unless ``exc`` is a ValueError of another cause."""
        if isinstance(exc, ValueError) and "out of range" not in str(exc):
            return exc
        return self._damaged(exc)

    def search(
        self, terms: Sequence[str], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        try:
            return self.inner.search(terms, k, allowed=allowed)
        except (IndexError, ValueError) as exc:  # numpy's, or the compiled kernel's check
            raise self._damaged_or(exc) from exc

    def search_query(self, analyzer: Analyzer, query: str, k: int) -> list[ScoredChunk]:
        try:
            return self.inner.search_query(analyzer, query, k)
        except (IndexError, ValueError) as exc:  # as search
            raise self._damaged_or(exc) from exc

    def search_many(
        self, queries: Sequence[Sequence[str]], k: int, *, threads: int | None = None
    ) -> list[list[ScoredChunk]]:
        if not self._bounds_checked:  # a sparse product would not check its indices
            indices = self.inner._indices
            n = self.inner._n_docs
            if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
                raise self._damaged(IndexError(f"chunk rows outside 0..{n - 1}"))
            self._bounds_checked = True
        try:
            return self.inner.search_many(queries, k, threads=threads)
        except (IndexError, ValueError) as exc:
            raise self._damaged_or(exc) from exc

    def explain(self, terms: Sequence[str], row: int) -> tuple[tuple[str, float], ...]:
        try:
            return self.inner.explain(terms, row)
        except IndexError as exc:
            raise self._damaged(exc) from exc

    def explain_many(
        self, terms: Sequence[str], rows: Sequence[int]
    ) -> list[tuple[tuple[str, float], ...]]:
        # the inner index's one binary search per term for all the rows, not the base
        # class's one row after another (a Python call per row and term)
        try:
            return self.inner.explain_many(terms, rows)
        except IndexError as exc:
            raise self._damaged(exc) from exc

    def has_term(self, term: str) -> bool:
        return self.inner.has_term(term)

    def document_frequencies(self, terms: Sequence[str]) -> tuple[list[int], int] | None:
        try:
            return self.inner.document_frequencies(terms)
        except IndexError as exc:
            raise self._damaged(exc) from exc

    def idf(self, terms: Sequence[str]) -> list[float]:
        try:
            return self.inner.idf(terms)
        except IndexError as exc:
            raise self._damaged(exc) from exc
