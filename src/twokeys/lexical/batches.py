"""Analyse the chunk texts of a build into term batches, on every core when it pays.

Analysis is per chunk, so the texts are cut into consecutive slices and each slice is
analysed on its own into a compact :data:`~twokeys.lexical.bm25.TermBatch` (its distinct
terms and an int32 index per term occurrence), which
:func:`~twokeys.lexical.bm25.build_term_matrix_from_batches` assembles in order: the
matrix is the same whichever process analysed which slice.

Worker processes are used when the texts are long enough to repay starting them (about
a second of analysis, :data:`PARALLEL_MIN_CHARS`), more than one core is ours, and this
process runs no other thread: workers are forked (they start in milliseconds, with the
analyzer's term caches as they are here, and never re-import the caller's ``__main__``),
and forking a process with other threads running can deadlock, so a server that builds
from a worker thread analyses in that thread.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat

from twokeys.analysis import AnalyzerSpec, analyzer_for
from twokeys.lexical.bm25 import TermBatch, term_batch

#: characters of chunk text analysed as one batch (one task for a worker)
BATCH_CHARS = 1 << 18
#: below this many characters of text, analysis stays in this process
PARALLEL_MIN_CHARS = 4_000_000


def analysed_batches(
    texts: Sequence[str],
    spec: AnalyzerSpec,
    progress: Callable[[int], None] | None = None,
    *,
    workers: int | None = None,
) -> Iterator[TermBatch]:
    """The term batches of ``texts`` in order; ``progress(n)`` after each batch of n texts.

    ``workers``: processes to use (1: this one); by default :func:`default_workers`.
    """
    bounds = _batch_bounds(texts)
    if workers is None:
        workers = default_workers(sum(map(len, texts)))
    workers = min(workers, len(bounds))
    slices = (texts[a:b] for a, b in bounds)
    if workers <= 1:
        results: Iterator[TermBatch] = map(_analyse, repeat(spec), slices)
        yield from _reported(bounds, results, progress)
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_ignore_interrupt) as pool:
        yield from _reported(bounds, pool.map(_analyse, repeat(spec), slices), progress)


def default_workers(total_chars: int) -> int:
    """Processes worth using for ``total_chars`` of text (see the module docstring)."""
    if total_chars < PARALLEL_MIN_CHARS or threading.active_count() > 1:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


def _ignore_interrupt() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it stops the build and the pool);
    a worker that took it too would print a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _analyse(spec: AnalyzerSpec, texts: Sequence[str]) -> TermBatch:
    return term_batch(map(analyzer_for(spec).index_terms, texts))


def _batch_bounds(texts: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of consecutive slices of about :data:`BATCH_CHARS` characters."""
    bounds: list[tuple[int, int]] = []
    start = size = 0
    for i, text in enumerate(texts):
        size += len(text)
        if size >= BATCH_CHARS:
            bounds.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


def _reported(
    bounds: Sequence[tuple[int, int]],
    batches: Iterator[TermBatch],
    progress: Callable[[int], None] | None,
) -> Iterator[TermBatch]:
    for (a, b), batch in zip(bounds, batches, strict=True):
        yield batch
        if progress is not None:
            progress(b - a)
