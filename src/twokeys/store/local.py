"""The embedded index: a directory on disk. The local format's file I/O lives here and,
for the files a hit is read from, in :mod:`twokeys.store.hittable`.

Layout::

    kb.twokeys/
      manifest.json              the commit record: parameters, counts, current generation
      gen-<id>/
        twokeys.sqlite           documents, chunks, and the locators of located chunks
        lexical.vocab.txt        one term a line, sorted; line number = term id
        lexical.indptr.npy       int64, term-major CSR row pointers
        lexical.indices.npy      int32, chunk rows
        lexical.tf.npy           float32, term frequencies
        lexical.weights.npy      float32, BM25 weights for the manifest's k1/b
        lexical.lengths.npy      float32, terms per chunk
        dense.embeddings.npy     float32 or float16, (chunks, dim), L2-normalised
        hits.*                   chunk texts, headings, titles and paths by row, for hits
                                 (memory-mapped; see twokeys.store.hittable)
        derived.<name>.<key>.*   rebuilt from the above on demand: LSI factors, HNSW graph

A build writes a whole new generation into a temporary folder, renames it into place
and only then replaces ``manifest.json`` (write, fsync, atomic rename). A crash or
Ctrl-C at any point leaves the previous manifest pointing at the previous, intact
generation. A reader leases its generation (:mod:`twokeys.store.leases`), so a build
never deletes a generation being searched: the last reader to close a replaced
generation deletes it, and the next build removes what killed builds left. Arrays are
loaded memory-mapped and without pickle; opening checks each file's size against the
manifest and each array's shape against its counts (a stat and a header, no data), and
a damaged file is named in the error (:mod:`twokeys.store.check` checks everything).
A failed write (disk full, read-only) is one :class:`~twokeys.errors.IndexWriteError`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from twokeys.errors import IndexFormatError, TwokeysError
from twokeys.lexical.bm25 import TermMatrix
from twokeys.lexical.index import ArrayLexicalIndex
from twokeys.store import hittable
from twokeys.store.base import (
    DocumentInfo,
    LexicalIndex,
    Manifest,
    StoredState,
    VectorIndex,
)
from twokeys.store.contract import IndexReader
from twokeys.store.derived import derived_file as derived_file
from twokeys.store.derived import derived_names as derived_names
from twokeys.store.derived import load_derived as load_derived
from twokeys.store.derived import remove_derived as remove_derived
from twokeys.store.derived import save_derived as save_derived
from twokeys.store.derived import save_derived_file as save_derived_file
from twokeys.store.guarded import GuardedLexicalIndex
from twokeys.store.layout import DATABASE as DATABASE
from twokeys.store.layout import EMBEDDINGS as EMBEDDINGS
from twokeys.store.layout import LOCK as LOCK
from twokeys.store.layout import MANIFEST as MANIFEST
from twokeys.store.layout import VOCABULARY as VOCABULARY
from twokeys.store.leases import (
    TRASH_PREFIX,
    GenerationGone,
    Lease,
    lease,
    remove_trash,
    remove_unleased,
)
from twokeys.store.writes import fsync_path, write_errors, writing
from twokeys.types import Chunk, Locator

HASHED_UP_TO = 4 << 20  # files up to this size get their sha256 in the manifest
_SQLITE_MMAP_BYTES = 1 << 40  # SQLite caps it at its compiled maximum (2 GB by default)

_SCHEMA = """
CREATE TABLE documents (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    mtime REAL NOT NULL,
    sha256 TEXT NOT NULL,
    first_row INTEGER NOT NULL,
    n_chunks INTEGER NOT NULL,
    metadata TEXT NOT NULL
);
CREATE TABLE chunks (
    row INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    heading TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE locators (
    row INTEGER PRIMARY KEY,
    locator TEXT NOT NULL
);
"""


def is_index(path: Path) -> bool:
    return (path / MANIFEST).is_file()


def read_manifest(path: Path) -> Manifest:
    file = path / MANIFEST
    if not file.is_file():
        if not path.exists():
            raise IndexFormatError(f"no index at {path}: run 'twokeys index SOURCE --index {path}'")
        raise IndexFormatError(f"{path} is not a twokeys index (no {MANIFEST})")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexFormatError(f"{file}: unreadable manifest ({exc})") from exc
    return Manifest.from_dict(data, str(file))


def expected_arrays(manifest: Manifest) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each array file's (shape, dtype) that the manifest's counts imply."""
    counts = manifest.counts
    chunks = int(counts.get("chunks", 0))
    terms = int(counts.get("terms", 0))
    postings = int(counts.get("postings", 0))
    out: dict[str, tuple[tuple[int, ...], str]] = {
        "lexical.indptr.npy": ((terms + 1,), "int64"),
        "lexical.indices.npy": ((postings,), "int32"),
        "lexical.tf.npy": ((postings,), "float32"),
        "lexical.weights.npy": ((postings,), "float32"),
        "lexical.lengths.npy": ((chunks,), "float32"),
    }
    if manifest.encoder is not None:
        out[EMBEDDINGS] = ((chunks, manifest.encoder.dim), manifest.encoder.dtype)
    return out


def _advice(index_path: Path) -> str:
    return f"; run 'twokeys check --index {index_path}'"


def _check_size(manifest: Manifest, gen_dir: Path, name: str) -> None:
    """The file is there and has the size the manifest recorded (a stat, no reading)."""
    file = gen_dir / name
    try:
        size = file.stat().st_size
    except FileNotFoundError:
        raise IndexFormatError(f"{file}: missing{_advice(gen_dir.parent)}") from None
    except OSError as exc:
        raise IndexFormatError(f"{file}: unreadable ({exc.strerror})") from exc
    recorded = manifest.files.get(name)
    if recorded is not None and size != recorded:
        raise IndexFormatError(
            f"{file}: {size:,} bytes, the manifest recorded {recorded:,} (truncated or "
            f"replaced){_advice(gen_dir.parent)}"
        )


def lease_current(path: Path) -> tuple[Manifest, Lease]:
    """The current manifest and a lease on its generation, which a build cannot delete.

    A build that commits between reading the manifest and taking the lease may remove
    the generation just read; then the new manifest is read and leased instead.
    """
    for _ in range(20):
        manifest = read_manifest(path)
        try:
            return manifest, lease(path / manifest.generation)
        except GenerationGone:
            if read_manifest(path).generation == manifest.generation:
                break  # not a concurrent build: the manifest names a missing folder
    raise IndexFormatError(f"{path}: generation {manifest.generation} is missing")


# -- reading -------------------------------------------------------------------------


def open_local(location: str) -> LocalIndex:
    """The reader :func:`twokeys.store.contract.open_reader` opens for a path or a
    ``file://`` URL."""
    if location.startswith("file://"):
        return LocalIndex(Path(urlsplit(location).path))
    return LocalIndex(Path(location))


class LocalIndex(IndexReader):
    """A read-only view of one committed generation of a local index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest, self._lease = lease_current(path)
        self.gen_dir = path / self.manifest.generation
        db_file = self.gen_dir / DATABASE
        try:
            _check_size(self.manifest, self.gen_dir, DATABASE)
            self._db = sqlite3.connect(
                f"{db_file.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
            # read pages through a memory map (a generation's files never change) instead of
            # a read() per page: hits scattered over the chunks table fetch faster
            self._db.execute(f"PRAGMA mmap_size = {_SQLITE_MMAP_BYTES}")
            self._db.execute("SELECT count(*) FROM documents").fetchone()
        except sqlite3.Error as exc:
            self._lease.release()
            raise IndexFormatError(f"{db_file}: unreadable database ({exc})") from exc
        except BaseException:
            self._lease.release()
            raise
        # One connection, opened now (so it outlives the generation's removal by a later
        # build), used by one thread at a time: statements run and fetch under this lock,
        # which also guards the lazy loads below.
        self._lock = threading.RLock()
        self._lexical: LexicalIndex | None = None
        self._vectors: VectorIndex | None = None
        self._vectors_loaded = False
        self._hit_table: hittable.HitTable | None = None
        self._hit_table_checked = False
        self._all_locators: dict[int, Locator] | None = None

    def _hits(self) -> hittable.HitTable | None:
        """The generation's memory-mapped hit files (:mod:`twokeys.store.hittable`), or
        None for an index written before them (hits then come from SQLite)."""
        if not self._hit_table_checked:
            with self._lock:  # one thread maps the files; the others wait and reuse them
                if not self._hit_table_checked:
                    if hittable.HitTable.exists(self.gen_dir):
                        self._hit_table = hittable.HitTable(
                            self.gen_dir, int(self.manifest.counts["chunks"])
                        )
                    self._hit_table_checked = True
        return self._hit_table

    def _rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """All rows of one statement, run while no other thread uses the connection; a
        damaged database raises an error that names its file."""
        with self._lock:
            try:
                return self._db.execute(sql, parameters).fetchall()
            except sqlite3.DatabaseError as exc:
                raise self._damaged(str(exc)) from exc

    def _execute(self, sql: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        """A cursor over one statement (the caller holds the lock while fetching)."""
        try:
            return self._db.execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(str(exc)) from exc

    def _array(self, name: str) -> npt.NDArray[Any]:
        """A memory-mapped array, as a plain ``ndarray`` view that keeps the mapping.

        Its size, shape and dtype are checked against the manifest (cheap: no data is
        read). The ``numpy.memmap`` subclass costs a Python call on every slice
        (``__getitem__``, ``__array_finalize__``); the view is indexed at ndarray speed.
        """
        file = self.gen_dir / name
        _check_size(self.manifest, self.gen_dir, name)
        try:
            mapped = np.load(file, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise IndexFormatError(f"{file}: unreadable array ({exc}){_advice(self.path)}") from exc
        expected = expected_arrays(self.manifest).get(name)
        if expected is not None and (mapped.shape, mapped.dtype.name) != expected:
            raise IndexFormatError(
                f"{file}: holds {mapped.dtype.name} {mapped.shape}, the manifest says "
                f"{expected[1]} {expected[0]}{_advice(self.path)}"
            )
        array: npt.NDArray[Any] = mapped.view(np.ndarray)
        return array

    def _vocabulary(self) -> dict[str, int]:
        """{term: term id}, one line of the vocabulary file per term."""
        vocab_file = self.gen_dir / VOCABULARY
        _check_size(self.manifest, self.gen_dir, VOCABULARY)
        try:
            with open(vocab_file, encoding="utf-8") as fh:
                vocabulary = {line.rstrip("\n"): i for i, line in enumerate(fh)}
        except (OSError, UnicodeDecodeError) as exc:
            raise IndexFormatError(f"{vocab_file}: unreadable ({exc}){_advice(self.path)}") from exc
        terms = int(self.manifest.counts.get("terms", len(vocabulary)))
        if len(vocabulary) != terms:
            raise IndexFormatError(
                f"{vocab_file}: {len(vocabulary)} terms, the manifest says {terms}"
                f"{_advice(self.path)}"
            )
        return vocabulary

    @property
    def lexical(self) -> LexicalIndex:
        if self._lexical is not None:
            return self._lexical
        with self._lock:
            return self._load_lexical()

    def _load_lexical(self) -> LexicalIndex:
        if self._lexical is None:
            indptr = self._array("lexical.indptr.npy")
            indices = self._array("lexical.indices.npy")
            if len(indptr) and (int(indptr[0]) != 0 or int(indptr[-1]) != len(indices)):
                raise IndexFormatError(
                    f"{self.gen_dir / 'lexical.indptr.npy'}: row pointers do not span "
                    f"lexical.indices.npy{_advice(self.path)}"
                )
            arrays = ArrayLexicalIndex(
                self._vocabulary(),
                indptr,
                indices,
                self._array("lexical.weights.npy"),
                int(self.manifest.counts["chunks"]),
            )
            where = f"{self.gen_dir}/lexical.*.npy"
            self._lexical = GuardedLexicalIndex(arrays, where, _advice(self.path))
        return self._lexical

    @property
    def vectors(self) -> VectorIndex | None:
        if self._vectors_loaded:
            return self._vectors
        with self._lock:
            if not self._vectors_loaded:
                from twokeys.store import vectors as vector_store  # not for a bm25 search

                self._vectors = vector_store.open_vector_index(self)
                self._vectors_loaded = True
        return self._vectors

    def info(self) -> dict[str, Any]:
        data = super().info()
        data["path"] = str(self.path)
        data["size_bytes"] = sum(self.manifest.files.values())
        from twokeys.store import vectors as vector_store

        data["vector_search"] = vector_store.describe(self.manifest)
        return data

    def embeddings(self) -> npt.NDArray[Any] | None:
        if self.manifest.encoder is None:
            return None
        return self._array(EMBEDDINGS)

    def term_matrix(self) -> TermMatrix:
        return TermMatrix(
            vocabulary=list(self._vocabulary()),
            indptr=self._array("lexical.indptr.npy"),
            indices=self._array("lexical.indices.npy"),
            tf=self._array("lexical.tf.npy"),
            lengths=self._array("lexical.lengths.npy"),
        )

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        if not rows:
            return []
        table = self._hits()
        if table is not None:
            return [chunk for chunk, _, _ in table.chunks_with_source(rows)]
        found: dict[int, Chunk] = {}
        for batch_start in range(0, len(rows), 500):
            batch = [int(r) for r in rows[batch_start : batch_start + 500]]
            marks = ",".join("?" * len(batch))
            for row, doc_id, position, start, end, heading, text in self._rows(
                "SELECT row, doc_id, position, start, end, heading, text FROM chunks "
                f"WHERE row IN ({marks})",
                batch,
            ):
                found[row] = Chunk(
                    doc_id=doc_id,
                    position=position,
                    text=text,
                    start=start,
                    end=end,
                    heading_path=self._heading_path(row, heading),
                    locator=self.row_locators().get(row),
                )
        missing = [r for r in rows if r not in found]
        if missing:
            raise IndexFormatError(f"{self.path}: chunk rows {missing[:5]} missing from database")
        return [found[int(r)] for r in rows]

    def hit_source(self) -> hittable.HitTable | None:
        """The hit files, which a lazy hit reads on first use (none before they existed)."""
        return self._hits()

    def chunks_with_source(self, rows: Sequence[int]) -> list[tuple[Chunk, str, str]]:
        """Chunks with their document's title and path: from the hit files, or from SQLite
        in one joined query per 500 rows for an index written before them."""
        if not rows:
            return []
        table = self._hits()
        if table is not None:
            return table.chunks_with_source(rows)
        found: dict[int, tuple[Chunk, str, str]] = {}
        for batch_start in range(0, len(rows), 500):
            batch = [int(r) for r in rows[batch_start : batch_start + 500]]
            marks = ",".join("?" * len(batch))
            for row, doc_id, position, start, end, heading, text, title, path in self._rows(
                "SELECT c.row, c.doc_id, c.position, c.start, c.end, c.heading, c.text, "
                "d.title, d.path FROM chunks AS c LEFT JOIN documents AS d ON d.id = c.doc_id "
                f"WHERE c.row IN ({marks})",
                batch,
            ):
                heading_path = self._heading_path(row, heading)
                locator = self.row_locators().get(row)
                chunk = Chunk(doc_id, position, text, start, end, heading_path, locator)
                found[row] = (chunk, title, path) if title is not None else (chunk, doc_id, doc_id)
        missing = [r for r in rows if r not in found]
        if missing:
            raise IndexFormatError(f"{self.path}: chunk rows {missing[:5]} missing from database")
        return [found[int(r)] for r in rows]

    def row_locators(self) -> Mapping[int, Locator]:
        """Every located chunk's locator by row (none for an index written before
        locators were stored)."""
        if self._all_locators is None:
            table = self._hits()
            if table is not None:
                found = table.locators()
            else:
                found = {}
                has_table = self._rows(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'locators'"
                )
                for row, stored in (
                    self._rows("SELECT row, locator FROM locators") if has_table else []
                ):
                    try:
                        found[int(row)] = hittable.parse_locator(stored)
                    except (TypeError, ValueError) as exc:
                        raise self._damaged(f"chunk row {row}: bad locator ({exc})") from exc
            self._all_locators = found
        return self._all_locators

    def iter_chunks(self) -> Iterator[tuple[int, Chunk]]:
        """Every chunk in row order."""
        with self._lock:
            cursor = self._execute(
                "SELECT row, doc_id, position, start, end, heading, text FROM chunks ORDER BY row"
            )
        while True:
            with self._lock:
                try:
                    batch = cursor.fetchmany(1000)
                except sqlite3.DatabaseError as exc:
                    raise self._damaged(str(exc)) from exc
            if not batch:
                return
            locators = self.row_locators()
            for row, doc_id, position, start, end, heading, text in batch:
                heading_path = self._heading_path(row, heading)
                locator = locators.get(row)
                yield row, Chunk(doc_id, position, text, start, end, heading_path, locator)

    def _doc(self, r: tuple[Any, ...]) -> DocumentInfo:
        try:
            metadata = json.loads(r[8])
        except (TypeError, ValueError) as exc:
            raise self._damaged(f"document {r[0]!r}: metadata is not JSON ({exc})") from exc
        if not isinstance(metadata, dict):
            raise self._damaged(f"document {r[0]!r}: metadata is not a JSON object")
        return DocumentInfo(
            id=r[0],
            title=r[1],
            path=r[2],
            kind=r[3],
            mtime=r[4],
            sha256=r[5],
            first_row=r[6],
            n_chunks=r[7],
            metadata=metadata,
        )

    _DOC_COLUMNS = "id, title, path, kind, mtime, sha256, first_row, n_chunks, metadata"

    def documents(self, ids: Sequence[str]) -> dict[str, DocumentInfo]:
        out: dict[str, DocumentInfo] = {}
        unique = sorted(set(ids))
        for batch_start in range(0, len(unique), 500):
            batch = unique[batch_start : batch_start + 500]
            marks = ",".join("?" * len(batch))
            for r in self._rows(
                f"SELECT {self._DOC_COLUMNS} FROM documents WHERE id IN ({marks})", batch
            ):
                out[r[0]] = self._doc(r)
        return out

    def all_documents(self) -> list[DocumentInfo]:
        return [
            self._doc(r)
            for r in self._rows(f"SELECT {self._DOC_COLUMNS} FROM documents ORDER BY id")
        ]

    def _damaged(self, what: str) -> IndexFormatError:
        return IndexFormatError(f"{self.gen_dir / DATABASE}: {what}{_advice(self.path)}")

    def _heading_path(self, row: int, stored: str) -> tuple[str, ...]:
        """A chunk's heading path from its JSON column; most chunks have none."""
        if stored == "[]":
            return ()
        try:
            path = json.loads(stored)
        except (TypeError, ValueError) as exc:
            raise self._damaged(f"chunk row {row}: heading is not JSON ({exc})") from exc
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            raise self._damaged(f"chunk row {row}: heading is not a list of strings")
        return tuple(path)

    def close(self) -> None:
        """Close the database and end this reader's lease on its generation.

        When a newer build has replaced the generation and no other reader holds it, it
        is deleted now rather than at the next build (a read-only index keeps it).
        """
        with self._lock:
            if self._hit_table is not None:
                self._hit_table.close()
            self._db.close()
        if not self._lease.held:
            return
        self._lease.release()
        with contextlib.suppress(IndexFormatError, OSError):
            if read_manifest(self.path).generation != self.gen_dir.name:
                remove_unleased(self.gen_dir)


