"""The compiled BM25 top-k (``twokeys.lexical._kernel``) against the numpy path."""

from __future__ import annotations

import random

import numpy as np
import pytest

from twokeys.lexical import index as lexical_index
from twokeys.lexical.bm25 import BM25Params, bm25_weights, build_term_matrix
from twokeys.lexical.index import ArrayLexicalIndex


def test_the_compiled_kernel_is_built() -> None:
    """`pip install -e .` (or `make venv`) compiles it; without it search is slower."""
    assert lexical_index._kernel is not None, (
        "twokeys.lexical._kernel is not built: run `pip install -e .` (needs a C compiler)"
    )


def _index(seed: int, n_docs: int, vocab: int, *, ties: bool) -> ArrayLexicalIndex:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    docs = [rng.choices(words, k=rng.randint(0, 12)) for _ in range(n_docs)]
    if ties:  # identical documents: equal scores, ranked by row
        docs += [list(docs[1])] * 5 + [list(docs[2])] * 3
    m = build_term_matrix(docs)
    weights = bm25_weights(m, BM25Params())
    vocabulary = {t: i for i, t in enumerate(m.vocabulary)}
    return ArrayLexicalIndex(vocabulary, m.indptr, m.indices, weights, m.n_docs)


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
@pytest.mark.parametrize(("seed", "n_docs", "vocab"), [(0, 50, 8), (1, 400, 60), (2, 3000, 500)])
def test_kernel_and_numpy_give_identical_runs(seed: int, n_docs: int, vocab: int) -> None:
    compiled = _index(seed, n_docs, vocab, ties=True)
    plain = _index(seed, n_docs, vocab, ties=True)
    plain.compiled = False
    rng = random.Random(seed + 100)
    words = [f"w{i}" for i in range(vocab + 5)]  # a few unknown terms too
    for _ in range(200):
        terms = rng.choices(words, k=rng.randint(1, 8))  # repeats: query weights above 1
        for k in (1, 3, 10, n_docs + 20):
            assert compiled.search(terms, k) == plain.search(terms, k)
        # the scratch scores are left zeroed for the next query
        assert not compiled._buffers()[0].any()


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_dense_scan_and_row_listing_give_the_numpy_runs() -> None:
    """The kernel reads every row back when a query's postings are many for the rows (at
    least one per DENSE_MAX_ROWS_PER_POSTING = 16 rows) and lists the rows it touches
    otherwise: both give the numpy path's runs, ties and repeated terms included."""
    compiled = _index(7, 3000, 400, ties=True)
    plain = _index(7, 3000, 400, ties=True)
    plain.compiled = False
    vocabulary, indptr = compiled._vocabulary, compiled._indptr
    rng = random.Random(8)
    words = [f"w{i}" for i in range(400)]
    paths = set()
    for size in (1, 2, 3, 5, 8, 12, 20, 40):
        for _ in range(25):
            terms = rng.choices(words, k=size)
            postings = sum(
                int(indptr[vocabulary[t] + 1] - indptr[vocabulary[t]])
                for t in terms
                if t in vocabulary
            )
            paths.add(compiled._n_docs <= 16 * postings)
            for k in (1, 10, 3100):
                assert compiled.search(terms, k) == plain.search(terms, k)
            assert not compiled._buffers()[0].any()
    assert paths == {True, False}  # both ways were taken


