"""The embedded lexical index: BM25 over memory-mapped term-major arrays."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import chain, pairwise
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from twokeys.lexical import bm25
from twokeys.lexical.base import LexicalIndex
from twokeys.lexical.coding import QueryCoder
from twokeys.topk import top_k, top_k_allowed, top_k_entries
from twokeys.types import RowMask, ScoredChunk

if TYPE_CHECKING:  # imported when a batch is scored: one query's search needs no scipy
    import scipy.sparse  # type: ignore[import-untyped, unused-ignore]

    from twokeys.analysis import Analyzer

_kernel: ModuleType | None
try:  # the compiled top-k (``_kernel.c``); the numpy path gives the same results without it
    from twokeys.lexical import _kernel
except ImportError:  # pragma: no cover - where the extension could not be built
    _kernel = None

# A batch search multiplies a block of queries at a time; a block's postings (an upper
# bound of its sparse scores) stay under this, 32 MB of scores and chunk rows at most.
_BLOCK_POSTINGS = 1 << 22
_BLOCK_QUERIES = 32
# From this many chunks a batch scores its queries one by one on the worker threads
# instead: a sparse product over a million columns cost more than the one-query path
# (`benchmarks/NOTES.md`, batch queries: at 1M chunks, 300 queries, k = 100, the product
# on two threads ran at the one-query loop's speed, the one-query path on two threads
# 1.2-1.4x it; at 10k and 100k chunks the product was the faster of the two).
PER_QUERY_FROM = 500_000
# From this many postings a query's top k is pruned (the compiled kernel's MaxScore, same
# results): below, scoring every posting is quicker (SciFact's queries, about 5,000
# postings, took a quarter longer pruned: most rows stay candidates); at a million chunks
# (about 430,000 postings a query) 1,170 us pruned against 1,490 plain.
PRUNE_FROM_POSTINGS = 50_000


class ArrayLexicalIndex(LexicalIndex):
    """Exact BM25 top-k from precomputed weights (see :mod:`twokeys.lexical.bm25`)."""

    def __init__(
        self,
        vocabulary: Mapping[str, int],
        indptr: npt.NDArray[np.int64],
        indices: npt.NDArray[np.int32],
        weights: npt.NDArray[np.float32],
        n_docs: int,
    ) -> None:
        self._vocabulary = vocabulary
        self._indptr = indptr
        self._indices = indices
        self._weights = weights
        self._n_docs = n_docs
        self._matrix: scipy.sparse.csr_array | None = None
        self._ids_in_text_order: bool | None = None  # see _batch_kernel_applies
        self._coder: QueryCoder | None = None  # see search_query
        self._scratch = threading.local()  # the kernel's zeroed scores, one set per thread
        # each term's largest weight, filled in by the kernel as queries meet the term
        # (-1: not known yet), which lets it prune a query's top k (same results)
        # (made on the first search: opening an index for one query does not pay for it)
        self._max_weights: npt.NDArray[np.float32] | None = None
        # a query of this many postings or more is pruned (0: every query; None: none)
        self.prune_from: int | None = PRUNE_FROM_POSTINGS
        # the kernel reads these layouts (as written by build_term_matrix); anything else
        # takes the numpy path
        self.compiled = (
            _kernel is not None
            and indptr.dtype == np.int64
            and indices.dtype == np.int32
            and weights.dtype == np.float32
            and all(a.flags.c_contiguous for a in (indptr, indices, weights))
        )

    def _query_ids(self, terms: Sequence[str]) -> dict[int, float]:
        """{term id: count} of the known terms, in term order (the order scores are summed)."""
        vocabulary = self._vocabulary
        counts: dict[str, float] = {}
        for term in terms:
            if term in vocabulary:
                counts[term] = counts.get(term, 0.0) + 1.0
        return {vocabulary[t]: c for t, c in sorted(counts.items())}

    def _query_lists(self, terms: Sequence[str]) -> tuple[list[int], list[float]]:
        """:meth:`_query_ids` as its two lists, made faster for the usual query (each
        term once: no counting)."""
        vocabulary = self._vocabulary
        known = sorted([t for t in terms if t in vocabulary])
        ids = [vocabulary[t] for t in known]
        if len(set(ids)) == len(ids):
            return ids, _ONES[: len(ids)] if len(ids) <= len(_ONES) else [1.0] * len(ids)
        unique: list[int] = []
        counts: list[float] = []
        for t in ids:  # repeats are adjacent: sorted
            if unique and unique[-1] == t:
                counts[-1] += 1.0
            else:
                unique.append(t)
                counts.append(1.0)
        return unique, counts

    def search(
        self, terms: Sequence[str], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        if allowed is None and self.compiled and _kernel is not None:  # filtered: numpy path
            term_ids, qtfs = self._query_lists(terms)
            if not term_ids:
                return []
            scores, touched, cand = self._buffers()
            prune = self.prune_from
            pruning = () if prune is None else (self._term_maxima(), cand, prune)
            rows, values = _kernel.top_k(
                self._indptr,
                self._indices,
                self._weights,
                term_ids,
                qtfs,
                k,
                scores,
                touched,
                *pruning,
            )
            ranks = (
                _RANKS[: len(rows)] if len(rows) <= len(_RANKS) else list(range(1, len(rows) + 1))
            )
            return slotted_values(ScoredChunk, RUN_SLOTS, (rows, values, ranks))
        ids = self._query_ids(terms)
        if not ids:
            return []
        scores = bm25.score(ids, self._indptr, self._indices, self._weights, self._n_docs)
        if allowed is not None:
            return _run(*top_k_allowed(scores, k, allowed, only_positive=True))
        return _run(*top_k(scores, k, only_positive=True))

    def search_query(self, analyzer: Analyzer, query: str, k: int) -> list[ScoredChunk]:
        """:meth:`search` of ``analyzer``'s query terms of ``query``, the same run, in two
        compiled calls where term ids are numbered in term order: a
        :class:`~twokeys.lexical.coding.QueryCoder` makes the query's term ids straight
        from its text (no term strings, no dictionary lookups for a raw token met
        before), and the kernel's ``top_k_ids`` sorts them and counts repeats as
        :meth:`_query_lists` does before it scores."""
        if not (self.compiled and QueryCoder.available and self._batch_kernel_applies()):
            return self.search(analyzer.query_terms(query), k)
        assert _kernel is not None
        coder = self._coder
        if coder is None or coder.analyzer is not analyzer:
            coder = self._coder = QueryCoder(analyzer, self._vocabulary)
        ids = coder.ids(query)
        if not ids:
            return []
        scores, touched, cand = self._buffers()
        prune = self.prune_from
        pruning = () if prune is None else (self._term_maxima(), cand, prune)
        rows, values = _kernel.top_k_ids(
            self._indptr, self._indices, self._weights, ids, k, scores, touched, *pruning
        )
        ranks = _RANKS[: len(rows)] if len(rows) <= len(_RANKS) else list(range(1, len(rows) + 1))
        return slotted_values(ScoredChunk, RUN_SLOTS, (rows, values, ranks))

    def _term_maxima(self) -> npt.NDArray[np.float32]:
        """Each term's largest weight as the kernel has found it (-1: not yet). Threads
        that make it at once each fill their own until one is kept: the values agree."""
        maxima = self._max_weights
        if maxima is None:
            n_terms = len(self._indptr) - 1 if len(self._indptr) else 0
            maxima = self._max_weights = np.full(n_terms, -1.0, np.float32)
        return maxima

    def _buffers(
        self,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int32], npt.NDArray[np.int64]]:
        """This thread's scratch for the kernel: scores (all zero between calls), rows and
        candidates (row and score pairs)."""
        scratch = self._scratch
        if not hasattr(scratch, "scores"):
            scratch.scores = np.zeros(self._n_docs, np.float32)
            scratch.touched = np.empty(self._n_docs + 1, np.int32)
            scratch.cand = np.empty(self._n_docs + 1, np.int64)
        return scratch.scores, scratch.touched, scratch.cand

    def search_many(
        self, queries: Sequence[Sequence[str]], k: int, *, threads: int | None = None
    ) -> list[list[ScoredChunk]]:
        """:meth:`search` for many queries at once, on several threads.

        With the compiled kernel, the whole batch is one call of its ``top_k_many``: the
        query terms go in as one array of term ids, and ``threads`` threads of the
        kernel's own (each with its own scratch, the GIL released) take the queries one
        by one, sorting each query's ids and counting repeats as :meth:`search` does, so
        every sum is added in the same order and the results are identical; Python only
        looks the terms up and wraps the rows. That needs term ids numbered in term
        order (as :func:`~twokeys.lexical.bm25.build_term_matrix` numbers them); other
        vocabularies, and the numpy path from :data:`PER_QUERY_FROM` chunks up, run
        :meth:`search` on ``threads`` worker threads, each over its share of the queries
        (the kernel releases the GIL while it scores). Otherwise a block of queries becomes a
        sparse (queries x terms) matrix multiplied by the (terms x chunks) weight matrix;
        scipy adds the same float32 products in the same term order as
        :func:`twokeys.lexical.bm25.score`, so scores and rankings are identical to
        :meth:`search`. The products run on the worker threads (scipy releases the GIL in
        them) while this thread takes the top ``k`` of each finished block: Python work
        stays on one thread, so threads don't queue for the GIL, and it overlaps with the
        products.
        """
        if self.compiled and self._batch_kernel_applies():
            return self._search_batch(queries, k, min(len(queries), threads or _cores()))
        if self.compiled or self._n_docs >= PER_QUERY_FROM:
            workers = min(len(queries), threads or _cores())
            if workers <= 1:
                return [self.search(terms, k) for terms in queries]
            step = -(-len(queries) // (4 * workers))  # a few shares per thread: even finish
            shares = [queries[i : i + step] for i in range(0, len(queries), step)]
            with ThreadPoolExecutor(max_workers=workers) as pool:
                parts = pool.map(lambda share: [self.search(t, k) for t in share], shares)
                return [run for part in parts for run in part]
        matrices = [self._query_matrix(block) for block in self._blocks(queries)]
        weights = self._weight_matrix()
        workers = min(len(matrices), threads or _cores())
        if workers <= 1:
            return [run for m in matrices for run in _top_runs(m @ weights, k)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            products = pool.map(lambda m: m @ weights, matrices)
            return [run for product in products for run in _top_runs(product, k)]

    def _batch_kernel_applies(self) -> bool:
        """Whether term ids are numbered in term order (checked once): then sorting a
        query's ids sorts its terms, the order :meth:`search` adds their weights in."""
        if self._ids_in_text_order is None:
            terms = list(self._vocabulary)
            if list(self._vocabulary.values()) == list(range(len(terms))):  # as stored:
                self._ids_in_text_order = terms == sorted(terms)  # comparisons in C
            else:
                pairs = sorted(self._vocabulary.items(), key=lambda item: item[1])
                self._ids_in_text_order = all(a[0] < b[0] for a, b in pairwise(pairs))
        return self._ids_in_text_order

    def _search_batch(
        self, queries: Sequence[Sequence[str]], k: int, threads: int
    ) -> list[list[ScoredChunk]]:
        """:meth:`search_many` as one call of the compiled ``top_k_many``."""
        assert _kernel is not None
        get = self._vocabulary.get
        terms = np.fromiter((get(t, -1) for q in queries for t in q), np.int64)
        bounds = np.zeros(len(queries) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, queries), np.int64, len(queries)), out=bounds[1:])
        k = max(0, min(k, self._n_docs))
        rows = np.empty((len(queries), k), np.int32)
        scores = np.empty((len(queries), k), np.float32)
        counts = np.empty(len(queries), np.int64)
        _kernel.top_k_many(
            self._indptr,
            self._indices,
            self._weights,
            terms,
            bounds,
            k,
            max(threads, 1),
            self._n_docs,
            rows,
            scores,
            counts,
        )
        ranks = range(1, k + 1)
        return [
            list(map(ScoredChunk, r[:n], s[:n], ranks))
            for r, s, n in zip(rows.tolist(), scores.tolist(), counts.tolist(), strict=True)
        ]

    def _blocks(self, queries: Sequence[Sequence[str]]) -> list[list[dict[int, float]]]:
        """Query term ids in consecutive blocks, cut where a block would exceed its limits."""
        blocks: list[list[dict[int, float]]] = []
        block: list[dict[int, float]] = []
        postings = 0
        for terms in queries:
            query = self._query_ids(terms)
            size = sum(int(self._indptr[t + 1] - self._indptr[t]) for t in query)
            if block and (postings + size > _BLOCK_POSTINGS or len(block) == _BLOCK_QUERIES):
                blocks.append(block)
                block, postings = [], 0
            block.append(query)
            postings += size
        if block:
            blocks.append(block)
        return blocks

    def _query_matrix(self, ids: Sequence[Mapping[int, float]]) -> scipy.sparse.csr_array:
        """Queries x terms, each query's term counts as float32."""
        counts = np.fromiter(map(len, ids), np.int64, len(ids))
        indptr = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        terms = np.fromiter(chain.from_iterable(ids), np.int32, int(indptr[-1]))
        qtf = np.fromiter(chain.from_iterable(q.values() for q in ids), np.float32, terms.size)
        import scipy.sparse  # type: ignore[import-untyped, unused-ignore]

        return scipy.sparse.csr_array(
            (qtf, terms, indptr.astype(np.int32)), shape=(len(ids), len(self._vocabulary))
        )

    def _weight_matrix(self) -> scipy.sparse.csr_array:
        """The (terms x chunks) weights as a CSR matrix over the same arrays (no copy)."""
        if self._matrix is None:
            import scipy.sparse  # type: ignore[import-untyped, unused-ignore]

            index_dtype = np.int32 if self._indices.size < 2**31 else np.int64
            self._matrix = scipy.sparse.csr_array(
                (
                    self._weights,
                    self._indices.astype(index_dtype, copy=False),
                    self._indptr.astype(index_dtype, copy=False),
                ),
                shape=(len(self._vocabulary), self._n_docs),
                copy=False,
            )
        return self._matrix

    def explain(self, terms: Sequence[str], row: int) -> tuple[tuple[str, float], ...]:
        counts = Counter(t for t in terms if t in self._vocabulary)
        out: list[tuple[str, float]] = []
        for term, qtf in counts.items():
            w = bm25.term_weight(
                self._vocabulary[term], row, self._indptr, self._indices, self._weights
            )
            if w > 0:
                out.append((term, qtf * w))
        return tuple(sorted(out, key=_by_weight))

    def explain_many(
        self, terms: Sequence[str], rows: Sequence[int]
    ) -> list[tuple[tuple[str, float], ...]]:
        """:meth:`explain` of every row at once: one binary search per term over its
        postings for all the rows, not one per (term, row)."""
        counts = Counter(t for t in terms if t in self._vocabulary)
        wanted = np.asarray(rows, np.int64)
        found: list[list[tuple[str, float]]] = [[] for _ in range(len(wanted))]
        for term, qtf in counts.items():
            t = self._vocabulary[term]
            start, end = int(self._indptr[t]), int(self._indptr[t + 1])
            if start == end:
                continue
            postings = self._indices[start:end]
            at = np.minimum(np.searchsorted(postings, wanted), end - start - 1)
            held = np.flatnonzero(postings[at] == wanted)
            # the rows' weights read in one call (tolist(): the same float32 values)
            weights = self._weights[start + at[held]].tolist()
            for i, w in zip(held.tolist(), weights, strict=True):
                if w > 0:
                    found[i].append((term, qtf * w))
        # a row with one matched term (or none) is in order already
        return [tuple(f) if len(f) < 2 else tuple(sorted(f, key=_by_weight)) for f in found]

    def has_term(self, term: str) -> bool:
        return term in self._vocabulary

    def document_frequencies(self, terms: Sequence[str]) -> tuple[list[int], int]:
        indptr, vocabulary = self._indptr, self._vocabulary
        df = [
            int(indptr[t + 1] - indptr[t]) if t >= 0 else 0
            for t in (vocabulary.get(term, -1) for term in terms)
        ]
        return df, self._n_docs

    def idf(self, terms: Sequence[str]) -> list[float]:
        df = np.array(
            [
                int(self._indptr[t + 1] - self._indptr[t]) if t >= 0 else 0
                for t in (self._vocabulary.get(term, -1) for term in terms)
            ],
            np.int64,
        )
        return [float(x) for x in bm25.idf(df, self._n_docs)]


