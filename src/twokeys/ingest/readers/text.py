"""The reader of text files: Markdown, plain text, reStructuredText and HTML.

Bytes are decoded (BOM, UTF-8, else charset-normalizer's guess), newlines made ``\\n``;
Markdown's YAML front matter becomes metadata, HTML becomes light Markdown
(:mod:`twokeys.ingest.html`), and each kind's title is found (front matter or first
``#`` heading, an underlined reST title, the HTML ``<title>``, a short first line).
"""

from __future__ import annotations

import codecs
import datetime
import hashlib
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import yaml
from charset_normalizer import from_bytes

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile, os_reason, unix_newlines
from twokeys.ingest.html import html_to_markdown
from twokeys.types import Document

_MAX_TEXT_TITLE = 120  # a longer first line of a .txt file is prose, not a title
# Longest first: the UTF-32 LE BOM starts with the UTF-16 LE one.
_BOMS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_FRONT_MATTER = re.compile(
    r"\A---[ \t]*\n(?P<body>.*?)^(?:---|\.\.\.)[ \t]*(?:\n|\Z)",
    re.DOTALL | re.MULTILINE,
)
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(?P<title>.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_RST_ADORNMENT = re.compile(r"^([=\-~*#])\1*$")
_FIRST_LINE = re.compile(r"\S[^\n]*")


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    """The one document of a text file (or its skip, reported)."""
    result = _read_document(source.path, source.rel, source.kind)
    if isinstance(result, SkippedFile):
        report(result)
    else:
        yield result


def _read_document(path: Path, rel: str, kind: str) -> Document | SkippedFile:
    try:
        raw = path.read_bytes()
        mtime = path.stat().st_mtime
    except OSError as exc:
        return SkippedFile(rel, f"unreadable ({os_reason(exc)})")
    try:
        text = _decode_text(raw)
    except _UndecodableError as exc:
        return SkippedFile(rel, exc.reason)
    stem = Path(rel).stem
    metadata: dict[str, Any] = {}
    if kind == "markdown":
        metadata, text = _split_front_matter(text)
        front_title = metadata.get("title")
        title = (str(front_title).strip() if front_title else "") or _markdown_title(text) or stem
    elif kind == "rst":
        title = _rst_title(text) or stem
    elif kind == "html":
        try:
            html_title, text = html_to_markdown(text)
        except RecursionError:
            return SkippedFile(rel, "HTML nested too deeply")
        title = html_title or stem
    else:
        title = _text_title(text) or stem
    if not text.strip():
        return SkippedFile(rel, "empty")
    return Document(
        id=rel,
        title=title,
        text=text,
        path=rel,
        mtime=mtime,
        sha256=hashlib.sha256(raw).hexdigest(),
        kind=kind,
        metadata=dict(metadata),
    )


class _UndecodableError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _decode_text(raw: bytes) -> str:
    """Decode a text file: BOM first, then strict UTF-8, then charset-normalizer's guess.

    Newlines are normalised to ``\\n``. Raises ``_UndecodableError`` for binary
    content (NUL bytes) or bytes no encoding explains.
    """
    text = _decode(raw)
    if "\x00" in text:
        raise _UndecodableError("binary file (NUL bytes)")
    return unix_newlines(text)


def _decode(raw: bytes) -> str:
    for bom, encoding in _BOMS:
        if raw.startswith(bom):
            try:
                return raw[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise _UndecodableError(f"invalid {encoding} after its BOM ({exc.reason})") from exc
    if b"\x00" in raw:
        raise _UndecodableError("binary file (NUL bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    best = from_bytes(raw).best()
    if best is None:
        raise _UndecodableError("undecodable (no text encoding fits)")
    return str(best)


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split YAML front matter from Markdown, parsed by PyYAML (``safe_load``).

    Values keep their YAML types (strings, numbers, booleans, lists, mappings); dates
    and times become ISO 8601 strings. A block that is not a YAML mapping (likely a
    thematic break around a paragraph) or not valid YAML is not front matter: the text
    is returned unchanged.
    """
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    try:
        data = yaml.safe_load(match.group("body"))
    except yaml.YAMLError:
        return {}, text
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return {}, text
    metadata = {str(key): _plain(value) for key, value in data.items() if value is not None}
    return metadata, text[match.end() :].lstrip("\n")


def _plain(value: Any) -> Any:
    """A YAML value as JSON-ready data: dates as ISO strings, containers recursively."""
    if isinstance(value, datetime.date):  # datetime.datetime is a date too
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _markdown_title(text: str) -> str:
    """The first ``# `` (level-1 ATX) heading outside fenced code blocks, or ""."""
    fence = ""
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if opening is not None:
            marker = opening.group("fence")
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = ""
            continue
        if not fence and (heading := _ATX_H1.match(line)) is not None:
            return heading.group("title").strip()
    return ""


def _rst_title(text: str) -> str:
    """The first reStructuredText section title (a line underlined at least as long), or ""."""
    lines = text.split("\n")
    for line, underline in itertools.pairwise(lines):
        candidate = line.strip()
        underline = underline.rstrip()
        if (
            candidate
            and _RST_ADORNMENT.match(candidate) is None
            and _RST_ADORNMENT.match(underline) is not None
            and len(underline) >= len(candidate)
        ):
            return candidate
    return ""


def _text_title(text: str) -> str:
    """The first non-empty line of a plain-text file when it is short enough, or ""."""
    first = _FIRST_LINE.search(text)
    if first is None:
        return ""
    line = first.group().strip()
    return line if len(line) < _MAX_TEXT_TITLE else ""
