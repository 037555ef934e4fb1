"""The reader of PDF files, with PDFium (``pypdfium2``, the ``pdf`` extra).

Chosen on measured figures (``benchmarks/pdf_extract.py``): PDFium extracts many times
faster than pypdf and markitdown and its text retrieves as well. Each page is one
segment located by its number (1-based): ``manual.pdf p. 12``. Small pages may share a
chunk, which then says ``pp. 12-13``. What extraction leaves is cleaned
(:mod:`twokeys.ingest.pdftext`): running headers and footers, line-end hyphens,
ligatures and odd spaces; a two-column page is read column by column. The outline
(bookmarks), where there is one, gives each part of a page its section path, split
where the bookmark's title starts on the page.

A file that cannot be read is one named warning (path and reason), counted in the
run's summary, and what an index holds of it is kept: a zero-byte file, an encrypted
one, a damaged or truncated one, one with no text layer at all (a scan: no OCR). Pages
without text in a file with some are named in one warning. At most
:data:`MAX_PAGES` pages of a file are read (the rest named).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium  # the pdf extra: imported only when a PDF is met
import pypdfium2.raw as pdfium_c

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile, os_reason
from twokeys.ingest.pdfheadings import StyledLine, detect_headings
from twokeys.ingest.pdftext import Outline, clean_pages, page_sections
from twokeys.types import Document, Locator, Segment

MAX_PAGES = 20_000  # pages read of one file; the rest are named in a warning
_COLUMN_SHARE = 0.35  # of a page's text lines on each side of the middle: two columns
_BOLD_NAME = re.compile(r"bold|black|heavy|demi|cmbx|-bd\b|bd$", re.IGNORECASE)
_FORCE_BOLD = 1 << 18  # the font descriptor's ForceBold flag


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    rel = source.rel
    try:
        size = source.path.stat().st_size
        mtime = source.path.stat().st_mtime
    except OSError as exc:
        report(SkippedFile(rel, f"unreadable ({os_reason(exc)})", keep_indexed=True))
        return
    if size == 0:
        report(SkippedFile(rel, "empty file (0 bytes), not a PDF", keep_indexed=True))
        return
    try:
        pdf = pdfium.PdfDocument(str(source.path))
    except pdfium.PdfiumError as exc:
        report(SkippedFile(rel, _open_problem(str(exc)), keep_indexed=True))
        return
    try:
        yield from _read_open(pdf, source, mtime, report)
    finally:
        pdf.close()


def _open_problem(message: str) -> str:
    lowered = message.lower()
    if "password" in lowered or "security" in lowered:
        return "encrypted PDF (it needs a password); not read"
    if "format" in lowered or "file" in lowered:
        return f"damaged or not a PDF ({message}); not read"
    return f"damaged PDF ({message}); not read"


def _read_open(
    pdf: pdfium.PdfDocument, source: SourceFile, mtime: float, report: OnSkip
) -> Iterator[Document]:
    rel = source.rel
    n_pages = len(pdf)
    if n_pages == 0:
        report(SkippedFile(rel, "damaged PDF (no pages); not read", keep_indexed=True))
        return
    read_pages = min(n_pages, MAX_PAGES)
    outline = _outline(pdf, read_pages)
    styled: list[StyledLine] | None = None if outline else []  # headings when no bookmarks
    raw_pages: list[str] = []
    try:
        for index in range(read_pages):
            raw_pages.append(_page_text(pdf, index, styled))
    except pdfium.PdfiumError as exc:
        report(
            SkippedFile(rel, f"damaged PDF (page {len(raw_pages) + 1}: {exc}); not read",
                        keep_indexed=True)
        )  # fmt: skip
        return
    if read_pages < n_pages:
        report(SkippedFile(rel, f"{n_pages:,} pages: only the first {MAX_PAGES:,} are read"))
    pages = clean_pages(raw_pages)
    empty = [i + 1 for i, text in enumerate(pages) if not text.strip()]
    if len(empty) == len(pages):
        report(
            SkippedFile(
                rel,
                f"no text layer on any of its {len(pages)} pages (a scan? no OCR); not read",
                keep_indexed=True,
            )
        )
        return
    if empty and len(empty) * 10 > len(pages):  # a few blank pages are normal
        report(
            SkippedFile(
                rel,
                f"{len(empty)} of {len(pages)} pages have no text layer (scanned? no OCR): "
                f"pages {_ranges(empty)} are not searchable",
                kept=True,
            )
        )
    if styled:
        outline = detect_headings(styled, read_pages)
    text, segments = _layout(pages, outline)
    yield Document(
        id=rel,
        title=_title(pdf, pages) or Path(rel).stem,
        text=text,
        path=rel,
        mtime=mtime,
        sha256=_sha256(source.path),
        kind="pdf",
        metadata={"pages": n_pages},
        segments=tuple(segments),
    )


def _page_text(pdf: pdfium.PdfDocument, index: int, styled: list[StyledLine] | None) -> str:
    """A page's text in reading order: column by column when it has two. Its lines with
    their font size and weight are added to ``styled`` unless it is None."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            width = page.get_width()
            whole = None
            if styled is not None:
                whole = str(textpage.get_text_range())
                styled.extend(_styled_lines(textpage, whole, index))
            if _two_columns(textpage, width):
                height = page.get_height()
                middle = width / 2
                first = textpage.get_text_bounded(0, 0, middle, height)
                second = textpage.get_text_bounded(middle, 0, width, height)
                return f"{first}\n{second}"
            return whole if whole is not None else str(textpage.get_text_range())
        finally:
            textpage.close()
    finally:
        page.close()


