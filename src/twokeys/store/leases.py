"""Generation leases: a generation folder stays on disk while a reader holds it.

A reader holds its generation folder open with a shared ``flock`` on the folder itself
(no lease file is written, so a read-only index can be read). Whoever removes a
generation that the manifest no longer names (the next build, a reader closing its
superseded generation, ``twokeys check --repair``) first takes the exclusive lock
without waiting: while any reader holds a lease the lock is refused and the folder
stays. The kernel drops a dead process's locks, so a killed reader leaves no lease
behind and needs no grace period.

Removal renames the folder aside (``.del-<name>``) under the exclusive lock before
deleting its files, so a reader that was waiting for its shared lock finds the name
gone and reopens the current generation instead of a half-deleted one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from pathlib import Path

TRASH_PREFIX = ".del-"


class GenerationGone(Exception):
    """The generation folder disappeared before a lease could be taken on it."""


class Lease:
    """A shared lock on one generation folder; :meth:`release` (or closing) ends it."""

    def __init__(self, folder: Path, fd: int) -> None:
        self.folder = folder
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops its lock
            self._fd = None

    def __del__(self) -> None:  # a reader that is never closed still ends its lease
        self.release()

    @property
    def held(self) -> bool:
        return self._fd is not None


def lease(folder: Path) -> Lease:
    """Take a shared lease on ``folder``; raises :class:`GenerationGone` if it is not there.

    Waits while a remover holds the folder's exclusive lock (it is renaming it away),
    then checks that the name still leads to the folder that was locked.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise GenerationGone(str(folder)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        if os.stat(folder).st_ino != os.fstat(fd).st_ino:
            raise GenerationGone(str(folder))
    except (FileNotFoundError, GenerationGone):
        os.close(fd)
        raise GenerationGone(str(folder)) from None
    except BaseException:
        os.close(fd)
        raise
    return Lease(folder, fd)


def remove_unleased(folder: Path) -> bool:
    """Delete ``folder`` unless a reader holds a lease on it; True if it is gone.

    Raises :class:`OSError` when the folder cannot be renamed (a read-only index).
    """
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a reader holds it
        trash = folder.with_name(f"{TRASH_PREFIX}{folder.name}")
        os.replace(folder, trash)
    finally:
        os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def remove_trash(index_path: Path) -> None:
    """Finish deleting folders a killed remover had renamed aside."""
    for entry in index_path.iterdir():
        if entry.name.startswith(TRASH_PREFIX) and entry.is_dir():
            with contextlib.suppress(OSError):
                shutil.rmtree(entry)
