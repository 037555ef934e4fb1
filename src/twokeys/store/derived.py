"""Derived files of a local generation: structures rebuilt from its committed arrays.

Retrieval models that are costly to fit from the committed arrays (LSI's SVD, the HNSW
graph) keep their result next to them, as ``derived.<name>.<key>.npy`` (or another
suffix, for a file a library writes in its own format) in the generation folder, so
they live and die with that generation. Each file is written to a temporary name and
renamed into place: a reader sees a whole file or none.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from twokeys.store.writes import fsync_path


class Generation(Protocol):
    """What the derived files need of an index: its generation folder."""

    @property
    def gen_dir(self) -> Path: ...


def _check_derived_names(*values: str) -> None:
    for value in values:
        if not value or not all(c.isascii() and (c.isalnum() or c in "_+-") for c in value):
            raise ValueError(f"derived array name {value!r}: use ASCII letters, digits, _ + -")


def _derived_file(index: Generation, name: str, key: str, suffix: str = "npy") -> Path:
    _check_derived_names(name, key, suffix)
    return index.gen_dir / f"derived.{name}.{key}.{suffix}"


def _write_atomically(final: Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)``, fsync, rename to ``final``: a reader sees a whole file or none."""
    tmp = final.with_name(f".tmp-{os.getpid()}-{time.time_ns()}-{final.name}")
    try:
        write(tmp)
        fsync_path(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def save_derived_file(
    index: Generation, name: str, key: str, suffix: str, write: Callable[[Path], None]
) -> None:
    """Let ``write(path)`` create a file in a library's own format under ``name``/``key``.

    Written to a temporary path and renamed into place, like :func:`save_derived`; write
    the arrays that say the file is valid (a header) after it. Raises :class:`OSError` if
    the folder is not writable.
    """
    _write_atomically(_derived_file(index, name, key, suffix), write)


def derived_file(index: Generation, name: str, key: str, suffix: str) -> Path | None:
    """The path of a file saved by :func:`save_derived_file`, or None if there is none."""
    path = _derived_file(index, name, key, suffix)
    return path if path.is_file() else None


def save_derived(index: Generation, name: str, arrays: dict[str, npt.NDArray[Any]]) -> None:
    """Store ``arrays`` under ``name`` in the index's generation folder.

    Each array is written to a temporary file and renamed into place, so a reader sees
    a whole file or none. Raises :class:`OSError` if the folder is not writable.
    """
    for key, array in arrays.items():

        def write(path: Path, array: npt.NDArray[Any] = array) -> None:
            with open(path, "wb") as fh:
                np.save(fh, np.ascontiguousarray(array), allow_pickle=False)

        _write_atomically(_derived_file(index, name, key), write)


def derived_names(index: Generation) -> set[str]:
    """The names under which the index's generation folder holds derived files."""
    return {p.name.split(".")[1] for p in index.gen_dir.glob("derived.*.*.*")}


def remove_derived(index: Generation, name: str) -> None:
    """Delete every file saved under ``name`` (missing files are fine)."""
    _check_derived_names(name)
    for path in index.gen_dir.glob(f"derived.{name}.*.*"):
        path.unlink(missing_ok=True)


def load_derived(
    index: Generation, name: str, keys: Sequence[str]
) -> dict[str, npt.NDArray[Any]] | None:
    """The arrays ``keys`` stored under ``name``, memory-mapped; None unless all are readable."""
    out: dict[str, npt.NDArray[Any]] = {}
    for key in keys:
        file = _derived_file(index, name, key)
        try:
            out[key] = np.load(file, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            return None
    return out
