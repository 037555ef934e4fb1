"""Derived structures of an index, built by a writer: ``twokeys index`` and ``twokeys optimize``.

A derived structure is computed from a generation's committed arrays and saved beside
them, in the same generation folder, so it lives and dies with that generation:

* ``hnsw``: the HNSW graph over the vectors (:func:`twokeys.store.vectors.build_graph`),
  built whenever the index's vector index is HNSW (``--vector-index``, or ``auto`` above
  its threshold);
* ``lsi``: the LSI factors of the ``lsi`` retriever
  (:func:`twokeys.retrievers.classic.save_lsi_factors`), built only when asked for.

Readers never build or write them (an index may sit on a read-only medium, or be read
by many processes): without a graph dense search is exact, without saved factors LSI
fits them in memory, each with one warning that names the command to run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from twokeys.errors import ConfigError, TwokeysError

if TYPE_CHECKING:  # DERIVED is read by the command line's options: importing it is cheap
    from twokeys.store.local import LocalIndex

#: the derived structures, in the order they are built
DERIVED: tuple[str, ...] = ("hnsw", "lsi")

ProgressFactory = Callable[[str, int | None], Callable[[int], None]]


def check_derived(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` in build order, without repeats; a ConfigError for an unknown one."""
    unknown = [n for n in names if n not in DERIVED]
    if unknown:
        raise ConfigError(f"derive: {unknown[0]!r} is not one of {', '.join(DERIVED)}")
    return tuple(n for n in DERIVED if n in names)


def build_derived(
    index: LocalIndex, names: Sequence[str], progress: ProgressFactory | None = None
) -> tuple[str, ...]:
    """Build the structures ``names`` that ``index`` lacks; the names actually built.

    ``hnsw`` is built only if the index searches its vectors with a graph. The caller
    holds the index's write lock.
    """
    # imported here: LSI needs scipy, the graph its ANN library; an index build or a
    # search that names no derived structure loads neither
    from twokeys.retrievers.classic import lsi_params, save_lsi_factors
    from twokeys.store.vectors import build_graph

    built = []
    for name in check_derived(names):
        try:
            if name == "hnsw":
                n = int(index.manifest.counts.get("chunks", 0))
                advance = progress("Vector index (HNSW)", n) if progress else None
                done = build_graph(index, advance)
            else:
                done = save_lsi_factors(index, lsi_params())
        except OSError as exc:
            raise TwokeysError(f"{index.path}: cannot save the {name} structure ({exc})") from exc
        if done:
            built.append(name)
    return tuple(built)


def optimize(
    index_path: Path,
    names: Sequence[str] = ("hnsw",),
    *,
    progress: ProgressFactory | None = None,
) -> tuple[str, ...]:
    """Build the derived structures ``names`` missing from the index at ``index_path``."""
    from twokeys.store.local import LocalIndex, write_lock

    names = check_derived(names)
    LocalIndex(index_path).close()  # a clear error for a missing or damaged index first
    try:
        lock = write_lock(index_path)
        with lock:
            index = LocalIndex(index_path)
            try:
                return build_derived(index, names, progress)
            finally:
                index.close()
    except PermissionError as exc:
        raise TwokeysError(f"{index_path}: cannot write to the index ({exc})") from exc
