"""What any index backend provides: the manifest, chunk lookup, and two searchable indexes.

The two searchable indexes' interfaces live with their kernels
(:class:`~twokeys.lexical.base.LexicalIndex`, :class:`~twokeys.dense.base.VectorIndex`),
which import nothing from storage; they are re-exported here.

The engine and the CLI only talk to these interfaces, so a server backend (say
PostgreSQL with a GIN-indexed term table and pgvector) can be added as another
implementation of :class:`IndexBackend` without touching either.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from twokeys.analysis import AnalyzerSpec
from twokeys.chunking import ChunkerConfig
from twokeys.dense.base import VectorIndex as VectorIndex
from twokeys.dense.selection import VectorIndexOptions
from twokeys.errors import ConfigError, IndexFormatError
from twokeys.lexical.base import LexicalIndex as LexicalIndex
from twokeys.lexical.bm25 import BM25Params
from twokeys.types import Chunk, HitSource, Locator
from twokeys.types import DocumentInfo as DocumentInfo
from twokeys.types import RowMask as RowMask

if TYPE_CHECKING:
    from twokeys.filters import Filter

#: What :meth:`IndexBackend.snapshot` returns for a backend whose state never changes
#: while open: one shared do-nothing block (it holds no state, so threads can share it),
#: not a new one per search.
_ONE_STATE: contextlib.AbstractContextManager[None] = contextlib.nullcontext()

FORMAT_NAME = "twokeys-index"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class EncoderInfo:
    """Which encoder built the vectors: registry name, model id and weights fingerprint."""

    name: str
    id: str
    fingerprint: str
    dim: int
    dtype: str = "float32"
    tokenizer: str = ""  # the tokenizer's fingerprint ("" if none, or an older index)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "fingerprint": self.fingerprint,
            "dim": self.dim,
            "dtype": self.dtype,
            "tokenizer": self.tokenizer,
        }

    def mismatch(self, encoder_id: str, fingerprint: str, tokenizer: str) -> str:
        """Why an encoder with these id and fingerprints did not build these vectors, or
        "" if it did. (An index that recorded no tokenizer is not checked for one.)"""
        if encoder_id != self.id or fingerprint != self.fingerprint:
            return (
                f"index was built with encoder {self.id} ({self.fingerprint[:19]}), "
                f"not {encoder_id} ({fingerprint[:19]})"
            )
        if self.tokenizer and tokenizer != self.tokenizer:
            return (
                f"index was built with encoder {self.id} and tokenizer "
                f"{self.tokenizer[:19]}, not tokenizer {tokenizer[:19] or 'none'}"
            )
        return ""


@dataclass(frozen=True)
class IndexSpec:
    """What defines an index's results, whatever stores it: the analyzer, BM25's k1 and
    b, the chunker, the encoder that made the vectors (None: lexical only) and the
    vector-index options. Two indexes of the same documents with equal specs search alike.
    """

    analyzer: AnalyzerSpec
    bm25: BM25Params
    chunker: ChunkerConfig
    encoder: EncoderInfo | None
    vector_index: VectorIndexOptions = field(default_factory=VectorIndexOptions)

    def reuse_conflict(self, stored: IndexSpec) -> str:
        """Why chunks and vectors stored under ``stored`` can't be kept under this spec
        ("" when they can: BM25, the analyzer and the vector index are re-derived)."""
        if stored.chunker != self.chunker:
            return "chunker settings changed"
        if (stored.encoder is None) != (self.encoder is None):
            return "dense index added or removed"
        if stored.encoder is not None and self.encoder is not None:
            new = self.encoder
            if stored.encoder.mismatch(new.id, new.fingerprint, new.tokenizer):
                return f"encoder changed ({stored.encoder.id} -> {new.id})"
            if stored.encoder.dtype != new.dtype:
                return f"vector dtype changed ({stored.encoder.dtype} -> {new.dtype})"
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "analyzer": self.analyzer.to_dict(),
            "bm25": self.bm25.to_dict(),
            "chunker": self.chunker.to_dict(),
            "encoder": self.encoder.to_dict() if self.encoder else None,
            "vector_index": self.vector_index.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexSpec:
        """The spec in ``data`` (a manifest or a settings row); raises KeyError, TypeError,
        ValueError or ConfigError on a malformed one (the caller names the file)."""
        enc = data["encoder"]
        encoder = (
            EncoderInfo(
                name=str(enc["name"]),
                id=str(enc["id"]),
                fingerprint=str(enc["fingerprint"]),
                dim=int(enc["dim"]),
                dtype=str(enc.get("dtype", "float32")),
                tokenizer=str(enc.get("tokenizer", "")),
            )
            if enc
            else None
        )
        return cls(
            analyzer=AnalyzerSpec.from_dict(data["analyzer"]),
            bm25=BM25Params.from_dict(data["bm25"]),
            chunker=ChunkerConfig.from_dict(data["chunker"]),
            encoder=encoder,
            vector_index=VectorIndexOptions.from_dict(data.get("vector_index", {})),
        )


@dataclass(frozen=True)
class StoredState:
    """How a backend keeps one committed state of an index, which does not change its
    results: the generation (a local folder's name, a database's write counter), its
    files or tables with their sizes in bytes, and the sha256 of a local generation's
    small files (checked by ``twokeys check``)."""

    generation: str = ""
    files: Mapping[str, int] = field(default_factory=dict)
    sha256: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    """An index's description: its :class:`IndexSpec` (what defines results), its counts,
    the source and twokeys that wrote it, and how it is stored (:class:`StoredState`).
    A local index writes it last (``manifest.json``), so that it commits a build."""

    spec: IndexSpec
    counts: Mapping[str, int]
    stored: StoredState = field(default_factory=StoredState)
    created_at: str = ""
    twokeys_version: str = ""
    source: str = ""  # the absolute path the documents were read from ("" if unknown)

    # the spec's and the stored state's fields, by their names
    @property
    def analyzer(self) -> AnalyzerSpec:
        return self.spec.analyzer

    @property
    def bm25(self) -> BM25Params:
        return self.spec.bm25

    @property
    def chunker(self) -> ChunkerConfig:
        return self.spec.chunker

    @property
    def encoder(self) -> EncoderInfo | None:
        return self.spec.encoder

    @property
    def vector_index(self) -> VectorIndexOptions:
        return self.spec.vector_index

    @property
    def generation(self) -> str:
        return self.stored.generation

    @property
    def files(self) -> Mapping[str, int]:
        return self.stored.files

    @property
    def sha256(self) -> Mapping[str, str]:
        return self.stored.sha256

    def to_dict(self) -> dict[str, Any]:
        """The manifest file's JSON (one flat object, format version 1)."""
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "twokeys_version": self.twokeys_version,
            "created_at": self.created_at,
            "generation": self.generation,
            **self.spec.to_dict(),
            "counts": dict(self.counts),
            "files": dict(self.files),
            "source": self.source,
            "sha256": dict(self.sha256),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> Manifest:
        if data.get("format") != FORMAT_NAME:
            raise IndexFormatError(f"{where}: not a twokeys index manifest")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise IndexFormatError(
                f"{where}: index format version {version} is not supported "
                f"(this twokeys reads version {FORMAT_VERSION}); rebuild the index"
            )
        try:
            return cls(
                spec=IndexSpec.from_dict(data),
                counts={str(k): int(v) for k, v in data["counts"].items()},
                stored=StoredState(
                    generation=str(data["generation"]),
                    files={str(k): int(v) for k, v in data.get("files", {}).items()},
                    sha256={str(k): str(v) for k, v in data.get("sha256", {}).items()},
                ),
                created_at=str(data.get("created_at", "")),
                twokeys_version=str(data.get("twokeys_version", "")),
                source=str(data.get("source", "")),
            )
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as exc:
            raise IndexFormatError(f"{where}: malformed manifest ({exc!r})") from exc


