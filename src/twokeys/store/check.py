"""Is a local index whole? Its files checked against its manifest, each problem named by file.

Two depths:

- **quick** (``twokeys info``): every file the manifest names is there with its
  recorded size; each array's header gives the shape and dtype the manifest's counts
  imply and the file holds all of its data; the vocabulary has one line per term; the
  database's row counts match; files small enough to have a sha256 in the manifest
  (up to 4 MB each) hash to it.
- **deep** (``twokeys check``): also SQLite's ``PRAGMA integrity_check``; every chunk's
  heading and document's metadata parse; chunk rows and document ranges agree; array
  values: row pointers rise from
  0 to the postings count, chunk rows lie in range and rise within each term, weights
  and lengths are finite and not negative, every vector is finite and unit length (or zero).

Arrays are read a block at a time through their memory map, so a deep check of a large
index needs little memory. Nothing here writes.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.errors import IndexFormatError
from twokeys.store.base import Manifest
from twokeys.store.hittable import parse_locator
from twokeys.store.local import (
    DATABASE,
    EMBEDDINGS,
    MANIFEST,
    VOCABULARY,
    expected_arrays,
    file_sha256,
    lease_current,
    read_manifest,
)

_BLOCK = 1 << 20  # array elements (or vectors) read at a time
_NORM_TOLERANCE = 1e-2  # float16 vectors are unit length to about 1e-3


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one file."""

    file: Path
    message: str
    rows_only: bool = False  # some vectors are bad, the rest of the file is sound

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_index` found; ``ok`` when nothing."""

    path: Path
    generation: str
    deep: bool
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def damaged(self, name: str) -> bool:
        """Whether a problem names the generation file ``name`` (or the manifest)."""
        return any(p.file.name in (name, MANIFEST) for p in self.problems)

    def manifest_damaged(self) -> bool:
        """Whether the manifest itself is missing or unreadable (nothing else can be read)."""
        return self.damaged(MANIFEST)

    def verdict(self) -> str:
        depth = "full check" if self.deep else "sizes and counts"
        if self.ok:
            return f"ok ({depth})"
        n = len(self.problems)
        return f"DAMAGED: {n} problem{'s' if n > 1 else ''} ({depth})"


def check_index(path: Path, *, deep: bool = True) -> CheckReport:
    """Check the index at ``path``; the generation is leased while it is read."""
    try:
        manifest = read_manifest(path)
    except IndexFormatError as exc:
        return CheckReport(path, "", deep, (Problem(path / MANIFEST, _strip(exc, path)),))
    try:
        manifest, held = lease_current(path)  # again: a build may have committed since
    except IndexFormatError:
        gen_dir = path / manifest.generation
        problem = Problem(gen_dir, "generation folder named by the manifest is missing")
        return CheckReport(path, manifest.generation, deep, (problem,))
    gen_dir = path / manifest.generation
    try:
        problems = check_generation(manifest, gen_dir, deep=deep)
    finally:
        held.release()
    return CheckReport(path, manifest.generation, deep, tuple(problems))


def _strip(exc: Exception, path: Path) -> str:
    text = str(exc)
    prefix = f"{path / MANIFEST}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def check_generation(manifest: Manifest, gen_dir: Path, *, deep: bool) -> list[Problem]:
    """Every problem found in one generation folder, in file order.

    ``twokeys index`` runs the deep check on the previous generation before it reuses
    anything from it.
    """
    problems: list[Problem] = []
    arrays = expected_arrays(manifest)
    needed = [DATABASE, VOCABULARY, *arrays]
    present: set[str] = set()
    for name in needed:
        file = gen_dir / name
        if not file.is_file():
            problems.append(Problem(file, "missing"))
            continue
        present.add(name)
        size = file.stat().st_size
        recorded = manifest.files.get(name)
        if recorded is None:
            problems.append(Problem(file, "not recorded in the manifest"))
        elif size != recorded:
            problems.append(
                Problem(file, f"{size:,} bytes, the manifest recorded {recorded:,} (truncated?)")
            )
    for name in sorted(manifest.files):
        if name not in needed and not (gen_dir / name).is_file():
            problems.append(Problem(gen_dir / name, "recorded in the manifest but missing"))
    for name, (shape, dtype) in arrays.items():
        if name in present:
            problems.extend(_check_array(gen_dir / name, shape, dtype, manifest, deep))
    if VOCABULARY in present:
        problems.extend(_check_vocabulary(gen_dir / VOCABULARY, manifest, deep))
    if DATABASE in present:
        problems.extend(_check_database(gen_dir / DATABASE, manifest, deep))
    for name, digest in sorted(manifest.sha256.items()):  # small files: cheap enough for quick
        file = gen_dir / name
        if file.is_file() and file_sha256(file) != digest:
            problems.append(Problem(file, "content differs from the sha256 in the manifest"))
    return sorted(problems, key=lambda p: p.file.name)


# -- arrays ------------------------------------------------------------------------------


def _check_array(
    file: Path, shape: tuple[int, ...], dtype: str, manifest: Manifest, deep: bool
) -> list[Problem]:
    try:
        array = np.load(file, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        return [Problem(file, f"unreadable array ({exc})")]
    if (array.shape, array.dtype.name) != (shape, dtype):
        return [
            Problem(
                file,
                f"holds {array.dtype.name} {array.shape}, the manifest's counts say "
                f"{dtype} {shape}",
            )
        ]
    if not deep:
        return []
    view: npt.NDArray[Any] = array.view(np.ndarray)
    chunks = int(manifest.counts.get("chunks", 0))
    name = file.name
    if name == "lexical.indptr.npy":
        message = _check_indptr(view, int(manifest.counts.get("postings", 0)))
    elif name == "lexical.indices.npy":
        indptr = np.load(file.with_name("lexical.indptr.npy"), mmap_mode="r")
        message = _check_indices(view, chunks, indptr)
    elif name == EMBEDDINGS:
        message = _check_vectors(view)
        return [Problem(file, message, rows_only=True)] if message else []
    else:  # tf, weights, lengths
        message = _check_values(view, positive=name == "lexical.tf.npy")
    return [Problem(file, message)] if message else []


def _blocks(array: npt.NDArray[Any]) -> Iterator[tuple[int, npt.NDArray[Any]]]:
    step = _BLOCK if array.ndim == 1 else max(1, _BLOCK // max(1, array.shape[1]))
    for start in range(0, len(array), step):
        yield start, np.asarray(array[start : start + step])


def _check_indptr(indptr: npt.NDArray[Any], postings: int) -> str:
    if len(indptr) == 0:
        return "empty"
    if int(indptr[0]) != 0 or int(indptr[-1]) != postings:
        return f"runs from {int(indptr[0])} to {int(indptr[-1])}, not from 0 to {postings}"
    previous = 0
    for start, block in _blocks(indptr):
        steps = np.diff(block, prepend=previous)
        if (steps < 0).any():
            return f"falls at term {start + int(np.argmax(steps < 0)) - 1}"
        previous = int(block[-1])
    return ""


def _check_indices(indices: npt.NDArray[Any], chunks: int, indptr: npt.NDArray[Any]) -> str:
    starts = np.asarray(indptr[1:-1], np.int64)  # a term's first posting may fall
    previous: int | None = None
    for start, block in _blocks(indices):
        low, high = int(block.min()), int(block.max())
        if low < 0 or high >= chunks:
            bad = start + int(np.argmax((block < 0) | (block >= chunks)))
            return f"posting {bad} names chunk row {int(indices[bad])}, outside 0..{chunks - 1}"
        values = block.astype(np.int64)
        steps = np.diff(values, prepend=values[0] - 1 if previous is None else previous)
        falls = np.flatnonzero(steps <= 0) + start
        if falls.size:
            at = np.searchsorted(starts, falls)
            inside = (at >= len(starts)) | (starts[np.minimum(at, len(starts) - 1)] != falls)
            if inside.any():
                return f"chunk rows not increasing within a term at posting {int(falls[inside][0])}"
        previous = int(values[-1])
    return ""


def _check_values(values: npt.NDArray[Any], *, positive: bool) -> str:
    for start, block in _blocks(values):
        finite = np.isfinite(block)
        if not finite.all():
            return f"non-finite value at element {start + int(np.argmax(~finite))}"
        bad = block <= 0 if positive else block < 0
        if bad.any():
            return f"{'non-positive' if positive else 'negative'} value at element " + str(
                start + int(np.argmax(bad))
            )
    return ""


def _check_vectors(vectors: npt.NDArray[Any]) -> str:
    bad: list[int] = []
    count = 0
    for start, block in _blocks(vectors):
        block32 = block.astype(np.float32)
        finite = np.asarray(np.isfinite(block32).all(axis=1))
        norms = np.linalg.norm(np.where(finite[:, None], block32, 0.0), axis=1)
        wrong = ~finite | ((np.abs(norms - 1.0) > _NORM_TOLERANCE) & (norms > 0.0))
        if wrong.any():
            rows = np.flatnonzero(wrong) + start
            count += int(rows.size)
            bad.extend(int(r) for r in rows[: max(0, 5 - len(bad))])
    if count:
        return f"{count:,} vector(s) not finite or not unit length (rows {bad})"
    return ""


# -- vocabulary and database -------------------------------------------------------------


def _check_vocabulary(file: Path, manifest: Manifest, deep: bool) -> list[Problem]:
    terms = int(manifest.counts.get("terms", 0))
    try:
        with open(file, encoding="utf-8") as fh:
            vocabulary = [line.rstrip("\n") for line in fh]
    except (OSError, UnicodeDecodeError) as exc:
        return [Problem(file, f"unreadable ({exc})")]
    if len(vocabulary) != terms:
        return [Problem(file, f"{len(vocabulary):,} terms, the manifest says {terms:,}")]
    if deep:
        for i in range(1, len(vocabulary)):
            if vocabulary[i] <= vocabulary[i - 1]:
                return [Problem(file, f"not sorted and unique at line {i + 1}")]
    return []


def _check_database(file: Path, manifest: Manifest, deep: bool) -> list[Problem]:
    try:
        db = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return [Problem(file, f"unreadable database ({exc})")]
    try:
        return [Problem(file, m) for m in _database_problems(db, manifest, deep)]
    except sqlite3.DatabaseError as exc:
        return [Problem(file, f"unreadable database ({exc})")]
    finally:
        db.close()


def _database_problems(db: sqlite3.Connection, manifest: Manifest, deep: bool) -> list[str]:
    problems: list[str] = []
    if deep:
        verdict = [row[0] for row in db.execute("PRAGMA integrity_check")]
        if verdict != ["ok"]:
            problems.append(f"integrity check: {'; '.join(verdict[:3])}")
            return problems
    for table in ("documents", "chunks"):
        (n,) = db.execute(f"SELECT count(*) FROM {table}").fetchone()
        expected = int(manifest.counts.get(table, 0))
        if n != expected:
            problems.append(f"{n:,} {table}, the manifest says {expected:,}")
    if problems or not deep:
        return problems
    chunks = int(manifest.counts.get("chunks", 0))
    low, high = db.execute("SELECT min(row), max(row) FROM chunks").fetchone()
    if chunks and (low, high) != (0, chunks - 1):
        problems.append(f"chunk rows run {low}..{high}, not 0..{chunks - 1}")
    for row, heading in db.execute("SELECT row, heading FROM chunks ORDER BY row"):
        if not _is_heading(heading):
            problems.append(f"chunk row {row}: heading is not a JSON list of strings")
            break
    has_locators = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'locators'"
    ).fetchone()
    for row, stored in db.execute("SELECT row, locator FROM locators") if has_locators else ():
        if not _is_locator(stored) or not 0 <= row < chunks:
            problems.append(f"chunk row {row}: locator is not a locator of a chunk")
            break
    for doc_id, metadata in db.execute("SELECT id, metadata FROM documents ORDER BY id"):
        if not _is_json_object(metadata):
            problems.append(f"document {doc_id!r}: metadata is not a JSON object")
            break
    (total,) = db.execute("SELECT coalesce(sum(n_chunks), 0) FROM documents").fetchone()
    if total != chunks:
        problems.append(f"documents claim {total:,} chunks, the table holds {chunks:,}")
    (strays,) = db.execute(
        "SELECT count(*) FROM chunks AS c LEFT JOIN documents AS d ON d.id = c.doc_id "
        "WHERE d.id IS NULL OR c.row < d.first_row OR c.row >= d.first_row + d.n_chunks"
    ).fetchone()
    if strays:
        problems.append(f"{strays:,} chunk(s) outside their document's rows")
    return problems


def _is_heading(stored: Any) -> bool:
    if stored == "[]":
        return True
    try:
        value = json.loads(stored)
    except (TypeError, ValueError):
        return False
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_locator(stored: Any) -> bool:
    try:
        parse_locator(stored)
    except (TypeError, ValueError):
        return False
    return True


def _is_json_object(stored: Any) -> bool:
    try:
        value = json.loads(stored, parse_constant=lambda c: math.nan)
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict)