def _top_runs(scores: scipy.sparse.csr_array, k: int) -> list[list[ScoredChunk]]:
    """The run of each row of a sparse (queries x chunks) score block."""
    bounds = scores.indptr.tolist()
    return [
        _run(*top_k_entries(scores.indices[s:e], scores.data[s:e], k)) for s, e in pairwise(bounds)
    ]


def _run(rows: npt.NDArray[np.int64], values: npt.NDArray[np.float32]) -> list[ScoredChunk]:
    return [
        ScoredChunk(row=r, score=s, rank=i + 1)
        for i, (r, s) in enumerate(zip(rows.tolist(), values.tolist(), strict=True))
    ]


def _by_weight(term_weight: tuple[str, float]) -> tuple[float, str]:
    """The order of a row's matched terms: heaviest first, then by term."""
    return (-term_weight[1], term_weight[0])


#: the slots of a :class:`ScoredChunk`, for :func:`slotted_values`
RUN_SLOTS = ("row", "score", "rank")
_RANKS = list(range(1, 1025))  # 1, 2, ... for the usual runs
_ONES = [1.0] * 256  # the query weights of a query without repeated terms

T = TypeVar("T")


def slotted_values(cls: type[T], names: tuple[str, ...], columns: tuple[Any, ...]) -> list[T]:
    """Values of ``cls`` (a dataclass with slots) with the slots ``names`` set from
    ``columns``: each a list (one value per value made) or one value for all of them.

    What the frozen dataclass's ``__init__`` does, without running it: the compiled
    kernel makes a search's ten values at a fifth of the cost (the Python path, in
    ``object.__setattr__`` calls, where it is not built)."""
    if _kernel is not None:
        made: list[T] = _kernel.instances(cls, names, columns)
        return made
    count = next(len(c) for c in columns if isinstance(c, list))
    out = [object.__new__(cls) for _ in range(count)]
    for name, column in zip(names, columns, strict=True):
        values = column if isinstance(column, list) else [column] * count
        for value_of, value in zip(out, values, strict=True):
            object.__setattr__(value_of, name, value)
    return out


def _cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
