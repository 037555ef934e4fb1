"""Headings found in a PDF's text layer, for a PDF without an outline (pure, no PDF library).

The reader gives every text line of every page with its font size and whether its font
is bold (:class:`StyledLine`); :func:`detect_headings` returns an :data:`Outline`, as the
bookmarks would, which :func:`twokeys.ingest.pdftext.page_sections` turns into section
paths. The rules:

* The body size is the font size that carries most of the document's characters.
* A heading is a short line (at most :data:`MAX_WORDS` words, no sentence end) of words
  (a word of three letters or more, with a vowel if it is in ASCII: not a music or
  symbol font's glyph run; mostly letters), set in a bold font at least
  :data:`BOLD_RATIO` times the body size, in a plain one at least :data:`PLAIN_RATIO`
  times it (code set a point larger than the prose is not a heading), or in a bold font
  of about the body size when it is numbered (``2.3 Title``).
* Headings of one style (size, bold) are one level; larger sizes are higher levels, bold
  above plain at one size, numbered bold body-size lines below every larger size.
* A style whose lines all lie on the first page of a longer document is its title page
  (the title, the authors), not a level. Nor is any line of the first page's title
  block (:func:`_title_block`): when a longer document opens with its largest type,
  the lines above the first page's first paragraph of body text or numbered heading
  (a subtitle, the authors, set in a style its sections use too). A style that
  carries more than a fifth of the document's lines is body text, not headings; a line
  among the first or last two of its page that recurs on three pages or more is a
  running header.
* Consecutive heading lines of one style on one page are one heading (a long title
  broken over lines).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from twokeys.ingest.pdftext import Outline

BOLD_RATIO = 1.12  # a bold heading's font size at least this many times the body's
PLAIN_RATIO = 1.3  # a plain (not bold) heading's
MAX_WORDS = 14  # words of a heading line
MAX_CHARS = 100  # characters of a heading line
_BODY_SHARE = 0.2  # a style carrying more of the lines than this is body text
_RUNNING_PAGES = 3  # a line at a page's edge on this many pages is a running header
_NUMBERED = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.(?:\d+\.?)*|[IVXLC]+\.)\s+\S")
_LETTERS = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]{3,}")
_VOWEL = re.compile(r"[aeiouy]", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class StyledLine:
    """One text line of a page as the PDF sets it."""

    page: int  # 0-based page index
    text: str
    size: float  # font size in points (the smallest of the line's sampled characters)
    bold: bool


def detect_headings(lines: list[StyledLine], n_pages: int) -> Outline:
    """(page index, level, title) of each heading found, in document order."""
    if not lines:
        return []
    body = _body_size(lines)
    candidates = [
        (i, style) for i, line in enumerate(lines) if (style := _heading_style(line, body))
    ]
    if not candidates:
        return []
    running = _running_lines(lines)
    title_block = _title_block(lines, body) if n_pages > 1 else set()
    by_style: dict[tuple[float, bool], list[int]] = {}
    for i, style in candidates:
        if _key(lines[i].text) not in running and i not in title_block:
            by_style.setdefault(style, []).append(i)
    kept: dict[tuple[float, bool], list[int]] = {}
    for style, found in by_style.items():
        if len(found) > _BODY_SHARE * len(lines):
            continue  # body text set large, not headings
        if n_pages > 1 and all(lines[i].page == 0 for i in found):
            continue  # the title page
        kept[style] = found
    levels = {style: rank for rank, style in enumerate(sorted(kept, reverse=True), 1)}
    heading_at = {i: style for style, found in kept.items() for i in found}
    outline: Outline = []
    previous = -2
    for i in sorted(heading_at):
        style, line = heading_at[i], lines[i]
        title = " ".join(line.text.split())
        if (
            previous == i - 1
            and heading_at.get(previous) == style
            and lines[previous].page == line.page
            and outline
            and len(outline[-1][2]) + len(title) <= 2 * MAX_CHARS
        ):
            page, level, head = outline[-1]
            outline[-1] = (page, level, f"{head} {title}")
        else:
            outline.append((line.page, levels[style], title))
        previous = i
    return outline


def _title_block(lines: list[StyledLine], body: float) -> set[int]:
    """Indexes of the first page's lines above its first paragraph of body text (two
    body-size lines in a row) or its first numbered heading, when they hold type larger
    than any later page's (of lines of words: a music or symbol font's glyph runs
    aside): a title page's title, subtitle and authors. Empty otherwise: a first page
    opening on a chapter set like the later chapters has no title block, and headings
    below an article's first paragraph or numbered (``1. Introduction``) are kept."""
    block: list[int] = []
    for i, line in enumerate(lines):
        if line.page != 0:
            break
        if i and _body_line(line, body) and _body_line(lines[i - 1], body):
            block.pop()  # the paragraph's first line
            break
        if i and _NUMBERED.match(line.text.strip()):
            break  # a numbered heading (``1. Introduction``) starts the content
        block.append(i)
    if not block:
        return set()
    opening = max((lines[i].size for i in block if _has_words(lines[i].text)), default=0.0)
    later = max((ln.size for ln in lines if ln.page > 0 and _has_words(ln.text)), default=0.0)
    return set(block) if opening > later + 0.5 else set()


def _has_words(text: str) -> bool:
    return any(_is_word(w) for w in _WORD.findall(text))


def _body_line(line: StyledLine, body: float) -> bool:
    return abs(line.size - body) <= 0.5


def _body_size(lines: list[StyledLine]) -> float:
    weight: Counter[float] = Counter()
    for line in lines:
        weight[round(line.size, 1)] += len(line.text)
    return weight.most_common(1)[0][0]


def _heading_style(line: StyledLine, body: float) -> tuple[float, bool] | None:
    """The style (size, bold) that makes ``line`` a heading, or None when it is not one."""
    text = line.text.strip()
    if not text or len(text) > MAX_CHARS or len(text.split()) > MAX_WORDS:
        return None
    if text[-1] in ".,;:" and not _NUMBERED.match(text):
        return None  # a sentence, or a line that runs on
    letters = len(_LETTERS.findall(text))
    if not _has_words(text):
        return None
    if letters < 0.5 * len(text.replace(" ", "")):
        return None
    size = round(line.size * 2) / 2  # sizes of one style differ by rounding
    if line.size >= (BOLD_RATIO if line.bold else PLAIN_RATIO) * body:
        return (size, line.bold)
    if line.bold and line.size >= 0.95 * body and _NUMBERED.match(text):
        return (round(body * 2) / 2, True)
    return None


def _is_word(word: str) -> bool:
    return not word.isascii() or bool(_VOWEL.search(word))


def _running_lines(lines: list[StyledLine]) -> set[str]:
    """Lines at a page's edge that recur (digits aside) on several pages."""
    by_page: dict[int, list[str]] = {}
    for line in lines:
        if line.text.strip():
            by_page.setdefault(line.page, []).append(_key(line.text))
    seen: Counter[str] = Counter()
    for keys in by_page.values():
        seen.update(set(keys[:2] + keys[-2:]))
    return {key for key, count in seen.items() if count >= _RUNNING_PAGES}


def _key(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.split()).lower())
