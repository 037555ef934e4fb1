"""Small immutable values passed between the stages of the pipeline.

Ingestion yields :class:`Document`, chunking yields :class:`Chunk`, retrievers
yield :class:`ScoredChunk` runs, and the engine returns :class:`Hit` values that
carry each retriever's evidence so a caller can see why a chunk won.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

#: which chunk rows a filtered search may return (True: allowed), one entry per row
RowMask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Document:
    """One source document.

    ``id`` is stable across runs: the path relative to the indexed folder; for a JSONL /
    BEIR corpus file indexed on its own, the record ``_id``; for a ``.jsonl`` file met
    inside a folder, ``<relative path>#<_id>``.
    """

    id: str
    title: str
    text: str
    path: str
    mtime: float
    sha256: str
    kind: str  # "markdown", "text", "html", "rst", "jsonl"
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What the engine needs of a document to present a hit and to filter on: its
    stable id, where it came from, its content hash, and its chunk rows
    (``first_row`` .. ``first_row + n_chunks``)."""

    id: str
    title: str
    path: str
    kind: str
    mtime: float
    sha256: str
    first_row: int
    n_chunks: int
    metadata: Mapping[str, Any] = field(default_factory=dict)


HEADING_SEPARATOR = " > "
"""Joins a heading path into one string (:attr:`Chunk.heading`)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A passage of a document, the unit that is indexed and retrieved.

    ``start``/``end`` are character offsets into ``Document.text`` and
    ``text == document.text[start:end]``. ``heading_path`` is the chain of headings
    above the chunk, e.g. ``("Troubleshooting", "Power", "ZX-4821")``.

    Its :attr:`id`, ``<document id>#<position>``, is stable: re-indexing other documents
    leaves it (and what it names) unchanged, unlike the chunk's row in an index, which
    every build may renumber.
    """

    doc_id: str
    position: int
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.doc_id}#{self.position}"

    @property
    def heading(self) -> str:
        return HEADING_SEPARATOR.join(self.heading_path)


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """One entry of a retriever's ranked list: a chunk row, its score and rank (1-based)."""

    row: int
    score: float
    rank: int


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one retriever contributed to a hit (for ``--explain``)."""

    retriever: str
    rank: int
    score: float
    fused: float = 0.0  # this retriever's share of the fused score (RRF term), 0 if not fused
    weight: float = 1.0  # the run's fusion weight (weighted RRF)
    matched_terms: tuple[tuple[str, float], ...] = ()  # lexical: (term, contribution)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``matched_terms`` as ``[[term, contribution], ...]``."""
        return {
            "retriever": self.retriever,
            "rank": self.rank,
            "score": self.score,
            "fused": self.fused,
            "weight": self.weight,
            "matched_terms": [[t, w] for t, w in self.matched_terms],
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result: the chunk, its document's title and path, and the evidence."""

    rank: int
    score: float
    chunk: Chunk
    title: str
    path: str
    evidence: tuple[Evidence, ...] = ()

    @property
    def doc_id(self) -> str:
        """The document's stable id (its path, or its record id)."""
        return self.chunk.doc_id

    @property
    def chunk_id(self) -> str:
        """The chunk's stable id, ``<document id>#<position>`` (see :class:`Chunk`)."""
        return self.chunk.id

    @property
    def text(self) -> str:
        return self.chunk.text

    def to_dict(self) -> dict[str, Any]:
        """The hit as JSON-ready data (what ``twokeys search --json`` prints)."""
        return {
            "rank": self.rank,
            "score": self.score,
            "doc_id": self.doc_id,
            "chunk_id": self.chunk_id,
            "path": self.path,
            "title": self.title,
            "heading": self.chunk.heading,
            "start": self.chunk.start,
            "end": self.chunk.end,
            "text": self.text,
            "evidence": [e.to_dict() for e in self.evidence],
        }
