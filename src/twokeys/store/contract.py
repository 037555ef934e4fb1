"""The storage contract: what a backend offers to be searched (:class:`IndexReader`) and
built (:class:`IndexWriter`), and how a location names its backend (:func:`open_reader`).

The engine (:mod:`twokeys.engine`) talks to an :class:`IndexReader` only; it never
names a backend class. A location is a filesystem path for the embedded backend (a
directory, :mod:`twokeys.store.local`) or a URL whose scheme names a registered backend
(``postgresql://...``: :mod:`twokeys.store.postgres`); :func:`register_backend` adds
one. Every
backend must pass the contract suite in ``tests/contract/`` unchanged.

What a reader promises (see also the engine's concurrency contract):

* it serves one committed state of the index, whole, for as long as it is open, even
  while a writer commits another one;
* reading never writes: opening and searching change nothing in the store;
* it may be used from many threads at once;
* chunk ids (``<document id>#<position>``) and document ids are stable: re-indexing
  other documents does not change them; rows (``ScoredChunk.row``) are the reader's own
  numbering and mean nothing outside it.

What a writer promises (:func:`open_writer`; the one indexer, :mod:`twokeys.indexer`,
drives it): it adds, replaces and deletes whole documents and keeps what it is not told
about; readers never see part of a document; what :meth:`IndexWriter.commit` publishes
is published whole, and :meth:`IndexWriter.abort` (or a crash at any point) leaves the
index as last published. A backend says how much one publication holds: the local
directory publishes a session at commit (one generation), PostgreSQL each batch of
:attr:`IndexWriter.batch_chunks` chunks (one transaction). The index's
:class:`~twokeys.store.base.IndexSpec` is fixed by the writer's ``spec``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.store.base import DocumentInfo, IndexBackend, IndexSpec
from twokeys.types import Chunk

if TYPE_CHECKING:
    from twokeys.dense.encoder import Encoder

#: ``stage(name, total)`` returns an ``advance(n)`` callback; total is None when unknown.
ProgressFactory = Callable[[str, int | None], Callable[[int], None]]


class IndexReader(IndexBackend, ABC):
    """A committed index, searchable: the lexical and vector indexes, chunks and documents
    by row or by stable id (:meth:`passages`), and the manifest.

    (:class:`~twokeys.store.base.IndexBackend` is the same interface under its older
    name.)
    """

    def stats(self) -> Mapping[str, int]:
        """Counts: documents, chunks, terms, postings."""
        return dict(self.manifest.counts)

    def info(self) -> dict[str, Any]:
        """What ``twokeys info`` shows: the manifest's parameters and counts, plus
        ``path``, ``size_bytes`` and ``vector_search`` (which vector index, and why),
        which a backend fills in its own terms."""
        data = self.manifest.to_dict()
        data.update(path="", size_bytes=0, vector_search={"used": "unknown", "reason": ""})
        return data


@dataclass(frozen=True)
class DocumentChunks:
    """A document to add or replace: its record, its chunks in order, and (for an index
    with an encoder) their unit vectors, one row per chunk. The writer analyses the
    chunks itself, with the analyzer of its :class:`IndexSpec`."""

    info: DocumentInfo
    chunks: tuple[Chunk, ...]
    embeddings: npt.NDArray[np.floating] | None = None


@dataclass(frozen=True)
class Committed:
    """What :meth:`IndexWriter.commit` left current."""

    counts: Mapping[str, int]  # documents, chunks, terms, postings
    written: bool = True  # False: nothing had changed, so nothing was written
    vector_index: str = "none"  # what dense search uses: exact, hnsw or none
    embedded: int = 0  # stored chunks the writer embedded again itself (damaged vectors)


class IndexWriter(ABC):
    """One writing session on an index, whatever stores it (:func:`open_writer`).

    Documents are added, replaced and deleted whole; a stored document the session does
    not name stays as it is. The indexer (:mod:`twokeys.indexer`) asks :meth:`stored`
    which documents are there and with which content hash: an unchanged one is kept
    (:meth:`keep`, nothing re-chunked or re-embedded), a new or changed one is chunked
    and embedded by the indexer and handed over with :meth:`put`. :meth:`commit`
    publishes the session; :meth:`abort` (or an exception in a ``with`` block) drops
    what is not yet published.

    When it is published is the backend's: the local directory publishes everything at
    :meth:`commit`, as one new generation; a database may publish each batch of
    :attr:`batch_chunks` chunks as one transaction (never part of a document), so a
    long build shows progress and :meth:`abort` drops only the unpublished rest.
    """

    #: what the index is built with (the spec it was opened for, or the stored one)
    spec: IndexSpec
    #: the source the stored documents were read from ("" when unknown or new)
    source: str = ""
    #: why nothing stored is reused (a changed chunker or encoder, damage); "" if it is
    rebuild_reason: str = ""
    #: damage found in the stored index that this session does not carry forward
    repaired: Sequence[Any] = ()
    #: chunks to hand to one :meth:`put` (and embed in one call); None: all at once
    batch_chunks: int | None = None
    #: paths a source folder must not be read from (the index itself, inside it)
    excluded: tuple[Path, ...] = ()

    @abstractmethod
    def stored(self) -> Mapping[str, str]:
        """{document id: content hash} of the stored documents whose chunks and
        vectors can be kept."""

    @abstractmethod
    def keep(self, info: DocumentInfo) -> None:
        """The stored document ``info.id`` is unchanged: keep its chunks and vectors,
        with this record (its title, path and metadata as read now)."""

    @abstractmethod
    def put(self, docs: Sequence[DocumentChunks]) -> None:
        """Add these documents, replacing stored ones with the same ids."""

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None:
        """Delete these stored documents."""

    @abstractmethod
    def commit(self, source: str | None = None) -> Committed:
        """Publish the session; ``source`` is recorded as the documents' source (None
        keeps the recorded one)."""

    @abstractmethod
    def abort(self) -> None:
        """Drop what is not yet published; the index stays as last published."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release locks and connections (after :meth:`commit` or :meth:`abort`)."""

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Abort when the block raised (commit is explicit), then close."""
        try:
            if exc is not None:
                self.abort()
        finally:
            self.close()


class WriterFactory(Protocol):
    def __call__(
        self,
        location: str,
        spec: IndexSpec | None,
        *,
        encoder: Encoder | None = None,
        progress: ProgressFactory | None = None,
    ) -> IndexWriter: ...


ReaderFactory = Callable[[str], IndexReader]
#: URL scheme -> "module:callable" opening a reader for a location of that scheme
_BACKENDS: dict[str, str | ReaderFactory] = {}
#: URL scheme -> "module:callable" opening a writer (:class:`WriterFactory`)
_WRITERS: dict[str, str | WriterFactory] = {}
LOCAL = "file"  # filesystem paths (and file:// URLs) open the embedded directory backend
_BACKENDS[LOCAL] = "twokeys.store.local:open_local"
_WRITERS[LOCAL] = "twokeys.store.localwriter:open_local_writer"
# PostgreSQL + pgvector (the postgres extra; psycopg is imported on first use)
_BACKENDS["postgresql"] = _BACKENDS["postgres"] = "twokeys.store.postgres.backend:PostgresIndex"
_WRITERS["postgresql"] = _WRITERS["postgres"] = "twokeys.store.postgres.writer:PostgresIndexWriter"


def register_backend(
    scheme: str, opener: str | ReaderFactory, writer: str | WriterFactory | None = None
) -> None:
    """Open locations ``<scheme>://...`` with ``opener`` (or ``"module:callable"``,
    imported on first use, so a backend's driver is only needed when it is used), and
    write them with ``writer`` (None: the backend is read-only)."""
    if not scheme or not scheme.isascii() or not scheme.replace("+", "").isalnum():
        raise ConfigError(f"backend scheme: {scheme!r} is not a URL scheme")
    _BACKENDS[scheme.lower()] = opener
    if writer is not None:
        _WRITERS[scheme.lower()] = writer
    else:
        _WRITERS.pop(scheme.lower(), None)


def scheme_of(location: str | Path) -> str:
    """The backend scheme a location names: ``file`` for a path."""
    text = str(location)
    if isinstance(location, Path) or "://" not in text:
        return LOCAL
    return urlsplit(text).scheme.lower()


def open_reader(location: str | Path) -> IndexReader:
    """A reader for the index at ``location`` (a path, or a URL of a registered scheme)."""
    scheme = scheme_of(location)
    opener = _BACKENDS.get(scheme)
    if opener is None:
        known = ", ".join(sorted(f"{s}://" for s in _BACKENDS if s != LOCAL))
        raise ConfigError(
            f"index location {str(location)!r}: no backend for {scheme}:// (a path opens "
            f"a local index{'; registered: ' + known if known else ''})"
        )
    factory: ReaderFactory = _resolve(opener)
    reader: IndexReader = factory(str(location))
    return reader


def reader_info(backend: IndexBackend) -> dict[str, Any]:
    """``backend``'s counts, parameters and sizes (:meth:`IndexReader.info`), also for a
    registered backend that implements only the older :class:`IndexBackend`."""
    if isinstance(backend, IndexReader):
        return backend.info()
    return IndexReader.info(backend)  # type: ignore[arg-type]  # a bare IndexBackend


def _resolve(opener: Any) -> Any:
    if isinstance(opener, str):
        module, _, name = opener.partition(":")
        return getattr(import_module(module), name)
    return opener


def open_writer(
    location: str | Path,
    spec: IndexSpec | None = None,
    *,
    encoder: Encoder | None = None,
    progress: ProgressFactory | None = None,
) -> IndexWriter:
    """A writing session on the index at ``location``, created when missing.

    ``spec`` is what to build with (a stored index built otherwise is rebuilt, or
    refused, as its backend can); None writes with the stored index's own spec (and
    raises :class:`~twokeys.errors.IndexFormatError` when there is no index).
    ``encoder`` is the instance of the spec's encoder, for a backend that re-embeds
    damaged vectors; ``progress`` reports the writer's own long steps.
    """
    scheme = scheme_of(location)
    opener = _WRITERS.get(scheme)
    if opener is None:
        if scheme in _BACKENDS:
            raise ConfigError(f"index location {str(location)!r}: {scheme}:// is read-only")
        open_reader(location)  # raises: no backend for the scheme
    factory: WriterFactory = _resolve(opener)
    return factory(str(location), spec, encoder=encoder, progress=progress)
