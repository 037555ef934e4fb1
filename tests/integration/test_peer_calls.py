"""Guard: the benchmarks call bm25s as fast as bm25s' own README does.

``benchmarks/peer_calls.py`` holds the calls every benchmark times. Each is timed here
against bm25s' README lines, written out independently, on a small synthetic corpus;
more than 1.5x slower fails. A handicapped call (``retrieve(n_threads=1)``, which built
a thread pool for every query and was timed as "bm25s" until issue 11) shows the guard
can fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest
from benchmarks.peer_calls import Bm25s, numba_available, readme_search, slowdown

pytestmark = pytest.mark.slow

LIMIT = 1.5


def _corpus(n_docs: int = 3000, seed: int = 11) -> tuple[list[str], list[str]]:
    """Zipf-distributed pseudo-words: documents of 40-160 words, queries of 3-9."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ter", "zu", "pra", "nel", "vos", "qui", "dra", "sen", "ul"]
    words = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(4000)})
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    docs = [" ".join(rng.choices(words, weights, k=rng.randint(40, 160))) for _ in range(n_docs)]
    queries = [" ".join(rng.choices(words, weights, k=rng.randint(3, 9))) for _ in range(150)]
    return docs, queries


def _benchmark_call(docs: list[str], backend: str) -> Callable[[str, int], object]:
    return Bm25s(docs, backend=backend).search


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_benchmark_calls_bm25s_at_its_readme_speed(backend: str) -> None:
    if backend == "numba" and not numba_available():
        pytest.skip("numba is not installed (it is in benchmarks/requirements.txt only)")
    docs, queries = _corpus()
    ours, readme = _benchmark_call(docs, backend), readme_search(docs, backend=backend)
    for query in queries[:20]:  # the same answers
        rows, scores = ours(query, 10)
        ref_rows, ref_scores = readme(query, 10)
        np.testing.assert_array_equal(scores, ref_scores[0])
        assert set(rows[scores > 0].tolist()) == set(ref_rows[0][ref_scores[0] > 0].tolist())
    ratio = slowdown(ours, readme, queries)
    assert ratio <= LIMIT, f"benchmark's bm25s call is {ratio:.2f}x its README call"


def test_guard_catches_a_handicapped_call() -> None:
    import bm25s
    import Stemmer

    docs, queries = _corpus()
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(docs, stopwords="en", stemmer=stemmer, show_progress=False))

    def handicapped(query: str, k: int) -> object:
        tokens = bm25s.tokenize(query, stemmer=stemmer, show_progress=False)
        return retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)

    ratio = slowdown(handicapped, readme_search(docs), queries)
    assert ratio > LIMIT, f"n_threads=1 ran at {ratio:.2f}x the README call: guard too lax"
