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
def test_kernel_refuses_inconsistent_arrays() -> None:
    kernel = lexical_index._kernel
    assert kernel is not None
    indptr = np.array([0, 2, 3], np.int64)
    indices = np.array([0, 5, 1], np.int32)  # row 5 of 3
    weights = np.ones(3, np.float32)
    scores, touched = np.zeros(3, np.float32), np.empty(4, np.int32)
    with pytest.raises(ValueError, match="row out of range"):
        kernel.top_k(indptr, indices, weights, [0], [1.0], 2, scores, touched)
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