def _zipf_index(seed: int, n_docs: int, vocab: int) -> ArrayLexicalIndex:
    """Documents of Zipf-distributed words (a few common, many rare), as text is: the
    common words' postings are what pruning skips."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, vocab + 1)
    p = 1.0 / ranks
    p /= p.sum()
    docs = [
        [f"w{i}" for i in rng.choice(vocab, size=int(rng.integers(1, 30)), p=p)]
        for _ in range(n_docs)
    ]
    docs += [list(docs[1])] * 4 + [list(docs[2])] * 3  # ties, ranked by row
    m = build_term_matrix(docs)
    weights = bm25_weights(m, BM25Params())
    vocabulary = {t: i for i, t in enumerate(m.vocabulary)}
    return ArrayLexicalIndex(vocabulary, m.indptr, m.indices, weights, m.n_docs)


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
@pytest.mark.parametrize("seed", [3, 4])
def test_pruned_top_k_is_the_exact_top_k(seed: int) -> None:
    """MaxScore pruning (every query pruned here, however few its postings) gives the
    numpy path's runs to the last bit, scores and ties included, and leaves the scratch
    scores zeroed."""
    pruned = _zipf_index(seed, 4000, 3000)
    pruned.prune_from = 0
    plain = _zipf_index(seed, 4000, 3000)
    plain.compiled = False
    rng = np.random.default_rng(seed + 100)
    common = [f"w{i}" for i in range(12)]
    for _ in range(150):
        terms = [f"w{i}" for i in rng.integers(0, 3005, size=int(rng.integers(2, 9)))]
        terms += list(rng.choice(common, size=int(rng.integers(0, 4))))  # long postings
        for k in (1, 3, 10, 64, 65):
            assert pruned.search(terms, k) == plain.search(terms, k)
        assert not pruned._buffers()[0].any()
    maxima = pruned._term_maxima()
    known = maxima >= 0  # the largest weights met are each term's largest
    indptr, weights = pruned._indptr, pruned._weights
    for t in np.flatnonzero(known)[:200].tolist():
        assert maxima[t] == weights[indptr[t] : indptr[t + 1]].max()


def _row_out_of_range() -> tuple[np.ndarray, ...]:
    """Postings naming row 5 of 3 (indptr, indices, weights), and the score and touched
    buffers a query uses."""
    indptr = np.array([0, 2, 3], np.int64)
    indices = np.array([0, 5, 1], np.int32)
    weights = np.ones(3, np.float32)
    return indptr, indices, weights, np.zeros(3, np.float32), np.empty(4, np.int32)


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_kernel_refuses_inconsistent_arrays() -> None:
    kernel = lexical_index._kernel
    assert kernel is not None
    indptr, indices, weights, scores, touched = _row_out_of_range()
    with pytest.raises(ValueError, match="row out of range"):
        kernel.top_k(indptr, indices, weights, [0], [1.0], 2, scores, touched)
    assert not scores.any()  # left zeroed for the next query
    with pytest.raises(ValueError, match="term id 7"):
        kernel.top_k(indptr, indices, weights, [7], [1.0], 2, scores, touched)
    with pytest.raises(TypeError, match="weights"):
        kernel.top_k(indptr, indices, weights.astype(np.float64), [1], [1.0], 2, scores, touched)
    rows, values = kernel.top_k(indptr, indices, weights, [1], [2.0], 2, scores, touched)
    assert (rows, values) == ([1], [2.0])


def test_other_array_layouts_take_the_numpy_path() -> None:
    index = _index(3, 100, 20, ties=False)
    wide = ArrayLexicalIndex(
        index._vocabulary,
        index._indptr,
        index._indices.astype(np.int64),
        index._weights.astype(np.float64),
        index._n_docs,
    )
    assert not wide.compiled
    for terms in (["w1"], ["w2", "w3", "w2"], ["w19", "nope"]):
        assert [(h.row, h.rank) for h in wide.search(terms, 5)] == [
            (h.row, h.rank) for h in index.search(terms, 5)
        ]


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
@pytest.mark.parametrize(("seed", "n_docs", "vocab"), [(4, 60, 10), (5, 2000, 300)])
def test_batch_kernel_gives_one_query_at_a_time_runs(seed: int, n_docs: int, vocab: int) -> None:
    """``search_many`` is one ``top_k_many`` call (its own threads, ids sorted and
    counted in C): the same runs as ``search``, query by query, ties and repeats too."""
    index = _index(seed, n_docs, vocab, ties=True)
    plain = _index(seed, n_docs, vocab, ties=True)
    plain.compiled = False
    rng = random.Random(seed + 200)
    words = [f"w{i}" for i in range(vocab + 5)]  # a few unknown terms too
    queries = [rng.choices(words, k=rng.randint(0, 9)) for _ in range(300)]
    queries += [[], ["nope"], ["w1"] * 4 + ["w2", "w1"]]
    for k in (1, 10, n_docs + 20):
        one_by_one = [index.search(q, k) for q in queries]
        assert one_by_one == [plain.search(q, k) for q in queries]
        for threads in (1, 2, 7):
            assert index.search_many(queries, k, threads=threads) == one_by_one, (k, threads)
    assert index._ids_in_text_order is True  # the batch kernel ran


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_batch_kernel_needs_ids_in_term_order() -> None:
    """A vocabulary numbered otherwise would add a query's weights in another order:
    ``search_many`` then searches query by query (still the same runs)."""
    index = _index(6, 300, 40, ties=False)
    reversed_ids = {t: len(index._vocabulary) - 1 - i for t, i in index._vocabulary.items()}
    order = sorted(index._vocabulary, key=reversed_ids.__getitem__)
    # the same postings, rows of the term-major arrays reordered to the new ids
    starts = [int(index._indptr[index._vocabulary[t]]) for t in order]
    ends = [int(index._indptr[index._vocabulary[t] + 1]) for t in order]
    indptr = np.zeros(len(order) + 1, np.int64)
    np.cumsum([e - s for s, e in zip(starts, ends, strict=True)], out=indptr[1:])
    indices = np.concatenate([index._indices[s:e] for s, e in zip(starts, ends, strict=True)])
    weights = np.concatenate([index._weights[s:e] for s, e in zip(starts, ends, strict=True)])
    other = ArrayLexicalIndex(reversed_ids, indptr, indices, weights, index._n_docs)
    queries = [["w1", "w7", "w3"], ["w2", "w2", "w30"], ["w5"]]
    expected = [index.search(q, 5) for q in queries]
    assert other.search_many(queries, 5, threads=2) == expected
    assert other._ids_in_text_order is False


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_search_query_gives_the_run_of_the_query_terms() -> None:
    """``search_query`` (text to term ids in C, ids sorted and counted by ``top_k_ids``)
    ranks as ``search`` of the analyzer's query terms, on the numpy path too and for a
    vocabulary not numbered in term order (which takes ``search``)."""
    from twokeys.analysis import Analyzer

    analyzer = Analyzer()
    rng = random.Random(9)
    words = ["cell", "cells", "protein", "IL-6", "il6", "the", "of", "DNA", "x2", "zz"]
    docs = [" ".join(rng.choices(words, k=rng.randint(0, 12))) for _ in range(400)]
    docs += [docs[1]] * 4  # ties
    m = build_term_matrix([analyzer.index_terms(d) for d in docs])
    weights = bm25_weights(m, BM25Params())
    vocabulary = {t: i for i, t in enumerate(m.vocabulary)}
    index = ArrayLexicalIndex(vocabulary, m.indptr, m.indices, weights, m.n_docs)
    plain = ArrayLexicalIndex(vocabulary, m.indptr, m.indices, weights, m.n_docs)
    plain.compiled = False
    queries = [" ".join(rng.choices([*words, "unknown"], k=rng.randint(0, 8))) for _ in range(200)]
    queries += ["", "the of", "cells cells CELL", "IL-6 il-6 il6"]
    for query in queries:
        for k in (1, 10, 500):
            expected = index.search(analyzer.query_terms(query), k)
            assert index.search_query(analyzer, query, k) == expected
            assert plain.search_query(analyzer, query, k) == expected
    assert not index._buffers()[0].any()
    assert index._ids_in_text_order is True and index._coder is not None
    reversed_ids = {t: len(vocabulary) - 1 - i for t, i in vocabulary.items()}
    other = ArrayLexicalIndex(reversed_ids, m.indptr, m.indices, weights, m.n_docs)
    other.search_query(analyzer, "cells", 5)  # another order: no coder made
    assert other._ids_in_text_order is False and other._coder is None


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_top_k_ids_refuses_what_top_k_refuses() -> None:
    kernel = lexical_index._kernel
    assert kernel is not None
    indptr, indices, weights, scores, touched = _row_out_of_range()
    ids = np.array([0], np.int32)
    with pytest.raises(ValueError, match="row out of range"):
        kernel.top_k_ids(indptr, indices, weights, ids, 2, scores, touched)
    assert not scores.any()
    with pytest.raises(ValueError, match="term id 7"):
        kernel.top_k_ids(indptr, indices, weights, np.array([7], np.int32), 2, scores, touched)
    with pytest.raises(ValueError, match="int32"):
        kernel.top_k_ids(indptr, indices, weights, b"abc", 2, scores, touched)
    # an int64 or float array is refused, not read as twice as many int32 ids
    swapped = np.array([1], np.int32).astype(np.dtype(np.int32).newbyteorder())
    for wrong in (np.array([1], np.int64), np.array([1.0], np.float32), swapped):
        with pytest.raises(ValueError, match="4-byte integer buffer"):
            kernel.top_k_ids(indptr, indices, weights, wrong, 2, scores, touched)
    assert not scores.any()
    raw = np.array([1, 1], np.int32).tobytes()  # RawTable.encode's form: bytes
    assert kernel.top_k_ids(indptr, indices, weights, raw, 2, scores, touched) == ([1], [2.0])
    native = np.array([1, 1], np.dtype("=i4"))  # an explicit native order is fine
    assert kernel.top_k_ids(indptr, indices, weights, native, 2, scores, touched) == ([1], [2.0])
    # unknown (-1) skipped, repeats counted: term 1 twice is weight 2
    got = kernel.top_k_ids(
        indptr, indices, weights, np.array([1, -1, 1], np.int32), 2, scores, touched
    )
    assert got == ([1], [2.0])


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_batch_kernel_refuses_inconsistent_arrays() -> None:
    kernel = lexical_index._kernel
    assert kernel is not None
    indptr = np.array([0, 2, 3], np.int64)
    indices = np.array([0, 5, 1], np.int32)  # row 5 of 3
    weights = np.ones(3, np.float32)

    def call(terms: list[int], bounds: list[int], k: int = 2) -> tuple[object, ...]:
        n = len(bounds) - 1
        rows, scores = np.empty((n, k), np.int32), np.empty((n, k), np.float32)
        counts = np.empty(n, np.int64)
        ids, cuts = np.array(terms, np.int64), np.array(bounds, np.int64)
        kernel.top_k_many(indptr, indices, weights, ids, cuts, k, 2, 3, rows, scores, counts)
        return rows, scores, counts

    with pytest.raises(ValueError, match="row out of range"):
        call([0], [0, 1])
    with pytest.raises(ValueError, match="term id 7"):
        call([7], [0, 1])
    with pytest.raises(ValueError, match="bounds"):
        call([1], [0, 2])
    rows, scores, counts = call([1, 1, -1], [0, 3, 3])
    assert counts.tolist() == [1, 0]  # term 1 twice: weight 2; the second query is empty
    assert rows[0, :1].tolist() == [1] and scores[0, :1].tolist() == [2.0]  # type: ignore[index]


def test_slotted_values_with_and_without_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The values the kernel makes without __init__ equal the constructed ones, on both
    paths; a non-slot name or columns of two lengths are refused."""
    from twokeys.types import ScoredChunk

    columns = ([4, 2, 9], [1.5, 1.25, 0.5], [1, 2, 3])
    expected = [ScoredChunk(4, 1.5, 1), ScoredChunk(2, 1.25, 2), ScoredChunk(9, 0.5, 3)]
    names = ("row", "score", "rank")
    if lexical_index._kernel is not None:
        made = lexical_index.slotted_values(ScoredChunk, names, columns)
        assert made == expected and hash(made[0]) == hash(expected[0])
        same_rank = lexical_index.slotted_values(ScoredChunk, names, ([1, 2], [0.5, 0.5], 7))
        assert [s.rank for s in same_rank] == [7, 7]
        with pytest.raises(TypeError, match="not a slot"):
            lexical_index._kernel.instances(ScoredChunk, ("nope",), ([1],))
        with pytest.raises(ValueError, match="differ in length"):
            lexical_index._kernel.instances(ScoredChunk, ("row", "score"), ([1], [1.0, 2.0]))
    monkeypatch.setattr(lexical_index, "_kernel", None)
    assert lexical_index.slotted_values(ScoredChunk, names, columns) == expected


@pytest.mark.skipif(lexical_index._kernel is None, reason="kernel not built (see above)")
def test_pruned_searches_on_threads_give_the_serial_runs() -> None:
    """Threads fill the shared term maxima while they prune (each its own scratch):
    every run is the serial one."""
    from concurrent.futures import ThreadPoolExecutor

    serial = _zipf_index(5, 3000, 2000)
    serial.prune_from = None
    threaded = _zipf_index(5, 3000, 2000)
    threaded.prune_from = 0
    rng = np.random.default_rng(7)
    queries = [
        [f"w{i}" for i in rng.integers(0, 40, size=int(rng.integers(2, 7)))] for _ in range(400)
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda q: threaded.search(q, 10), queries))
    assert runs == [serial.search(q, 10) for q in queries]
