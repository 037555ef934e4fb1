"""The reader of PowerPoint files (``.pptx``), with python-pptx (the ``office`` extra).

Each slide is one segment located by its number (1-based) with its title as section:
``deck.pptx slide 4 § Quarterly revenue``. A slide's text is its shapes' text in order
(bullets as ``- item``, indented by level; tables as ``header: value`` rows, grouped
shapes looked into) and then its speaker notes. Slides are never joined. A legacy
``.ppt`` is a named skip; a damaged file or a decompression bomb is refused before
python-pptx opens it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pptx  # the office extra: imported only when a .pptx is met
from pptx.enum.shapes import MSO_SHAPE_TYPE

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile
from twokeys.ingest.readers.office import checked_container
from twokeys.types import Document, Locator, Segment


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    rel = source.rel
    checked = checked_container(source, report)
    if checked is None:
        return
    sha256, mtime = checked
    try:
        deck = pptx.Presentation(str(source.path))
        slides = [_slide(slide) for slide in deck.slides]
    except Exception as exc:  # python-pptx raises many kinds on bad XML
        reason = f"damaged PowerPoint file ({type(exc).__name__}: {exc})"
        report(SkippedFile(rel, reason, keep_indexed=True))
        return
    parts: list[str] = []
    segments: list[Segment] = []
    at = 0
    for number, (title, body) in enumerate(slides, start=1):
        if not body.strip():
            continue
        if parts:
            parts.append("\n\n")
            at += 2
        parts.append(body)
        locator = Locator(slide=number, section=title or None)
        segments.append(Segment(at, at + len(body), locator))
        at += len(body)
    text = "".join(parts)
    if not text.strip():
        report(SkippedFile(rel, "empty (no text on any slide)"))
        return
    deck_title = (deck.core_properties.title or "").strip()
    yield Document(
        id=rel,
        title=deck_title or next((t for t, _ in slides if t), "") or Path(rel).stem,
        text=text,
        path=rel,
        mtime=mtime,
        sha256=sha256,
        kind="pptx",
        metadata={"slides": len(slides)},
        segments=tuple(segments),
    )


def _slide(slide: Any) -> tuple[str, str]:
    """(title, text) of a slide: its shapes' text, then its speaker notes. The title is
    the section (it heads the slide's chunks), so it is not repeated in the text."""
    title_shape = slide.shapes.title
    title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
    lines: list[str] = []
    for shape in slide.shapes:
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        lines += _shape_lines(shape)
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        if notes is not None and notes.text.strip():
            lines.append("Speaker notes: " + " ".join(notes.text.split()))
    if not lines and title:  # a title slide: its title is its text
        lines.append(title)
    return title, "\n".join(lines)


def _shape_lines(shape: Any) -> list[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [line for inner in shape.shapes for line in _shape_lines(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        return _table_rows(shape.table)
    if not getattr(shape, "has_text_frame", False) or not shape.has_text_frame:
        return []
    lines = []
    paragraphs = [p for p in shape.text_frame.paragraphs if p.text.strip()]
    bulleted = len(paragraphs) > 1
    for paragraph in paragraphs:
        text = " ".join(paragraph.text.split())
        lines.append(f"{'  ' * paragraph.level}- {text}" if bulleted else text)
    return lines


def _table_rows(table: Any) -> list[str]:
    grid = [[" ".join(cell.text.split()) for cell in row.cells] for row in table.rows]
    if len(grid) < 2:
        return ["; ".join(c for c in row if c) for row in grid]
    header = grid[0]
    return [
        "; ".join(
            f"{header[i]}: {v}" if i < len(header) and header[i] else v
            for i, v in enumerate(row)
            if v
        )
        for row in grid[1:]
        if any(row)
    ]
