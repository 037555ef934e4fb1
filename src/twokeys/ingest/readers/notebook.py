"""The reader of Jupyter notebooks (``.ipynb``, nbformat 4 JSON, read with ``json``).

Markdown cells are kept as Markdown (their headings head the cells after them), code
cells as fenced code in the notebook's language; raw cells as text. Outputs are left
out. Each cell is a segment located by its number (1-based, as the notebook shows them
top to bottom): ``analysis.ipynb cell 7``; small neighbouring cells are not joined.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile, os_reason
from twokeys.types import Document, Locator, Segment


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    try:
        raw = source.path.read_bytes()
        mtime = source.path.stat().st_mtime
    except OSError as exc:
        report(SkippedFile(source.rel, f"unreadable ({os_reason(exc)})", keep_indexed=True))
        return
    try:
        notebook = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = f"not a notebook: invalid JSON ({exc})"
        report(SkippedFile(source.rel, reason, keep_indexed=True))
        return
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        report(SkippedFile(source.rel, "not a notebook: no list of cells (nbformat 4 expected)"))
        return
    language = _language(notebook.get("metadata"))
    parts: list[str] = []
    segments: list[Segment] = []
    at = 0
    for number, cell in enumerate(cells, start=1):
        text = _cell_text(cell, language)
        if not text.strip():
            continue
        if parts:
            parts.append("\n\n")
            at += 2
        parts.append(text)
        segments.append(Segment(at, at + len(text), Locator(cell=number)))
        at += len(text)
    body = "".join(parts)
    if not body.strip():
        report(SkippedFile(source.rel, "empty notebook (no cell with text)"))
        return
    yield Document(
        id=source.rel,
        title=_title(cells) or Path(source.rel).stem,
        text=body,
        path=source.rel,
        mtime=mtime,
        sha256=hashlib.sha256(raw).hexdigest(),
        kind="notebook",
        metadata={"language": language} if language else {},
        segments=tuple(segments),
    )


def _source(cell: Any) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    return source.replace("\r\n", "\n") if isinstance(source, str) else ""


def _cell_text(cell: Any, language: str) -> str:
    source = _source(cell).strip("\n")
    kind = cell.get("cell_type") if isinstance(cell, dict) else None
    if kind == "code" and source.strip():
        fence = "```"
        while fence in source:
            fence += "`"
        return f"{fence}{language}\n{source}\n{fence}"
    return source


def _language(metadata: Any) -> str:
    if not isinstance(metadata, dict):
        return ""
    for key in ("language_info", "kernelspec"):
        info = metadata.get(key)
        if isinstance(info, dict):
            name = info.get("name" if key == "language_info" else "language")
            if isinstance(name, str) and name.isidentifier():
                return name
    return ""


def _title(cells: list[Any]) -> str:
    """The first Markdown cell's first ``#`` heading."""
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            for line in _source(cell).split("\n"):
                if line.startswith("# "):
                    return line[2:].strip()
    return ""
