"""Text that can be stored and shown: lone surrogates out, terminal control codes out.

Python strings can hold what no UTF-8 file can: lone surrogates, from a JSON escape
such as ``"\\ud800"`` or from an undecodable byte of a file name or command-line
argument (``surrogateescape`` turns byte 0xE9 into ``"\\udce9"``). They are replaced
by U+FFFD at the edges (ingest, queries), so nothing downstream meets unencodable text.

Text shown on a terminal (document text, titles, file names, a model's answer) loses
its control characters: an escape sequence in a document must not clear the screen or
set the window title. Newlines and tabs are kept where the caller allows them.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, and C1 controls (U+0080-U+009F, CSI among them)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BREAK = re.compile("[\t\n\r\u2028\u2029]")


def has_surrogates(text: str) -> bool:
    # ASCII holds none (``isascii`` reads a flag; the search reads every character)
    return not text.isascii() and _SURROGATE.search(text) is not None


def replace_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (one for one)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def from_argv(text: str) -> str:
    """A command-line argument as valid text: undecodable bytes become U+FFFD."""
    return replace_surrogates(text)


def for_terminal(text: str, *, multiline: bool = False) -> str:
    """``text`` safe to print: control characters (ESC, BEL, CR, ...) become U+FFFD.

    With ``multiline`` newlines and tabs are kept; without, line breaks and tabs become
    spaces, so a one-line field (a title, a path) stays one line.
    """
    text = replace_surrogates(text)
    if not multiline:
        text = _BREAK.sub(" ", text)
    return _CONTROL.sub(REPLACEMENT, text)
