"""Load documents from a folder or a single file.

A folder is walked in a deterministic order (entries sorted by name at each level,
depth first, with an explicit stack, so any depth is fine), skipping hidden entries.
Symbolic links are followed only to regular files inside the folder; a link to a
folder, to anything outside the folder, a dangling link, a link loop and a special
file (FIFO, socket, device) are reported and left out. A file that cannot be read or
decoded is reported through ``on_skip`` and the walk goes on: one bad file never aborts
an ingest. File names that are not valid UTF-8 are kept with U+FFFD in place of the
undecodable bytes, and reported (``SkippedFile.kept``).
"""

from __future__ import annotations

import codecs
import datetime
import errno
import hashlib
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from charset_normalizer import from_bytes

from twokeys.errors import IngestError
from twokeys.ingest.code import SUFFIXES as CODE_SUFFIXES
from twokeys.ingest.code import read_code
from twokeys.ingest.html import html_to_markdown
from twokeys.sanitize import has_surrogates, replace_surrogates
from twokeys.types import Document

_KINDS: Final = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".rst": "rst",
    ".html": "html",
    ".htm": "html",
    ".jsonl": "jsonl",
    **dict.fromkeys(CODE_SUFFIXES, "code"),
}
SUPPORTED_SUFFIXES: Final[tuple[str, ...]] = tuple(_KINDS)

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


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file (or, for JSONL, one line of it) left out of an ingest, and why.

    With ``kept`` the file was indexed all the same, after a repair the reason names
    (an undecodable file name, a lone surrogate replaced): a warning, not a skip.
    """

    path: str
    reason: str
    line: int | None = field(default=None, kw_only=True)
    kept: bool = field(default=False, kw_only=True)

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path} line {self.line}"
        return f"{where}: {self.reason}" if self.kept else f"skipped {where}: {self.reason}"


OnSkip = Callable[[SkippedFile], None]


def load_documents(
    source: Path, *, on_skip: OnSkip | None = None, exclude: Sequence[Path] = ()
) -> Iterator[Document]:
    """Yield the documents under ``source``, a folder or a single supported file.

    Ids are paths relative to the folder in POSIX form (the file name for a single
    file). Records of a ``.jsonl`` file get the ids ``<relpath>#<record id>`` in a
    folder and their bare record ids when the file itself is the source (a BEIR
    corpus). Raises :class:`IngestError` at once, before iteration, when ``source``
    does not exist or is a file of an unsupported type. Folders in ``exclude`` (the
    index being built, when it lies inside ``source``) are left out of the walk, silently.
    """
    report = on_skip if on_skip is not None else _ignore
    if source.is_dir():
        return _load_folder(source, report, exclude)
    if source.is_file():
        kind = _kind(source.name)
        if kind is None:
            supported = " ".join(SUPPORTED_SUFFIXES)
            raise IngestError(f"unsupported file type: {source} (supported: {supported})")
        return _load_file(
            source, _checked_name(source.name, report), kind, jsonl_prefix="", report=report
        )
    if source.exists():
        raise IngestError(f"not a regular file or directory: {source}")
    raise IngestError(f"no such file or directory: {source}")


def _ignore(skipped: SkippedFile) -> None:
    del skipped


def _kind(name: str) -> str | None:
    return _KINDS.get(os.path.splitext(name)[1].lower())


def _load_folder(root: Path, report: OnSkip, exclude: Sequence[Path]) -> Iterator[Document]:
    for path, rel in _walk(root, report, exclude):
        kind = _kind(path.name)
        if kind is not None:
            rel = _checked_name(rel, report)
            yield from _load_file(path, rel, kind, jsonl_prefix=f"{rel}#", report=report)


def _checked_name(rel: str, report: OnSkip) -> str:
    """``rel`` as valid text; a name that is not valid UTF-8 is reported and repaired."""
    if not has_surrogates(rel):
        return rel
    shown = replace_surrogates(rel)
    report(SkippedFile(shown, "file name is not valid UTF-8 (bytes shown as U+FFFD)", kept=True))
    return shown


def _walk(root: Path, report: OnSkip, exclude: Sequence[Path]) -> Iterator[tuple[Path, str]]:
    """Yield ``(path, relative POSIX path)`` of the regular files below ``root``."""
    real_root = os.path.realpath(root)
    excluded = {ident for p in exclude if (ident := _identity(p)) is not None}
    excluded_inodes = {inode for _, inode in excluded}
    stack = [iter(_entries(root, "", report))]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        rel, entry = item
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = entry.is_file(follow_symlinks=False)
        except OSError as exc:
            report(SkippedFile(_shown(rel), f"unreadable ({_os_reason(exc)})"))
            continue
        if is_dir:
            # the index being built, inside its own source folder, is no document
            if entry.inode() not in excluded_inodes or _identity(entry.path) not in excluded:
                stack.append(iter(_entries(Path(entry.path), rel, report)))
        elif is_file:
            yield Path(entry.path), rel
        elif is_link:
            reason = _link_problem(entry.path, real_root)
            if reason:
                report(SkippedFile(_shown(rel), reason))
            else:
                yield Path(entry.path), rel
        else:
            report(SkippedFile(_shown(rel), f"not a regular file ({_special_kind(entry)})"))


def _identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of an existing folder, the same whatever path leads to it."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _entries(folder: Path, rel_folder: str, report: OnSkip) -> list[tuple[str, os.DirEntry[str]]]:
    """The folder's visible entries, sorted by name (an unreadable folder is reported)."""
    try:
        with os.scandir(folder) as scan:
            found = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        where = _shown(rel_folder) or "."
        report(SkippedFile(where, f"unreadable directory ({_os_reason(exc)})"))
        return []
    return [
        (f"{rel_folder}/{e.name}" if rel_folder else e.name, e)
        for e in found
        if not e.name.startswith(".")
    ]


