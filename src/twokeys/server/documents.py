"""Documents sent over HTTP, read exactly as ``twokeys index`` reads files.

The bytes are written to a private temporary folder under a name with the right
suffix and read with :func:`twokeys.ingest.load_documents`, so front matter, titles
and HTML conversion behave as for a folder; the document then takes the id the client
gave (and that id as its path: nothing of the server's file system is kept).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from twokeys.engine import Index
from twokeys.errors import ConfigError
from twokeys.filters import parse_filters
from twokeys.ingest import SUPPORTED_SUFFIXES, SkippedFile, load_documents
from twokeys.ingest.readers import READERS
from twokeys.types import Document, cite

#: suffix of each ``kind`` a JSON document may name
KIND_SUFFIX = {"markdown": ".md", "text": ".txt", "html": ".html", "rst": ".rst"}
#: what an upload may be: every format ``twokeys index`` reads but JSONL (a corpus of many
#: records, not one document: add those as JSON documents)
UPLOAD_SUFFIXES = tuple(s for s in SUPPORTED_SUFFIXES if s != ".jsonl")
MAX_ID_CHARS = 512


def check_id(doc_id: str) -> str:
    """``doc_id`` if it is a usable document id, else a :class:`ConfigError` saying why."""
    if not doc_id or not doc_id.strip():
        raise ConfigError("id: is empty")
    if len(doc_id) > MAX_ID_CHARS:
        raise ConfigError(f"id: {len(doc_id)} characters; the limit is {MAX_ID_CHARS}")
    if doc_id != doc_id.strip():
        raise ConfigError(f"id: {doc_id!r} starts or ends with white space")
    if any(unicodedata.category(c).startswith("C") for c in doc_id):
        raise ConfigError(f"id: {doc_id!r} holds a control character")
    return check_inside(doc_id)


_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def check_inside(doc_id: str) -> str:
    """``doc_id`` if, read as a path, it stays inside the indexed folders: no ``..``
    part, no absolute path, no drive; else a :class:`ConfigError` saying why."""
    parts = re.split(r"[\\/]", doc_id.split("#")[0])
    if ".." in parts:
        raise ConfigError(f"id: {doc_id!r} climbs out of the indexed folders ('..')")
    if doc_id.startswith(("/", "\\")) or _DRIVE.match(doc_id):
        raise ConfigError(f"id: {doc_id!r} is an absolute path; ids are relative")
    return doc_id


def read_document(
    raw: bytes,
    doc_id: str,
    suffix: str,
    *,
    title: str | None = None,
    metadata: Mapping[str, str] | None = None,
) -> Document:
    """The document ``raw`` holds, read as a file with ``suffix`` (``.md``, ``.pdf``,
    ``.docx``, ``.py``, ...) by the reader ``twokeys index`` uses, so its locators (pages,
    slides, cells, symbols and lines) come with it."""
    check_id(doc_id)
    suffix = suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise ConfigError(
            f"{doc_id}: unsupported file type {suffix or '(none)'!r}; "
            f"use one of {', '.join(UPLOAD_SUFFIXES)}"
        )
    spec = READERS.get(suffix)
    if spec is not None and not spec.available():
        raise ConfigError(
            f"{doc_id}: reading {spec.kind} files needs the '{spec.extra}' extra on the "
            f"server: pip install 'twokeys[{spec.extra}]'"
        )
    stem = re.sub(r"[^\w.-]+", "_", Path(doc_id.split("#")[0]).stem)[:100] or "document"
    skipped: list[SkippedFile] = []
    with tempfile.TemporaryDirectory(prefix="twokeys-upload-") as tmp:
        file = Path(tmp) / f"{stem}{suffix}"
        file.write_bytes(raw)
        docs = list(load_documents(file, on_skip=skipped.append))
    if not docs:
        reason = skipped[0].reason if skipped else "no text"
        raise ConfigError(f"{doc_id}: {reason}")
    doc = docs[0]
    given = dict(metadata or {})
    extra = json.dumps([title, given], sort_keys=True).encode()
    return replace(
        doc,
        id=doc_id,
        path=doc_id,
        title=title or doc.title,
        mtime=time.time(),
        sha256=hashlib.sha256(raw + b"\0" + extra).hexdigest(),
        metadata={**doc.metadata, **given},
    )


def document_record(index: Index, doc_id: str) -> dict[str, Any] | None:
    """A document's record and its chunks (``DocumentData``), or None if there is none."""
    found = index.backend.documents([doc_id]).get(doc_id)
    if found is None:
        return None
    chunks = index.backend.chunks(range(found.first_row, found.first_row + found.n_chunks))
    return {
        "id": found.id,
        "title": found.title,
        "path": found.path,
        "kind": found.kind,
        "sha256": found.sha256,
        "metadata": dict(found.metadata),
        "chunks": [
            {
                "chunk_id": c.id,
                "position": c.position,
                "heading": c.heading,
                "start": c.start,
                "end": c.end,
                "locator": c.locator.to_dict() if c.locator else {},
                "cite": cite(found.path, c.locator, found.id, found.title),
                "text": c.text,
            }
            for c in chunks
        ],
    }


MAX_PAGE = 1000  # documents one listing page may hold


def document_page(index: Index, filters: Sequence[str], offset: int, limit: int) -> dict[str, Any]:
    """One page of the documents (in id order) the ``filters`` allow (all must hold, as
    in a search): each one's record, metadata and chunk count, and the total."""
    if offset < 0:
        raise ConfigError(f"offset: must be >= 0, got {offset}")
    if not 1 <= limit <= MAX_PAGE:
        raise ConfigError(f"limit: must be in 1..{MAX_PAGE}, got {limit}")
    wanted = parse_filters(filters)
    docs = [d for d in index.backend.all_documents() if all(f.matches(d) for f in wanted)]
    return {
        "total": len(docs),
        "offset": offset,
        "limit": limit,
        "filters": [str(f) for f in wanted],
        "documents": [
            {
                "id": d.id,
                "title": d.title,
                "path": d.path,
                "kind": d.kind,
                "sha256": d.sha256,
                "metadata": dict(d.metadata),
                "chunks": d.n_chunks,
            }
            for d in docs[offset : offset + limit]
        ],
    }
