"""The reader of Word files (``.docx``), with python-docx (the ``office`` extra).

Paragraphs and tables are read in body order. Heading styles (``Title``, ``Heading 1``
..) start sections: each section is a segment whose locator's ``section`` is its heading
path (``report.docx § Results > Costs``), which heads its chunks. List paragraphs keep
their items (``- item``, indented by level); a table becomes readable rows, each cell
with its column's header (``Model: E-4821; Voltage: 12 V``). A legacy ``.doc`` is a
named skip (see :data:`~twokeys.ingest.readers.NOT_READ`); a damaged file or a
decompression bomb is refused before python-docx opens it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docx  # the office extra: imported only when a .docx is met
from docx.table import Table
from docx.text.paragraph import Paragraph

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile
from twokeys.ingest.readers.office import checked_container
from twokeys.types import HEADING_SEPARATOR, Document, Locator, Segment

_HEADING = re.compile(r"heading\s*(\d)", re.IGNORECASE)


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    rel = source.rel
    checked = checked_container(source, report)
    if checked is None:
        return
    sha256, mtime = checked
    try:
        document = docx.Document(str(source.path))
        blocks = list(_blocks(document))
    except Exception as exc:  # python-docx raises many kinds on bad XML
        report(
            SkippedFile(rel, f"damaged Word file ({type(exc).__name__}: {exc})", keep_indexed=True)
        )
        return
    text, segments = _layout(blocks)
    if not text.strip():
        report(SkippedFile(rel, "empty (no text in the document)"))
        return
    title = (document.core_properties.title or "").strip()
    first_heading = next((t for level, t in blocks if level in (0, 1)), "")
    yield Document(
        id=rel,
        title=title or first_heading or Path(rel).stem,
        text=text,
        path=rel,
        mtime=mtime,
        sha256=sha256,
        kind="docx",
        segments=tuple(segments),
    )


def _blocks(document: Any) -> Iterator[tuple[int | None, str]]:
    """(heading level or None, text) of each paragraph or table row run, in order."""
    body = document.element.body
    for child in body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            yield from _paragraph(Paragraph(child, document))
        elif tag == "tbl":
            rows = _table_rows(Table(child, document))
            if rows:
                yield None, "\n".join(rows)


def _paragraph(paragraph: Paragraph) -> Iterator[tuple[int | None, str]]:
    text = " ".join(paragraph.text.split())
    if not text:
        return
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style.lower() == "title":
        yield 0, text
        return
    heading = _HEADING.match(style)
    if heading:
        yield int(heading.group(1)), text
        return
    level = _list_level(paragraph, style)
    if level is not None:
        yield None, f"{'  ' * level}- {text}"
    else:
        yield None, text


def _list_level(paragraph: Paragraph, style: str) -> int | None:
    """The list nesting level of a list paragraph (numbered or bulleted), else None."""
    ppr = paragraph._p.pPr
    numpr: Any = ppr.numPr if ppr is not None else None
    if numpr is not None and numpr.ilvl is not None and numpr.ilvl.val is not None:
        return int(numpr.ilvl.val)
    if numpr is not None or style.lower().startswith("list"):
        return 0
    return None


def _table_rows(table: Table) -> list[str]:
    """The rows after the first as ``header: value; ...``; a one-row table as is."""
    grid: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell._tc is previous:  # a merged cell repeats: once
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        grid.append(cells)
    if not grid:
        return []
    header = grid[0]
    if len(grid) == 1:
        return ["; ".join(c for c in header if c)]
    rows = []
    for cells in grid[1:]:
        pairs = [
            f"{header[i]}: {value}" if i < len(header) and header[i] else value
            for i, value in enumerate(cells)
            if value
        ]
        if pairs:
            rows.append("; ".join(pairs))
    return rows


def _layout(blocks: list[tuple[int | None, str]]) -> tuple[str, list[Segment]]:
    """The body text (headings left out: they head their section's chunks) and one
    segment per section."""
    parts: list[str] = []
    segments: list[Segment] = []
    path: list[tuple[int, str]] = []
    section_start = 0
    at = 0

    def close(end: int) -> None:
        if end > section_start:
            section = HEADING_SEPARATOR.join(t for _, t in path) or None
            segments.append(Segment(section_start, end, Locator(section=section)))

    for level, text in blocks:
        if level == 0:  # the Title paragraph: the document's title, not a section
            continue
        if level is not None:
            close(at)
            path[:] = [(lv, t) for lv, t in path if lv < level] + [(level, text)]
            if parts:
                parts.append("\n\n")
                at += 2
            section_start = at
            continue
        if parts and at > section_start:
            parts.append("\n\n")
            at += 2
        parts.append(text)
        at += len(text)
    close(at)
    return "".join(parts), segments