def _styled_lines(textpage: pdfium.PdfTextPage, text: str, page: int) -> list[StyledLine]:
    """Each non-blank line of a page's text with its font size (the smallest of its
    first, middle and last character's) and whether its middle character is bold.
    PDFium's text has one character per character index, line breaks included."""
    if len(text) != textpage.count_chars():
        return []  # characters outside the BMP: indexes would not match
    raw = textpage.raw
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    out: list[StyledLine] = []
    at = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped:
            first = at + len(line) - len(line.lstrip())
            last = at + len(line.rstrip()) - 1
            middle = (first + last) // 2
            size = min(pdfium_c.FPDFText_GetFontSize(raw, i) for i in (first, middle, last))
            n = pdfium_c.FPDFText_GetFontInfo(raw, middle, name, len(name), ctypes.byref(flags))
            font = name.value.decode("latin-1", "replace") if 0 < n <= len(name) else ""
            bold = bool(_BOLD_NAME.search(font)) or bool(flags.value & _FORCE_BOLD)
            out.append(StyledLine(page, stripped, float(size), bold))
        at += len(line) + 1
    return out


def _two_columns(textpage: pdfium.PdfTextPage, width: float) -> bool:
    """Whether the page's text lines fall into two columns (many lines on either side
    of the middle, few across it)."""
    n = textpage.count_rects()
    if n < 12:
        return False
    middle = width / 2
    left = right = across = 0
    for i in range(n):
        x0, _, x1, _ = textpage.get_rect(i)
        if x1 <= middle:
            left += 1
        elif x0 >= middle:
            right += 1
        else:
            across += 1
    share = _COLUMN_SHARE * n
    return bool(left >= share and right >= share and across < 0.1 * n)


def _outline(pdf: pdfium.PdfDocument, n_pages: int) -> Outline:
    """(page index, level, title) of each bookmark that names a page, in order."""
    found: Outline = []
    try:
        for mark in pdf.get_toc(max_depth=8):
            dest = mark.get_dest()
            index = dest.get_index() if dest is not None else None
            title = " ".join((mark.get_title() or "").split())
            if index is not None and 0 <= index < n_pages and title:
                found.append((int(index), int(mark.level), title))
    except (pdfium.PdfiumError, ValueError):
        return []
    return found


def _layout(pages: list[str], outline: Outline) -> tuple[str, list[Segment]]:
    """The document text (pages joined by a blank line) and a segment per page, or per
    part of a page where a bookmark's section starts."""
    parts: list[str] = []
    segments: list[Segment] = []
    at = 0
    for number, (text, sections) in enumerate(
        zip(pages, page_sections(pages, outline), strict=True), 1
    ):
        if not text.strip():
            continue
        if parts:
            parts.append("\n\n")
            at += 2
        parts.append(text)
        for start, end, section in sections:
            locator = Locator(page=number, section=section or None)
            segments.append(Segment(at + start, at + end, locator, joinable=True))
        at += len(text)
    return "".join(parts), segments


def _title(pdf: pdfium.PdfDocument, pages: list[str]) -> str:
    try:
        title = " ".join(str(pdf.get_metadata_value("Title")).split())
    except (pdfium.PdfiumError, KeyError, ValueError):
        title = ""
    if 3 <= len(title) <= 120 and not title.lower().startswith(("untitled", "microsoft word")):
        return title
    for text in pages:
        for line in text.split("\n"):
            line = line.strip()
            if 3 <= len(line) <= 120:
                return line
    return ""


def _ranges(numbers: list[int]) -> str:
    out: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out[:10]) + (", ..." if len(out) > 10 else "")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
