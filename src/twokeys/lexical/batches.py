"""The term matrix of a build's chunk texts, analysed on every core when it pays.

Analysis is per chunk, so the texts are cut into consecutive slices of about
:data:`BATCH_CHARS` characters, each turned into term ids (:class:`TermCoder`, which
analyses each distinct raw token once) and counted into the matrix in order
(:func:`~twokeys.lexical.bm25.build_term_matrix_from_ids`): the matrix is the same
whichever process analysed which slice.

Worker processes are used when the texts are long enough to repay starting them and
sending their batches back (:data:`PARALLEL_MIN_CHARS`), more than one core is ours,
and this process runs no other thread: workers are forked (they start in milliseconds
and never re-import the caller's ``__main__``), and forking a process with other
threads running can deadlock, so a server that builds from a worker thread analyses in
that thread. Each worker keeps its own :class:`TermCoder` and sends each slice back as a
:data:`~twokeys.lexical.bm25.TermBatch` (its distinct terms and local ids).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

from twokeys.analysis import Analyzer, AnalyzerSpec
from twokeys.grouping import groups_by_size
from twokeys.lexical.bm25 import (
    IdBatch,
    TermBatch,
    TermMatrix,
    build_term_matrix_from_batches,
    build_term_matrix_from_ids,
)
from twokeys.lexical.coding import TermCoder

#: characters of chunk text analysed as one batch (one task for a worker)
BATCH_CHARS = 1 << 18
#: below this many characters of text, analysis stays in this process
PARALLEL_MIN_CHARS = 4_000_000
_PR_SET_PDEATHSIG = 1  # prctl(2)


def analysed_matrix(
    texts: Iterable[str],
    spec: AnalyzerSpec,
    progress: Callable[[int], None] | None = None,
    *,
    total_chars: int | None = None,
    workers: int | None = None,
) -> TermMatrix:
    """The term matrix of ``texts`` (in order) analysed with ``spec``; ``progress(n)``
    after each batch of n texts.

    ``texts`` is read as the batches are needed (a generator keeps only a few batches of
    text alive); ``total_chars`` (about the length of all of them; by default summed
    from a sequence) decides whether workers pay. ``workers``: processes to use (1: this
    one); by default :func:`default_workers`.
    """
    if workers is None:
        if total_chars is None:
            total_chars = sum(map(len, texts)) if isinstance(texts, Sequence) else 0
        workers = default_workers(total_chars)
    groups = groups_by_size(texts, len, BATCH_CHARS)
    if workers <= 1:
        coder = TermCoder(Analyzer(spec))

        def encoded() -> Iterator[IdBatch]:
            for group in groups:
                yield coder.encode(group)
                if progress is not None:
                    progress(len(group))

        return build_term_matrix_from_ids(encoded(), coder.terms)
    return build_term_matrix_from_batches(_in_workers(groups, spec, workers, progress))


def _in_workers(
    groups: Iterable[list[str]],
    spec: AnalyzerSpec,
    workers: int,
    progress: Callable[[int], None] | None,
) -> Iterator[TermBatch]:
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), spec)
    ) as pool:
        # at most two batches a worker in flight: the texts are never all held at once
        in_flight: deque[tuple[int, Future[TermBatch]]] = deque()
        for group in groups:
            in_flight.append((len(group), pool.submit(_analyse, group)))
            if len(in_flight) >= 2 * workers:
                yield _done(in_flight.popleft(), progress)
        while in_flight:
            yield _done(in_flight.popleft(), progress)


def _done(item: tuple[int, Future[TermBatch]], progress: Callable[[int], None] | None) -> TermBatch:
    n, future = item
    batch = future.result()
    if progress is not None:
        progress(n)
    return batch


def default_workers(total_chars: int) -> int:
    """Processes worth using for ``total_chars`` of text (see the module docstring)."""
    if total_chars < PARALLEL_MIN_CHARS or threading.active_count() > 1:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1


#: a worker process's coder (set by _start_worker)
_coder: TermCoder | None = None


def _start_worker(parent: int, spec: AnalyzerSpec) -> None:
    """In a worker: Ctrl-C is the parent's to handle (it stops the build and the pool; a
    worker that took it too would print a traceback of its own), and the worker dies with
    its parent (a killed build's workers would otherwise wait on their queue forever)."""
    global _coder
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # Linux
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)
    _coder = TermCoder(Analyzer(spec))


def _analyse(texts: Sequence[str]) -> TermBatch:
    """In a worker: the slice's terms as a :data:`TermBatch` (its coder's ids made local)."""
    assert _coder is not None
    ids, per_chunk = _coder.encode(texts)
    distinct, local = np.unique(ids, return_inverse=True)
    terms = _coder.terms
    return [terms[t] for t in distinct.tolist()], local.astype(np.int32), per_chunk
