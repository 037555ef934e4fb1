"""Texts to term ids for a build: each distinct raw token analysed once.

A build's texts hold about twenty times as many raw tokens as distinct ones (SciFact:
1.2 million and 61 thousand). :class:`TermCoder` finds each text's raw tokens and gives
each distinct one an id (the compiled scan of ``_kernel.c``, or the analyzer's pattern),
analyses only the raw tokens it has not met before (:meth:`Analyzer.index_terms_of_raws`,
their plain words stemmed in one call), and turns the raw token ids into term ids with
array operations. The terms are :meth:`Analyzer.index_terms`' for every text, in order
(tests compare the two); no term string is made per occurrence.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.analysis import Analyzer, raw_tokens_of
from twokeys.lexical.bm25 import IdBatch, TermIds

_kernel: ModuleType | None
try:  # the compiled scan (``_kernel.c``); the pattern gives the same tokens without it
    from twokeys.lexical import _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None


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


class TermCoder:
    """Term ids of texts (:meth:`encode`), numbered in order of first appearance; the
    term of id ``i`` is ``terms[i]``. One per build: it keeps every distinct raw token."""

    def __init__(self, analyzer: Analyzer, *, compiled: bool = True) -> None:
        self.analyzer = analyzer
        self.compiled = compiled and _kernel is not None
        self._term_ids = TermIds()
        self.terms = self._term_ids.terms
        self.forget_raw_tokens()

    def forget_raw_tokens(self) -> None:
        """Drop the distinct raw tokens met so far (most of the coder's memory) once no
        more texts are to come; the terms and their ids stay (a raw token met again is
        analysed again, into the same ids)."""
        self._raw_ids: dict[str, int] = {}  # raw token -> its id
        # raw token id -> its term ids: raw_terms[raw_starts[r] : raw_starts[r] + raw_lengths[r]]
        self._raw_starts = _Growing(np.int64)
        self._raw_lengths = _Growing(np.int32)
        self._raw_terms = _Growing(np.int32)

    def encode(self, texts: Sequence[str]) -> IdBatch:
        """The term ids of ``texts`` (see :data:`~twokeys.lexical.bm25.IdBatch`)."""
        items = [self.analyzer.scan_form(text) for text in texts]
        new: list[str] = []
        if self.compiled and _kernel is not None:
            raw_bytes, counts_bytes = _kernel.raw_token_ids(items, self._raw_ids, new)
            raws = np.frombuffer(raw_bytes, np.int32)
            raw_counts = np.frombuffer(counts_bytes, np.int64)
        else:
            raws, raw_counts = _raw_token_ids(items, self._raw_ids, new)
        if new:
            self._learn(new)
        lengths = self._raw_lengths.view()[raws]
        ends = np.cumsum(lengths, dtype=np.int64)
        total = int(ends[-1]) if ends.size else 0
        # occurrence i's terms are raw_terms[starts[i] : starts[i] + lengths[i]]
        offsets = np.repeat(self._raw_starts.view()[raws] - (ends - lengths), lengths)
        ids = self._raw_terms.view()[offsets + np.arange(total)].astype(np.int32, copy=False)
        bounds = np.zeros(raw_counts.size + 1, np.int64)
        np.cumsum(raw_counts, out=bounds[1:])
        terms_before = np.zeros(raws.size + 1, np.int64)
        terms_before[1:] = ends
        return ids, np.diff(terms_before[bounds])

    def _learn(self, raws: list[str]) -> None:
        """Analyse raw tokens met for the first time (numbered in order, after the others)."""
        raw_terms = self.analyzer.index_terms_of_raws(raws)
        counts = np.fromiter(map(len, raw_terms), np.int64, len(raw_terms))
        flat = list(chain.from_iterable(raw_terms))
        ids = np.fromiter(map(self._term_ids.__getitem__, flat), np.int32, len(flat))
        self._raw_starts.extend(np.cumsum(counts) - counts + self._raw_terms.size)
        self._raw_lengths.extend(counts)
        self._raw_terms.extend(ids)


def _raw_token_ids(
    items: Sequence[str | list[str]], table: dict[str, int], new: list[str]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """``_kernel.raw_token_ids`` without the kernel: each raw token's id in ``table`` (a
    new token gets the next id and is appended to ``new``), and each item's count."""
    ids: list[int] = []
    counts: list[int] = []
    for item in items:
        raws = raw_tokens_of(item)
        for raw in raws:
            raw_id = table.get(raw)
            if raw_id is None:
                raw_id = table[raw] = len(table)
                new.append(raw)
            ids.append(raw_id)
        counts.append(len(raws))
    return np.asarray(ids, np.int32), np.asarray(counts, np.int64)
