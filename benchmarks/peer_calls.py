"""How the benchmarks call bm25s: as its README does, with its defaults.

One place for the calls, so every benchmark (``bm25_peers``, ``scale``) times the same
thing and ``tests/integration/test_peer_calls.py`` can check that it is as fast as the
README's own lines (a handicapped call, such as ``retrieve(n_threads=1)``, which builds a
thread pool on every call and was 5-20x slower, must not slip in again).

bm25s 0.3.16's README, "Quickstart"::

    corpus_tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer)
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens)
    query_tokens = bm25s.tokenize(query, stemmer=stemmer)
    results, scores = retriever.retrieve(query_tokens, k=2)

Departures, each said where it is made: ``show_progress=False`` (the default draws a
progress bar on stderr on every call: a user answering queries one at a time turns it
off, and it is output, not search); ``k1``/``b`` are passed only where a quality figure
is compared at twokeys' settings (they do not change the speed: scores are computed at
index time). The numba backend is bm25s' documented faster mode (README: "speedup via
numba compilation"; ``BM25(backend="numba")``, which ``backend="auto"`` picks when numba
is installed): a row of its own, never a replacement for the default.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

BACKENDS = ("numpy", "numba")


class Bm25s:
    """A bm25s index over ``texts``, queried one query or one batch at a time."""

    def __init__(
        self, texts: Sequence[str], *, backend: str = "numpy", params: dict[str, Any] | None = None
    ) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        corpus_tokens = bm25s.tokenize(
            list(texts), stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        # backend "numpy" is BM25()'s default (with method "lucene", k1 1.5, b 0.75)
        self.retriever = bm25s.BM25(backend=backend, **(params or {}))
        self.retriever.index(corpus_tokens, show_progress=False)

    def search(self, query: str, k: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """Rows and scores of the top ``k`` for one query: the README's two lines."""
        query_tokens = self._bm25s.tokenize(query, stemmer=self.stemmer, show_progress=False)
        results, scores = self.retriever.retrieve(query_tokens, k=k, show_progress=False)
        return results[0], scores[0]

    def search_many(
        self, queries: Sequence[str], k: int, *, n_threads: int = 0
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """All queries in one ``retrieve`` call; ``n_threads`` as documented (0: the
        default, sequential; -1: every core)."""
        query_tokens = self._bm25s.tokenize(
            list(queries), stemmer=self.stemmer, show_progress=False
        )
        results, scores = self.retriever.retrieve(
            query_tokens, k=k, show_progress=False, n_threads=n_threads
        )
        return np.asarray(results), np.asarray(scores)


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


# -- the guard: the benchmark's call against the README's own lines ---------------------


def readme_search(texts: Sequence[str], *, backend: str = "numpy") -> Any:
    """bm25s' README lines, written out independently of :class:`Bm25s`: the reference
    a benchmark's call is timed against (progress bars off, see the module docstring)."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus_tokens = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25() if backend == "numpy" else bm25s.BM25(backend=backend)
    retriever.index(corpus_tokens, show_progress=False)

    def search(query: str, k: int) -> Any:
        query_tokens = bm25s.tokenize(query, stemmer=stemmer, show_progress=False)
        return retriever.retrieve(query_tokens, k=k, show_progress=False)

    return search


def slowdown(
    candidate: Callable[[str, int], object],
    reference: Callable[[str, int], object],
    queries: Sequence[str],
    *,
    k: int = 10,
    rounds: int = 9,
) -> float:
    """How many times slower ``candidate`` answers ``queries`` than ``reference``.

    Robust to a noisy machine: each round times both over all queries back to back (in
    alternating order), and the median of the rounds' ratios is returned, so a burst of
    load elsewhere slows one round's pair, not the verdict.
    """
    for query in queries[:5]:  # warm up (numba compiles on first use)
        candidate(query, k)
        reference(query, k)
    ratios = []
    for i in range(rounds):
        pair = {"candidate": candidate, "reference": reference}
        seconds = {}
        for name in sorted(pair, reverse=i % 2 == 1):
            start = time.perf_counter()
            for query in queries:
                pair[name](query, k)
            seconds[name] = time.perf_counter() - start
        ratios.append(seconds["candidate"] / seconds["reference"])
    return statistics.median(ratios)
