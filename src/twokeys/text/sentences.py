"""Where prose splits into sentences: one rule for chunking, context packing, quotes and grounding.

:func:`sentence_spans` splits one stretch of prose (a paragraph, a list item; line
breaks inside it are soft wraps). A sentence ends after a run of ``.``, ``!`` or ``?``
(with any closing quotes, brackets or emphasis marks) that is followed by whitespace
and then an uppercase letter, a digit or an opening quote, bracket or emphasis mark,
except when the dot ends an abbreviation or an initial (``e.g.``, ``U.S.``, ``Dr.``,
``J.``) or the number opening a sentence (``1.``: a numbered list's marker). A full
stop, exclamation or question mark of CJK text (``。！？``) ends a sentence whether or
not a space follows, as CJK text puts none. Punctuation with no whitespace after it
never splits, so ``2.5``, ``qwen2.5:14b``, ``1.2.10``, ``foo.bar()`` and
``/etc/grub.d`` stay whole.

:func:`split_sentences` splits a passage that may hold Markdown: lines that start a list
item, table row, heading, quote or fence, and lines after one ending in ``. ! ? : ;``,
start a new piece; a fenced code block is one piece; every other piece is prose, split
by :func:`sentence_spans`.

Spans are ``(start, end)`` character offsets, whitespace trimmed, never empty.

Query decomposition (:mod:`twokeys.rag.decompose`) does not use these rules: it cuts a
typed question at ``?``, ``;`` and clause starts, lowercase or not, which prose rules
must not do.
"""

from __future__ import annotations

import re
from types import ModuleType

_kernel: ModuleType | None
try:  # the compiled sentence_spans (``_kernel.c``); the same spans without it
    from twokeys.text import _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None

_CLOSERS = "\"'”’)\\]*_`"
_CJK_CLOSERS = "」』）】〕〉》”’"
# a sentence end; after Western punctuation only when whitespace follows (checked in code:
# one character class is faster to scan for than an alternation)
_SENTENCE_END = re.compile(rf"[.!?。！？]+[{_CJK_CLOSERS}{_CLOSERS}]*")
_NEXT_NON_SPACE = re.compile(r"\S")
_SENTENCE_OPENERS = frozenset("\"'“‘([`*")
_OPENERS_BEFORE_WORD = "\"'“‘([*_`"
_ABBREVIATION = re.compile(
    r"(?:[^\W\d_]\.)+"  # initials and dotted forms: "J.", "U.S.", "e.g.", "i.e."
    r"|(?:etc|vs|cf|al|approx|ca|dr|mr|mrs|ms|prof|sr|jr|st|no|nos|fig|figs|eq|vol|ed|pp"
    r"|inc|ltd|co|corp|dept|resp|incl|ref|sec)\.",
    re.IGNORECASE,
)
_LONGEST_LISTED = 6  # letters of the longest word listed in _ABBREVIATION ("approx")
_LIST_NUMBER = re.compile(r"\d{1,9}")  # "1." opening a sentence: a numbered list's marker
_LINE_START = re.compile(r"\s*(?:[-*+]\s|\d{1,9}[.)]\s|\||#{1,6}\s|```|~~~|>)")
_FENCE = re.compile(r"\s*(```|~~~)")
_TERMINAL = re.compile(r"[.!?:;。！？]([\"'”’)\]*_`」』）]*)$")


def is_fence(line: str) -> bool:
    """Whether ``line`` opens or closes a fenced code block (```` ``` ```` or ``~~~``)."""
    return _FENCE.match(line) is not None


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The sentences of the prose ``text[start:end]`` (see the module docstring)."""
    end = len(text) if end is None else end
    if _kernel is not None:
        spans: list[tuple[int, int]] = _kernel.sentence_spans(text, start, end, _is_abbreviation)
        return spans
    return python_sentence_spans(text, start, end)


def python_sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """:func:`sentence_spans` in Python: the reference the compiled one is tested against,
    and the one used where it is not built."""
    current, end = trim_span(text, start, end)
    out = []
    for m in _SENTENCE_END.finditer(text, current, end):
        first = text[m.start()]
        western = first in ".!?"
        if western and (m.end() >= end or not text[m.end()].isspace()):
            continue
        nxt = _NEXT_NON_SPACE.search(text, m.end(), end)
        if nxt is None:
            break
        if western:
            c = text[nxt.start()]
            if not (c.isupper() or c.isdigit() or c in _SENTENCE_OPENERS):
                continue
            if first == "." and (
                _is_abbreviation(text, current, m.start())
                or _LIST_NUMBER.fullmatch(text, current, m.start())
            ):
                continue
        out.append((current, m.end()))  # both ends at non-space characters
        current = nxt.start()
    if current < end:
        out.append((current, end))
    return out


def split_sentences(text: str) -> list[tuple[int, int]]:
    """The sentences, list items, lines and code blocks of a passage that may hold
    Markdown, in order (see the module docstring)."""
    pieces: list[tuple[int, int]] = []
    start: int | None = None
    fence: str | None = None
    pos = prev_end = 0
    for line in text.splitlines(keepends=True):
        line_start, line_end = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
                if start is not None:
                    pieces.append((start, line_end))
                    start = None
            continue
        opener = _FENCE.match(line)
        if not stripped or opener or _LINE_START.match(line):
            if start is not None:
                pieces.append((start, prev_end))
                start = None
            if opener:
                fence = opener.group(1)
                start = line_start
                continue
        if not stripped:
            continue
        if start is None:
            start = line_start
        prev_end = line_end
        if _TERMINAL.search(stripped):
            pieces.append((start, line_end))
            start = None
    if start is not None:
        pieces.append((start, len(text) if fence is not None else prev_end))
    out: list[tuple[int, int]] = []
    for a, b in pieces:
        if text[a:b].lstrip().startswith(("```", "~~~")):
            out.append(trim_span(text, a, b))
        else:
            out.extend(sentence_spans(text, a, b))
    return [(a, b) for a, b in out if a < b]


def _is_abbreviation(text: str, floor: int, dot: int) -> bool:
    """Whether the word ending at the dot ``text[dot]`` is an abbreviation or an initial."""
    if dot - floor > _LONGEST_LISTED and text[dot - _LONGEST_LISTED - 1 : dot].isalnum():
        return False  # the word ends in more letters than any listed one, and not in "x."
    begin = dot
    while begin > floor and not text[begin - 1].isspace():
        begin -= 1
    return bool(_ABBREVIATION.fullmatch(text[begin : dot + 1].lstrip(_OPENERS_BEFORE_WORD)))


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` moved inward past whitespace at both ends."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