class IndexBackend(ABC):
    """A readable index."""

    manifest: Manifest
    #: Whether other processes can change the index while it is open (a database): the
    #: engine then asks :meth:`allowed_rows` on every filtered search instead of keeping it.
    rows_change: bool = False

    @property
    @abstractmethod
    def lexical(self) -> LexicalIndex: ...

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """A block whose reads all see one committed state of the index (the engine
        wraps each search in one). A backend that serves one state for as long as it is
        open (a local index) needs nothing; one whose rows change while open (a
        database) runs the block's statements in one transaction."""
        return _ONE_STATE

    @property
    @abstractmethod
    def vectors(self) -> VectorIndex | None: ...

    @abstractmethod
    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        """Chunks by row, in the order asked."""

    @abstractmethod
    def documents(self, ids: Sequence[str]) -> dict[str, DocumentInfo]:
        """Document records by id (missing ids are absent from the result)."""

    def hit_source(self) -> HitSource | None:
        """Where a hit may read its chunk, title and path lazily, on first use (a
        :class:`~twokeys.types.HitSource` that never changes while open: a local index's
        mapped hit files); None where hits are read whole (:meth:`chunks_with_source`)."""
        return None

    def chunks_with_source(self, rows: Sequence[int]) -> list[tuple[Chunk, str, str]]:
        """Chunks by row, in the order asked, each with its document's title and path.

        A chunk whose document record is missing gets its document id for both. Backends
        can answer this in one query; this default asks :meth:`chunks` then
        :meth:`documents`.
        """
        chunks = self.chunks(rows)
        docs = self.documents([c.doc_id for c in chunks])
        out = []
        for chunk in chunks:
            doc = docs.get(chunk.doc_id)
            out.append(
                (chunk, doc.title if doc else chunk.doc_id, doc.path if doc else chunk.doc_id)
            )
        return out

    @abstractmethod
    def all_documents(self) -> list[DocumentInfo]:
        """Every document, in id order."""

    def allowed_rows(self, filters: Sequence[Filter]) -> RowMask:
        """A mask over chunk rows: the rows of the documents every filter allows. This
        default reads every document record (rows are contiguous per document)."""
        from twokeys.filters import allowed_rows

        n_rows = int(self.manifest.counts.get("chunks", 0))
        located = self.row_locators() if any(f.on_chunks for f in filters) else None
        return allowed_rows(self.all_documents(), filters, n_rows, located)

    def row_locators(self) -> Mapping[int, Locator]:
        """Every located chunk's :class:`~twokeys.types.Locator` by row (for locator
        filters). This default reads every chunk; backends read one column."""
        n_rows = int(self.manifest.counts.get("chunks", 0))
        rows = list(range(n_rows))
        return {row: c.locator for row, c in zip(rows, self.chunks(rows), strict=True) if c.locator}

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by their stable id (:attr:`Chunk.id`, ``<document id>#<position>``).

        An id names a document and a position in it, so it survives re-indexing of other
        documents (which renumbers rows); an id whose document or position no longer
        exists is absent from the result. This default reads the documents' first rows.
        """
        wanted: dict[str, tuple[str, int]] = {}
        for chunk_id in chunk_ids:
            doc_id, sep, position = chunk_id.rpartition("#")
            if sep and doc_id and position.isdigit():
                wanted[chunk_id] = (doc_id, int(position))
        docs = self.documents(sorted({doc_id for doc_id, _ in wanted.values()}))
        rows = {
            chunk_id: docs[doc_id].first_row + position
            for chunk_id, (doc_id, position) in wanted.items()
            if doc_id in docs and position < docs[doc_id].n_chunks
        }
        found = self.chunks(list(rows.values()))
        return {chunk_id: chunk for chunk_id, chunk in zip(rows, found, strict=True)}

    def version(self) -> str:
        """The latest committed state of the index, as an opaque string that changes
        when a writer commits (a server reopens its reader then). A reader that can only
        serve the state it opened (the local directory) returns that state's."""
        return self.manifest.generation

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release files and connections."""
