"""A failed write to an index as one line naming the path and the cause.

Disk full (``ENOSPC``, SQLite's "database or disk is full"), a read-only file system, an
immutable folder: the build stops with an :class:`~twokeys.errors.IndexWriteError`, its
temporary folder is removed by the caller, and the previous generation is untouched.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from twokeys.errors import IndexWriteError


@contextlib.contextmanager
def writing(index_path: Path) -> Iterator[None]:
    """Turn a failed write into one line naming the path and the cause.

    Disk full (``ENOSPC``, SQLite's "database or disk is full"), a read-only file
    system, an immutable folder: the build stops, its temporary folder is removed by
    the caller, and the previous generation is untouched.
    """
    try:
        yield
    except OSError as exc:
        where = exc.filename if exc.filename is not None else index_path
        cause = _CAUSES.get(exc.errno or 0, exc.strerror or str(exc))
        raise IndexWriteError(
            f"cannot write the index {index_path}: {where}: {cause}; any previous index "
            "is unchanged"
        ) from exc
    except sqlite3.OperationalError as exc:
        full = "full" in str(exc)
        cause = _CAUSES[errno.ENOSPC] if full else f"database error ({exc})"
        raise IndexWriteError(
            f"cannot write the index {index_path}: its database: {cause}; any previous "
            "index is unchanged"
        ) from exc


_CAUSES = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted (an immutable or protected folder?)",
}

_Method = TypeVar("_Method", bound=Callable[..., Any])


def write_errors(method: _Method) -> _Method:
    """:func:`writing` around a method of an object with an ``index_path``."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with writing(self.index_path):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def fsync_path(path: Path) -> None:
    """Flush a file's or a folder's entries to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
