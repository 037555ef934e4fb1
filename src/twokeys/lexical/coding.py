"""Texts to term ids for a build: each distinct raw token analysed once.

A build's texts hold about twenty times as many raw tokens as distinct ones (SciFact:
1.2 million and 61 thousand). :class:`TermCoder` finds each text's raw tokens, analyses
only those it has not met before (:meth:`Analyzer.index_terms_of_raws`, their plain
words stemmed in one call) and writes out every occurrence's term ids. The terms are
:meth:`Analyzer.index_terms`' for every text, in order (tests compare the two); no term
string is made per occurrence.

With the compiled kernel (``_kernel.c``) one call per batch does it: ``RawTable`` scans
the texts with the analyzer's raw-token pattern written in C, looks each token up by its
characters (no str object for a token met before), asks for the new ones' terms and
copies out the term ids. Without it the pattern finds the tokens, a dict numbers them
and numpy expands them to term ids: the same ids, more slowly.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from itertools import chain
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.analysis import Analyzer, raw_tokens_of
from twokeys.lexical.bm25 import IdBatch

_kernel: ModuleType | None
try:  # the compiled scan (``_kernel.c``); the pattern gives the same tokens without it
    from twokeys.lexical import _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None


class TermCoder:
    """Term ids of texts (:meth:`encode`), numbered in order of first appearance; the
    term of id ``i`` is ``terms[i]``. One per build: it keeps every distinct raw token."""

    def __init__(self, analyzer: Analyzer, *, compiled: bool = True) -> None:
        self.analyzer = analyzer
        self.compiled = compiled and _kernel is not None
        self.terms: list[str] = []
        self._term_ids: dict[str, int] = {}  # term -> its index in terms
        self.forget_raw_tokens()

    def forget_raw_tokens(self) -> None:
        """Drop the distinct raw tokens met so far (most of the coder's memory) once no
        more texts are to come; the terms and their ids stay (a raw token met again is
        analysed again, into the same ids)."""
        self._table: Any = _kernel.RawTable() if self.compiled and _kernel is not None else None
        self._plain = _PlainTable()

    def encode(self, texts: Sequence[str]) -> IdBatch:
        """The term ids of ``texts`` (see :data:`~twokeys.lexical.bm25.IdBatch`)."""
        items = [self.analyzer.scan_form(text) for text in texts]
        if self._table is not None:
            ids, counts = self._table.encode(items, self._learn)
            return np.frombuffer(ids, np.int32), np.frombuffer(counts, np.int64)
        return self._plain.encode(items, self._learn)

    def _learn(self, raws: list[str]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """The term ids of raw tokens met for the first time: all of them one after
        another, and how many each has."""
        raw_terms = self.analyzer.index_terms_of_raws(raws)
        counts = np.fromiter(map(len, raw_terms), np.int32, len(raw_terms))
        flat = list(chain.from_iterable(raw_terms))
        term_ids = self._term_ids
        # the terms not seen before get the next ids in order of first appearance (dict
        # and list operations over the batch instead of a call per new term)
        unseen = [t for t in dict.fromkeys(flat) if t not in term_ids]
        term_ids.update(zip(unseen, range(len(term_ids), len(term_ids) + len(unseen)), strict=True))
        self.terms += unseen
        return np.fromiter(map(term_ids.__getitem__, flat), np.int32, len(flat)), counts


# A query coder forgets its raw tokens when it holds this many (a server's queries never
# stop bringing new ones); it then learns the next queries' tokens again.
QUERY_RAW_TOKENS_KEPT = 200_000


class QueryCoder:
    """A query's text to the term ids of one vocabulary (:meth:`ids`), each distinct raw
    token analysed once: the compiled ``RawTable`` scans the text, looks its raw tokens
    up by their characters and copies their ids out; a token met for the first time gets
    :meth:`Analyzer.query_terms_of_raws`' terms, those in the vocabulary. The ids are
    those of :meth:`Analyzer.query_terms` of the text, in order, less the terms the
    vocabulary lacks (tests compare the two). Needs the compiled kernel
    (:data:`available`); safe to share between threads (one scan at a time: a scan that
    learns calls back into Python)."""

    available = _kernel is not None

    def __init__(
        self,
        analyzer: Analyzer,
        vocabulary: Mapping[str, int],
        *,
        keep: int = QUERY_RAW_TOKENS_KEPT,
    ) -> None:
        if _kernel is None:
            raise RuntimeError("QueryCoder needs the compiled twokeys.lexical._kernel")
        self.analyzer = analyzer
        self._vocabulary = vocabulary
        self._keep = keep
        self._table: Any = _kernel.RawTable()
        self._lock = threading.Lock()

    def ids(self, text: str) -> bytes:
        """The term ids of ``text``'s known query terms, in query order, as int32 values."""
        item = self.analyzer.scan_form(text)
        with self._lock:
            if self._table.size() >= self._keep:
                self._table = _kernel.RawTable()  # type: ignore[union-attr]
            ids: bytes = self._table.encode([item], self._learn)[0]
        return ids

    def _learn(self, raws: list[str]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """The known term ids of raw tokens met for the first time, one after another, and
        how many each has."""
        vocabulary = self._vocabulary
        known = [
            [vocabulary[t] for t in terms if t in vocabulary]
            for terms in self.analyzer.query_terms_of_raws(raws)
        ]
        counts = np.fromiter(map(len, known), np.int32, len(known))
        flat = np.fromiter(chain.from_iterable(known), np.int32, int(counts.sum()))
        return flat, counts


class _PlainTable:
    """``_kernel.RawTable`` without the kernel: raw tokens by the analyzer's pattern, a
    dict of their ids, their term ids in growing arrays, expanded with numpy."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        # raw token id -> its term ids: terms[starts[r] : starts[r] + lengths[r]]
        self._starts = _Growing(np.int64)
        self._lengths = _Growing(np.int32)
        self._terms = _Growing(np.int32)

    def encode(self, items: Sequence[str | list[str]], learn: Any) -> IdBatch:
        raws: list[int] = []
        raw_counts: list[int] = []
        new: list[str] = []
        table = self._ids
        for item in items:
            found = raw_tokens_of(item)
            for raw in found:
                raw_id = table.get(raw)
                if raw_id is None:
                    raw_id = table[raw] = len(table)
                    new.append(raw)
                raws.append(raw_id)
            raw_counts.append(len(found))
        if new:
            ids, counts = learn(new)
            self._starts.extend(np.cumsum(counts, dtype=np.int64) - counts + self._terms.size)
            self._lengths.extend(counts)
            self._terms.extend(ids)
        occurrences = np.asarray(raws, np.int64)
        lengths = self._lengths.view()[occurrences]
        ends = np.cumsum(lengths, dtype=np.int64)
        total = int(ends[-1]) if ends.size else 0
        # occurrence i's terms are terms[starts[i] : starts[i] + lengths[i]]
        offsets = np.repeat(self._starts.view()[occurrences] - (ends - lengths), lengths)
        term_ids = self._terms.view()[offsets + np.arange(total)].astype(np.int32, copy=False)
        bounds = np.zeros(len(raw_counts) + 1, np.int64)
        np.cumsum(raw_counts, out=bounds[1:])
        terms_before = np.zeros(len(raws) + 1, np.int64)
        terms_before[1:] = ends
        return term_ids, np.diff(terms_before[bounds])


class _Growing:
    """An integer array appended to in place (capacity doubling)."""

    def __init__(self, dtype: type[np.integer[Any]]) -> None:
        self._data: npt.NDArray[np.integer[Any]] = np.empty(1024, dtype)
        self.size = 0

    def extend(self, values: npt.NDArray[np.integer[Any]]) -> None:
        end = self.size + values.size
        if end > self._data.size:
            grown = np.empty(max(end, 2 * self._data.size), self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : end] = values
        self.size = end

    def view(self) -> npt.NDArray[np.integer[Any]]:
        return self._data[: self.size]
