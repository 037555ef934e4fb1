"""Cleaning the text a PDF library extracts, page by page (pure text, no PDF library).

* Characters: ligatures (``ﬁ`` ``ﬂ`` ...) spelt out, odd spaces (no-break, thin, em,
  ideographic) made plain spaces, zero-width characters and soft hyphens dropped,
  ``\\r\\n`` made ``\\n``.
* Line-end hyphens: ``retrie-`` / ``val`` is joined to ``retrieval`` when both sides are
  lower-case letters, unless the hyphenated form occurs elsewhere in the document and
  the joined one does not; a hyphen after or before a digit, a capital or another
  hyphen belongs to a token (``E-4821``, ``--no-verify``, ``utf-8``) and stays, the
  line break alone removed. PDFium marks a hyphen it took for a line-end one with
  U+FFFE; it gets the same rule.
* Running headers and footers: a line among the first or last two of a page that
  repeats (digits aside) on at least three pages and a twentieth of them, or that is
  only a page number (``12``, ``Page 12``, ``- 12 -``, ``12 of 300``), is removed.
"""

from __future__ import annotations

import re
from collections import Counter

#: (page index, level, title) of each outline entry, in document order
Outline = list[tuple[int, int, str]]

_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2004": " ",
        "\u2005": " ",
        "\u2006": " ",
        "\u2007": " ",
        "\u2008": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u205f": " ",
        "\u3000": " ",
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\u2060": None,
        "\ufeff": None,
        "\u00ad": None,
        "\x00": None,
        "\x02": "\ufffe",  # some producers' hyphenation mark: treated as PDFium's
        "\r": None,
        # other C0/C1 controls (a font without a Unicode map: gnuplot's bullets): spaces
        **{
            chr(c): " "
            for c in [*range(0x01, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]
            if c != 0x02
        },
    }
)
# a hyphen at a line end (or PDFium's U+FFFE mark, line break already gone)
_BREAK = re.compile(r"(?<!\S)(\S+)(?:-[ \t]*\n[ \t]*|\ufffe[ \t]*\n?[ \t]*)(\S+)")
_LOWER_WORD = re.compile(r"[^\W\d_]+")
_WORD = re.compile(r"\w[\w-]*\w|\w")
_PAGE_NUMBER = re.compile(
    r"(?:page\s+)?[-–—]?\s*(?:\d{1,5}|[ivxlcdm]{1,7})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,5})?",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d+")
_EDGE_LINES = 2


def normalise(text: str) -> str:
    """Ligatures spelt out, odd spaces plain, invisible characters dropped."""
    return text.translate(_LIGATURES)


def clean_pages(pages: list[str]) -> list[str]:
    """Each page's text, cleaned (see the module doc); empty for a page with no text."""
    pages = [normalise(p) for p in pages]
    pages = _drop_running_lines(pages)
    words = Counter(w.lower() for page in pages for w in _WORD.findall(page))
    return [_join_breaks(p, words).strip() for p in pages]


def _join_breaks(text: str, words: Counter[str]) -> str:
    if "-" not in text and "\ufffe" not in text:
        return text

    def join(m: re.Match[str]) -> str:
        left, right = m.group(1), m.group(2)
        if (
            _is_word_part(left)
            and _is_word_part(right)
            and left[-1].islower()
            and right[0].islower()
        ):
            joined = (left + right).lower()
            hyphened = f"{left}-{right}".lower()
            core = _core(joined)
            if words[_core(hyphened)] > 0 and words[core] == 0:
                return f"{left}-{right}"
            return left + right
        return f"{left}-{right}"

    return _BREAK.sub(join, text).replace("\ufffe", "-")


def _is_word_part(fragment: str) -> bool:
    """Letters only (trailing punctuation aside): a piece of a word broken at a line end."""
    core = fragment.strip(".,;:!?)(\"'’”“[]")
    return bool(core) and _LOWER_WORD.fullmatch(core) is not None


def _core(word: str) -> str:
    return word.strip(".,;:!?)(\"'’”“[]")


def _drop_running_lines(pages: list[str]) -> list[str]:
    """Remove running headers/footers and bare page numbers at page edges."""
    if len(pages) < 3:
        return [_drop_page_numbers(p) for p in pages]
    counts: Counter[str] = Counter()
    for page in pages:
        counts.update({_key(line) for line in _edge_lines(page)})
    threshold = max(3, len(pages) // 20)
    running = {key for key, n in counts.items() if n >= threshold and key}
    out = []
    for page in pages:
        lines = page.split("\n")
        edges = set(_edge_indexes(lines))
        kept = [
            line
            for i, line in enumerate(lines)
            if i not in edges or (_key(line) not in running and not _is_page_number(line))
        ]
        # a page of edge lines only (a slide, a one-line page) keeps its text
        out.append("\n".join(kept) if any(k.strip() for k in kept) else page)
    return out


def _drop_page_numbers(page: str) -> str:
    lines = page.split("\n")
    edges = set(_edge_indexes(lines))
    return "\n".join(
        line for i, line in enumerate(lines) if i not in edges or not _is_page_number(line)
    )


def _edge_indexes(lines: list[str]) -> list[int]:
    """Indexes of the first and last two non-blank lines (one on a short page)."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    edge = _EDGE_LINES if len(filled) > 3 * _EDGE_LINES else 1  # a short page: one each
    return filled[:edge] + filled[-edge:]


def _edge_lines(page: str) -> list[str]:
    lines = page.split("\n")
    return [lines[i] for i in _edge_indexes(lines)]


def _key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.split()).lower())


def _is_page_number(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and _PAGE_NUMBER.fullmatch(stripped) is not None


def page_sections(pages: list[str], outline: Outline) -> list[list[tuple[int, int, str]]]:
    """For each page, its parts ``(start, end, section path)``: one part, under the
    section open at the page's top, unless outline entries start on it; then a new
    part where the entry's title is found in the page text (or at the top)."""
    by_page: dict[int, list[tuple[int, str]]] = {}
    for index, level, title in outline:
        by_page.setdefault(index, []).append((level, title))
    path: list[tuple[int, str]] = []
    out: list[list[tuple[int, int, str]]] = []
    open_path = ""  # the section open at the top of the page
    for index, text in enumerate(pages):
        starts: list[tuple[int, str]] = []  # (offset, path after the entry)
        search_from = 0
        for level, title in by_page.get(index, []):
            path = [(lv, t) for lv, t in path if lv < level] + [(level, title)]
            found = _find_title(text, title, search_from)
            offset = found if found >= 0 else search_from
            search_from = offset
            starts.append((offset, _joined(path)))
        if not starts:
            out.append([(0, len(text), _joined(path))])
            continue
        parts: list[tuple[int, int, str]] = []
        edges = [(0, open_path), *starts]
        merged: list[tuple[int, str]] = []
        for offset, section in edges:  # entries at the same offset: the deepest wins
            if merged and merged[-1][0] == offset:
                merged[-1] = (offset, section)
            else:
                merged.append((offset, section))
        for (start, section), (end, _) in zip(merged, [*merged[1:], (len(text), "")], strict=True):
            if start < end and text[start:end].strip():
                parts.append((start, end, section))
        out.append(parts or [(0, len(text), starts[-1][1])])
        open_path = starts[-1][1]
    return out


def _joined(path: list[tuple[int, str]]) -> str:
    return " > ".join(title for _, title in path)


def _find_title(text: str, title: str, start: int) -> int:
    """Where ``title`` starts a line of ``text`` (spaces and case aside), from
    ``start``; -1 if it starts none."""
    words = title.split()
    if not words:
        return -1
    pattern = r"^[ \t]*" + r"\s+".join(re.escape(w) for w in words[:8])
    m = re.compile(pattern, re.IGNORECASE | re.MULTILINE).search(text, start)
    return m.start() if m else -1