def _link_problem(path: str, real_root: str) -> str:
    """Why a symbolic link is not followed, or "" for a link to a file inside the folder."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        if exc.errno == errno.ENOENT:
            return f"dangling symbolic link (to {replace_surrogates(os.readlink(path))})"
        return f"unreadable symbolic link ({_os_reason(exc)})"
    target = os.path.realpath(path)
    if os.path.commonpath([real_root, target]) != real_root:
        return "symbolic link to outside the folder; not followed"
    if stat.S_ISDIR(info.st_mode):
        return "symbolic link to a folder; not followed (its files are indexed where they are)"
    if not stat.S_ISREG(info.st_mode):
        return "symbolic link to a special file; not followed"
    return ""


def _special_kind(entry: os.DirEntry[str]) -> str:
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError:
        return "unknown"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def _shown(rel: str) -> str:
    return replace_surrogates(rel)


def _load_file(
    path: Path, rel: str, kind: str, *, jsonl_prefix: str, report: OnSkip
) -> Iterator[Document]:
    if kind == "jsonl":
        # Imported here: jsonl.py needs SkippedFile from this module.
        from twokeys.ingest.jsonl import load_jsonl

        yield from load_jsonl(path, rel, id_prefix=jsonl_prefix, on_skip=report)
        return
    result = _read_document(path, rel, kind)
    if isinstance(result, SkippedFile):
        report(result)
    elif kind == "code":  # cut by symbol (twokeys.ingest.code)
        document, warning = read_code(result)
        if warning:
            report(SkippedFile(rel, warning, kept=True))
        yield document
    else:
        yield result


def _read_document(path: Path, rel: str, kind: str) -> Document | SkippedFile:
    try:
        raw = path.read_bytes()
        mtime = path.stat().st_mtime
    except OSError as exc:
        return SkippedFile(rel, f"unreadable ({_os_reason(exc)})")
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


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


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


def unix_newlines(text: str) -> str:
    """``text`` with ``\\r\\n`` and ``\\r`` as ``\\n`` (one search for ``\\r`` first: the two
    replaces cost more than that where there is none, nearly everywhere)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


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