# -- writing -------------------------------------------------------------------------


#: file descriptors of the write locks this process holds (see _close_held_locks)
_HELD_LOCKS: set[int] = set()


def _close_held_locks() -> None:
    """In a forked child (of a process building an index): close the inherited lock files.

    An flock belongs to the open file, which a fork shares: a child left running after
    the build was killed would keep the index locked. Closing the child's copy leaves the
    parent's lock as it is (only unlocking would release it). A forked child must not
    return through :func:`write_lock` (it must exit without unwinding).
    """
    for fd in _HELD_LOCKS:
        with contextlib.suppress(OSError):
            os.close(fd)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_close_held_locks)


@contextlib.contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the index folder for the duration of a build."""
    with writing(path):
        path.mkdir(parents=True, exist_ok=True)
        fh = open(path / LOCK, "w")  # noqa: SIM115 - closed below
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TwokeysError(f"{path} is being written by another twokeys process") from None
        _HELD_LOCKS.add(fh.fileno())
        try:
            yield
        finally:
            _HELD_LOCKS.discard(fh.fileno())
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_writable_target(path: Path) -> None:
    """Refuse to build into a file or a non-empty folder that is not a twokeys index."""
    if path.exists() and not path.is_dir():
        raise TwokeysError(f"{path} exists and is not a folder; choose another --index path")
    if path.is_dir() and not is_index(path):
        leftovers = [p.name for p in path.iterdir() if not _is_ours(p.name)]
        if leftovers:
            raise TwokeysError(
                f"{path} is a non-empty folder that is not a twokeys index "
                f"(contains {leftovers[0]!r}); refusing to write into it"
            )


def _is_ours(name: str) -> bool:
    return name in (LOCK, MANIFEST) or name.startswith(
        ("gen-", ".tmp-gen-", TRASH_PREFIX, MANIFEST)
    )


class GenerationWriter:
    """Writes one generation's files into a temporary folder; :meth:`commit` makes it
    current. (The session around it, :class:`~twokeys.store.localwriter.LocalWriter`,
    decides what goes in.)"""

    def __init__(self, index_path: Path) -> None:
        self.index_path = index_path
        try:
            with writing(index_path):
                self._start()
        except BaseException:
            with contextlib.suppress(AttributeError):
                shutil.rmtree(self.tmp_dir, ignore_errors=True)
            raise

    def _start(self) -> None:
        index_path = self.index_path
        self.generation = (
            f"gen-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{time.time_ns() % 10**6}"
        )
        self.tmp_dir = index_path / f".tmp-{self.generation}"
        self.tmp_dir.mkdir(parents=True)
        self._db = sqlite3.connect(self.tmp_dir / DATABASE)
        # A bulk load into a new file in the temporary folder: no rollback journal and no
        # syncs while writing (a build that dies leaves a folder that is deleted, never a
        # half-written file in use); :meth:`commit` syncs every file before publishing.
        self._db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
        self._db.executescript(_SCHEMA)
        self._files: dict[str, int] = {}
        self._hashes: dict[str, str] = {}
        self._docs: list[DocumentInfo] | None = None

    @write_errors
    def add_documents(self, docs: Iterable[DocumentInfo]) -> None:
        """Record every document of the generation (call once, before :meth:`add_chunks`)."""
        docs = self._docs = list(docs)
        self._db.executemany(
            "INSERT INTO documents VALUES (?,?,?,?,?,?,?,?,?)",
            (
                (
                    d.id,
                    d.title,
                    d.path,
                    d.kind,
                    d.mtime,
                    d.sha256,
                    d.first_row,
                    d.n_chunks,
                    _metadata_json(d.metadata),
                )
                for d in docs
            ),
        )

    @write_errors
    def add_chunks(self, rows_and_chunks: Iterable[tuple[int, Chunk]]) -> None:
        """Record every chunk of the generation, rows 0..n-1 in order (call once): in
        SQLite and in the memory-mapped hit files."""
        if self._docs is None:
            raise ValueError("add_documents must be called before add_chunks")
        rows_and_chunks = list(rows_and_chunks)
        hittable.write_hit_table(self.tmp_dir, self._docs, rows_and_chunks)
        headings: dict[tuple[str, ...], str] = {}  # few distinct paths: each dumped once

        def heading(path: tuple[str, ...]) -> str:
            dumped = headings.get(path)
            if dumped is None:
                dumped = headings[path] = json.dumps(list(path), ensure_ascii=False)
            return dumped

        self._db.executemany(
            "INSERT INTO chunks VALUES (?,?,?,?,?,?,?)",
            (
                (row, c.doc_id, c.position, c.start, c.end, heading(c.heading_path), c.text)
                for row, c in rows_and_chunks
            ),
        )
        self._db.executemany(
            "INSERT INTO locators VALUES (?,?)",
            ((row, hittable.locator_json(c.locator)) for row, c in rows_and_chunks if c.locator),
        )

    @write_errors
    def write_lexical(self, matrix: TermMatrix, weights: npt.NDArray[np.float32]) -> None:
        """The term matrix and its BM25 weights (:func:`twokeys.lexical.bm25.bm25_weights`),
        aligned with ``matrix.indices``."""
        vocab_file = self.tmp_dir / "lexical.vocab.txt"
        with open(vocab_file, "w", encoding="utf-8") as fh:
            if matrix.vocabulary:  # a term a line
                fh.write("\n".join(matrix.vocabulary))
                fh.write("\n")
        self._save("lexical.indptr.npy", matrix.indptr)
        self._save("lexical.indices.npy", matrix.indices)
        self._save("lexical.tf.npy", matrix.tf)
        self._save("lexical.lengths.npy", matrix.lengths)
        self._save("lexical.weights.npy", weights)

    @write_errors
    def write_embeddings(self, embeddings: npt.NDArray[np.floating]) -> None:
        self._save("dense.embeddings.npy", embeddings)

    def _save(self, name: str, array: npt.NDArray[Any]) -> None:
        np.save(self.tmp_dir / name, np.ascontiguousarray(array), allow_pickle=False)

    @write_errors
    def commit(self, manifest: Manifest) -> Manifest:
        """Durably publish this generation.

        The generation it replaces stays while a reader (the build's own included)
        holds it: the last reader to close it deletes it, or else :func:`remove_stale`.
        """
        self._db.commit()
        self._db.close()
        files = sorted(self.tmp_dir.iterdir())
        # on a few threads: the files' fsyncs wait on the disk together (about half the
        # time of one after another here), and hashing releases the GIL
        with ThreadPoolExecutor(max(1, min(8, len(files)))) as pool:
            sealed = list(pool.map(_seal, files))
        for file, (size, digest) in zip(files, sealed, strict=True):
            self._files[file.name] = size
            if digest is not None:
                self._hashes[file.name] = digest
        final_dir = self.index_path / self.generation
        os.replace(self.tmp_dir, final_dir)
        fsync_path(self.index_path)
        committed = Manifest(
            spec=manifest.spec,
            counts=manifest.counts,
            stored=StoredState(self.generation, self._files, self._hashes),
            created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            twokeys_version=manifest.twokeys_version,
            source=manifest.source,
        )
        tmp_manifest = self.index_path / f"{MANIFEST}.tmp"
        with open(tmp_manifest, "w", encoding="utf-8") as fh:
            json.dump(committed.to_dict(), fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_manifest, self.index_path / MANIFEST)
        fsync_path(self.index_path)
        return committed

    def abort(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def remove_stale(index_path: Path) -> list[str]:
    """Delete what the manifest does not name and no reader holds; the names kept.

    Call it holding :func:`write_lock`: a temporary folder (``.tmp-gen-*``) is then a
    killed build's, never a live one's. A generation a reader holds is kept (its last
    reader deletes it on closing). Without a readable manifest, generations are kept.
    """
    try:
        keep = read_manifest(index_path).generation
    except IndexFormatError:
        keep = None
    remove_trash(index_path)
    held: list[str] = []
    for entry in sorted(index_path.iterdir()):
        if entry.name == keep or not entry.is_dir():
            if entry.name == f"{MANIFEST}.tmp":
                entry.unlink(missing_ok=True)
            continue
        if entry.name.startswith(".tmp-gen-"):
            shutil.rmtree(entry, ignore_errors=True)
        elif entry.name.startswith("gen-") and keep is not None and not _try_remove(entry):
            held.append(entry.name)
    return held


def _try_remove(folder: Path) -> bool:
    try:
        return remove_unleased(folder)
    except OSError:  # cleaning up is best effort: a read-only folder keeps it
        return False


def _metadata_json(metadata: Mapping[str, Any]) -> str:
    """A document's metadata as stored (most have none: no encoder call for those)."""
    return json.dumps(dict(metadata), sort_keys=True, default=str) if metadata else "{}"


def _seal(file: Path) -> tuple[int, str | None]:
    """A written file's size and (up to :data:`HASHED_UP_TO`) sha256, once it is on disk."""
    size = file.stat().st_size
    digest = file_sha256(file) if size <= HASHED_UP_TO else None
    fsync_path(file)
    return size, digest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
