"""Small immutable values passed between the stages of the pipeline.

Ingestion yields :class:`Document`, chunking yields :class:`Chunk`, retrievers
yield :class:`ScoredChunk` runs, and the engine returns :class:`Hit` values that
carry each retriever's evidence so a caller can see why a chunk won.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

#: which chunk rows a filtered search may return (True: allowed), one entry per row
RowMask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Locator:
    """Where a passage sits inside its source file, as a reader can tell: PDF pages
    (1-based, ``page_end`` set when a passage spans pages), a slide, a notebook cell, a
    line range with the symbol it defines (code), a section number or heading, a JSONL
    record's id. Every field is optional; a plain Markdown chunk has none.

    Stored with each chunk, filterable (``page >= 10``) and printed by :meth:`label`
    (``manual.pdf p. 12``, ``deck.pptx slide 4``, ``src/app/db.py:120-148 Pool.acquire``).
    """

    page: int | None = None
    page_end: int | None = None
    slide: int | None = None
    cell: int | None = None
    line_start: int | None = None
    line_end: int | None = None
    symbol: str | None = None
    section: str | None = None
    record: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (JSON-ready)."""
        return {
            name: getattr(self, name) for name in _LOCATOR_FIELDS if getattr(self, name) is not None
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Locator:
        unknown = set(data) - set(_LOCATOR_FIELDS)
        if unknown:
            raise ValueError(f"locator: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(**{k: v for k, v in data.items() if v is not None})

    def __bool__(self) -> bool:
        return any(getattr(self, name) is not None for name in _LOCATOR_FIELDS)

    def label(self, path: str = "") -> str:
        """A citation a person reads: ``manual.pdf p. 12``, ``pages 12-13``,
        ``deck.pptx slide 4``, ``nb.ipynb cell 7``, ``db.py:120-148 Pool.acquire``,
        ``report.docx § 2.3``, ``corpus.jsonl #doc-17``."""
        parts: list[str] = []
        where = path
        if self.line_start is not None:
            end = self.line_end if self.line_end is not None else self.line_start
            span = f"{self.line_start}" if end == self.line_start else f"{self.line_start}-{end}"
            where = f"{path}:{span}" if path else f"lines {span}"
        if where:
            parts.append(where)
        if self.page is not None:
            if self.page_end is not None and self.page_end != self.page:
                parts.append(f"pp. {self.page}-{self.page_end}")
            else:
                parts.append(f"p. {self.page}")
        if self.slide is not None:
            parts.append(f"slide {self.slide}")
        if self.cell is not None:
            parts.append(f"cell {self.cell}")
        if self.symbol:
            parts.append(self.symbol)
        if self.section:
            parts.append(f"§ {self.section}")
        if self.record:
            parts.append(f"#{self.record}")
        return " ".join(parts)


def cite(path: str, locator: Locator | None, doc_id: str = "", title: str = "") -> str:
    """The citation of a passage: its locator's label, or for a record of a file of
    records (a document id other than its path) the record id and title."""
    if locator:
        return locator.label(path)
    if doc_id and doc_id != path:
        record = doc_id[len(path) + 1 :] if doc_id.startswith(path + "#") else doc_id
        short = " ".join(title.split())
        short = short if len(short) <= 80 else short[:79] + "…"
        return f'{path} #{record} "{short}"' if short else f"{path} #{record}"
    return path


_LOCATOR_FIELDS: tuple[str, ...] = (
    "page",
    "page_end",
    "slide",
    "cell",
    "line_start",
    "line_end",
    "symbol",
    "section",
    "record",
)


@dataclass(frozen=True, slots=True)
class Segment:
    """A span ``[start, end)`` of :attr:`Document.text` that a reader located (a PDF
    page, a slide, a notebook cell, a code symbol). The chunker never lets a chunk cross
    a segment's edge silently: a chunk inside one segment takes its locator; a chunk over
    several (only where a segment is smaller than a useful passage and ``joinable``) gets
    a locator spanning them (``page``..``page_end``)."""

    start: int
    end: int
    locator: Locator
    joinable: bool = False


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
    kind: str  # "markdown", "text", "html", "rst", "jsonl", "pdf", "docx", "code", ...
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: located spans of ``text`` (pages, slides, cells, symbols), in order; () if none
    segments: tuple[Segment, ...] = field(default=(), compare=False, hash=False)


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
    above the chunk, e.g. ``("Troubleshooting", "Power", "E-4821")``.

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
    #: where the chunk sits in its source file (page, slide, lines, symbol), if known
    locator: Locator | None = None

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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        """The evidence :meth:`to_dict` wrote (e.g. read back from ``twokeys serve``)."""
        return cls(
            retriever=str(data["retriever"]),
            rank=int(data["rank"]),
            score=float(data["score"]),
            fused=float(data.get("fused", 0.0)),
            weight=float(data.get("weight", 1.0)),
            matched_terms=tuple((str(t), float(w)) for t, w in data.get("matched_terms", ())),
        )


class HitSource(Protocol):
    """Where a lazy :class:`Hit` reads its chunk, title and path on first use (a local
    index's memory-mapped hit files)."""

    def chunk_with_source(self, row: int) -> tuple[Chunk, str, str]: ...


_LAZY_FIELDS = frozenset(("chunk", "title", "path"))


class _LazySource:
    """The slot where a lazy :class:`Hit` keeps its source: not a dataclass field, so
    ``fields``, ``asdict``, ``replace``, equality and hashing see only the hit's own."""

    __slots__ = ("_source",)
    #: a lazy hit's source and chunk row until its chunk is read, then None (unset in
    #: a hit built whole)
    _source: tuple[HitSource, int] | None


@dataclass(frozen=True, slots=True)
class Hit(_LazySource):
    """A search result: the chunk, its document's title and path, and the evidence.

    A search of a local index makes its hits with :meth:`lazy`: the chunk, title and path
    are read from the index's memory-mapped files the first time any of them is used
    (by the attribute, ``==``, ``hash``, ``repr``, :meth:`to_dict`, ``replace`` or a
    pickle), so a caller that reads only ranks and scores pays for no text. Either way
    the hit is the same value: equal to, and hashed and printed as, the hit built with
    every field given.
    """

    rank: int
    score: float
    chunk: Chunk
    title: str
    path: str
    evidence: tuple[Evidence, ...] = ()

    @classmethod
    def lazy(
        cls, rank: int, score: float, source: HitSource, row: int, evidence: tuple[Evidence, ...]
    ) -> Hit:
        """The hit of chunk ``row`` of ``source``, its chunk, title and path read on first use."""
        hit = _new(cls)
        _set(hit, "rank", rank)
        _set(hit, "score", score)
        _set(hit, "evidence", evidence)
        _set(hit, "_source", (source, row))
        return hit

    if not TYPE_CHECKING:  # (for mypy, Hit has only its declared attributes)

        def __getattr__(self, name: str) -> Any:
            # reached only for an unset slot: a lazy hit's chunk, title or path, not yet read
            if name not in _LAZY_FIELDS:
                raise AttributeError(f"'Hit' object has no attribute {name!r}")
            source = _get(self, "_source")
            if source is not None:
                chunk, title, path = source[0].chunk_with_source(source[1])
                _set(self, "chunk", chunk)
                _set(self, "title", title)
                _set(self, "path", path)
                _set(self, "_source", None)
            return _get(self, name)

    def __reduce__(self) -> tuple[type[Hit], tuple[Any, ...]]:
        # pickled and copied with every field read (a lazy hit's source stays behind)
        return (Hit, (self.rank, self.score, self.chunk, self.title, self.path, self.evidence))

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

    @property
    def locator(self) -> Locator | None:
        """Where the passage sits in its file (page, slide, lines), if the reader knew."""
        return self.chunk.locator

    @property
    def cite(self) -> str:
        """The citation a person reads: ``manual.pdf p. 12``; a record of a JSONL file by
        its id and title (``corpus.jsonl #4983 "Title"``); else the path alone."""
        return cite(self.path, self.chunk.locator, self.doc_id, self.title)

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
            "heading_path": list(self.chunk.heading_path),
            "start": self.chunk.start,
            "end": self.chunk.end,
            "locator": self.locator.to_dict() if self.locator else {},
            "cite": self.cite,
            "text": self.text,
            "evidence": [e.to_dict() for e in self.evidence],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hit:
        """The hit :meth:`to_dict` wrote: equal to the original (read back from JSON, as
        :class:`twokeys.client.Client` does with ``twokeys serve``'s answers). A
        :class:`ValueError` names a missing or malformed field."""
        try:
            doc_id = str(data["doc_id"])
            chunk_id = str(data["chunk_id"])
            head, sep, position = chunk_id.rpartition("#")
            if not sep or head != doc_id or not position.isdigit():
                raise ValueError(f"chunk_id {chunk_id!r} is not '{doc_id}#<position>'")
            if "heading_path" in data:
                heading_path = tuple(str(h) for h in data["heading_path"])
            else:  # an older server: the joined heading
                heading = str(data.get("heading", ""))
                heading_path = tuple(heading.split(HEADING_SEPARATOR)) if heading else ()
            locator = Locator.from_dict(data.get("locator") or {})
            chunk = Chunk(
                doc_id=doc_id,
                position=int(position),
                text=str(data["text"]),
                start=int(data["start"]),
                end=int(data["end"]),
                heading_path=heading_path,
                locator=locator or None,
            )
            return cls(
                rank=int(data["rank"]),
                score=float(data["score"]),
                chunk=chunk,
                title=str(data["title"]),
                path=str(data["path"]),
                evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence", ())),
            )
        except KeyError as exc:
            raise ValueError(f"hit: missing field {exc.args[0]!r}") from None
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"hit: malformed ({exc})") from None


_new = object.__new__
_set = object.__setattr__
_get = object.__getattribute__
