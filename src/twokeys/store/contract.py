"""The storage contract: what a backend offers to be searched (:class:`IndexReader`) and
built (:class:`IndexWriter`), and how a location names its backend (:func:`open_reader`).

The engine (:mod:`twokeys.engine`) talks to an :class:`IndexReader` only; it never
names a backend class. A location is a filesystem path for the embedded backend (a
directory, :mod:`twokeys.store.local`) or a URL whose scheme names a registered backend
(``postgresql://...`` once there is one): :func:`register_backend` adds one. Every
backend must pass the contract suite in ``tests/contract/`` unchanged.

What a reader promises (see also the engine's concurrency contract):

* it serves one committed state of the index, whole, for as long as it is open, even
  while a writer commits another one;
* reading never writes: opening and searching change nothing in the store;
* it may be used from many threads at once;
* chunk ids (``<document id>#<position>``) and document ids are stable: re-indexing
  other documents does not change them; rows (``ScoredChunk.row``) are the reader's own
  numbering and mean nothing outside it.

What a writer promises: nothing it writes is visible to readers before :meth:`commit`,
and :meth:`abort` (or a crash at any point) leaves the previous committed state intact.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.lexical.bm25 import BM25Params, TermMatrix
from twokeys.store.base import DocumentInfo, IndexBackend, Manifest
from twokeys.types import Chunk


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


class IndexWriter(ABC):
    """Builds the next committed state of an index; readers see it only after commit.

    Chunks are added with the rows the writer's lexical and vector arrays use, documents
    with their first row and chunk count (:class:`~twokeys.store.base.DocumentInfo`).
    """

    @abstractmethod
    def add_documents(self, docs: Iterable[DocumentInfo]) -> None:
        """Store document records (id, title, path, kind, metadata, rows)."""

    @abstractmethod
    def add_chunks(self, rows_and_chunks: Iterable[tuple[int, Chunk]]) -> None:
        """Store chunks at their rows."""

    @abstractmethod
    def write_lexical(self, matrix: TermMatrix, bm25: BM25Params) -> None:
        """Store the term matrix and its BM25 weights."""

    @abstractmethod
    def write_embeddings(self, embeddings: npt.NDArray[np.floating]) -> None:
        """Store the chunk vectors, one row per chunk row."""

    @abstractmethod
    def commit(self, manifest: Manifest) -> Manifest:
        """Publish everything written, atomically; returns the committed manifest."""

    @abstractmethod
    def abort(self) -> None:
        """Drop everything written; the previous committed state stays current."""

    def __enter__(self) -> IndexWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Abort when the block raised (commit is explicit)."""
        if exc is not None:
            self.abort()


ReaderFactory = Callable[[str], IndexReader]
#: URL scheme -> "module:callable" opening a reader for a location of that scheme
_BACKENDS: dict[str, str | ReaderFactory] = {}
LOCAL = "file"  # filesystem paths (and file:// URLs) open the embedded directory backend
_BACKENDS[LOCAL] = "twokeys.store.local:open_local"


def register_backend(scheme: str, opener: str | ReaderFactory) -> None:
    """Open locations ``<scheme>://...`` with ``opener`` (or ``"module:callable"``,
    imported on first use, so a backend's driver is only needed when it is used)."""
    if not scheme or not scheme.isascii() or not scheme.replace("+", "").isalnum():
        raise ConfigError(f"backend scheme: {scheme!r} is not a URL scheme")
    _BACKENDS[scheme.lower()] = opener


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
    if isinstance(opener, str):
        module, _, name = opener.partition(":")
        factory: Any = getattr(import_module(module), name)
    else:
        factory = opener
    reader: IndexReader = factory(str(location))
    return reader
