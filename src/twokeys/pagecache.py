"""Warming the OS page cache for a file that is memory-mapped.

A memory-mapped file is read page by page as it is touched. On the machines measured
(``benchmarks/NOTES.md``) a page fault on a file that is not cached reads 4 KB at a
time, about 0.1 ms each, with no useful readahead, so touching 150 MB through a fresh
map took 4 s, while ``read()`` of the same bytes streams at over 600 MB/s. Reading a
region once, sequentially, before mapping it (or while the map is first used) puts it
in the page cache, and the later faults cost microseconds. ``posix_fadvise`` and
``madvise`` with ``WILLNEED`` had no measurable effect there, so this reads.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

_CHUNK = 8 << 20  # bytes per read() call


def read_ahead(path: Path, start: int = 0, end: int | None = None) -> int:
    """Read bytes ``[start, end)`` of ``path`` (to its end by default) and drop them.

    Returns the number of bytes read. The GIL is released while the kernel copies,
    so other threads keep running.
    """
    buffer = memoryview(bytearray(_CHUNK))
    done = 0
    with open(path, "rb", buffering=0) as fh:
        fh.seek(start)
        remaining = -1 if end is None else max(0, end - start)
        while remaining != 0:
            want = _CHUNK if remaining < 0 else min(_CHUNK, remaining)
            n = fh.readinto(buffer[:want])
            if not n:
                break
            done += n
            if remaining > 0:
                remaining -= n
    return done


def read_ahead_in_background(
    path: Path, start: int = 0, end: int | None = None
) -> threading.Thread:
    """:func:`read_ahead` on a daemon thread; an error there (file gone) is ignored."""

    def run() -> None:
        # lowest CPU priority for this thread alone (Linux): on the VMs measured, filling
        # the page cache is system CPU time that would otherwise slow the queries
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        with contextlib.suppress(OSError):  # a hint only: the map reads on demand anyway
            read_ahead(path, start, end)

    thread = threading.Thread(target=run, name="twokeys-read-ahead", daemon=True)
    thread.start()
    return thread
