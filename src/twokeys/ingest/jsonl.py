"""Load documents from a JSON Lines corpus (one JSON object a line, BEIR style).

Each record needs an id (``_id`` or ``id``, a string or an integer) and a text
(``text``, or ``contents`` as in Pyserini's JSONL); ``title`` is optional and every
other field goes to ``metadata``, with BEIR's nested ``metadata`` object merged in.
The file is streamed line by line; a bad line is reported and skipped. A record
whose text and title are both empty is skipped (it has nothing to search). Lone
surrogate escapes (``"\ud800"``, valid JSON but not valid Unicode) in any field are
replaced by U+FFFD and reported, and the record is kept.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile, unix_newlines
from twokeys.sanitize import has_surrogates, replace_surrogates
from twokeys.types import Document


@dataclass(frozen=True, slots=True)
class _Record:
    id: str
    title: str
    text: str
    metadata: dict[str, Any]


def read(source: SourceFile, report: OnSkip) -> Iterator[Document]:
    """The reader interface (:mod:`twokeys.ingest.readers`): :func:`load_jsonl`."""
    return load_jsonl(source.path, source.rel, id_prefix=source.id_prefix, on_skip=report)


def load_jsonl(
    path: Path, rel: str, *, id_prefix: str, on_skip: OnSkip | None = None
) -> Iterator[Document]:
    """Yield one document per record of ``path``; ids are ``id_prefix`` + record id.

    ``rel`` is the path reported in ``Document.path`` and in skip reasons. Lines
    that are not a valid record, and records repeating an earlier id, are passed to
    ``on_skip`` with their 1-based line number.
    """

    def skip(reason: str, line: int | None = None, *, kept: bool = False) -> None:
        if on_skip is not None:
            on_skip(SkippedFile(rel, reason, line=line, kept=kept))

    try:
        mtime = path.stat().st_mtime
        stream = path.open("rb")
    except OSError as exc:
        skip(f"unreadable ({exc.strerror or exc})")
        return
    first_line: dict[str, int] = {}
    line_number = 0
    with stream:
        try:
            for line_number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                record = _parse_line(line)
                if (
                    isinstance(record, _Record)
                    and _SURROGATE_ESCAPE.search(line)
                    and (fields := _surrogate_fields(record))
                ):
                    record = _repaired(record)
                    skip(
                        f"lone surrogate escapes in {', '.join(fields)} replaced by U+FFFD",
                        line_number,
                        kept=True,
                    )
                if isinstance(record, str):
                    skip(record, line_number)
                elif record.id in first_line:
                    seen_on = first_line[record.id]
                    skip(
                        f"duplicate id {record.id!r} (first on line {seen_on})",
                        line_number,
                    )
                else:
                    first_line[record.id] = line_number
                    yield _document(record, rel, id_prefix, mtime)
        except OSError as exc:
            skip(f"read error ({exc.strerror or exc})", line_number + 1)


# A lone surrogate can only come from an escape such as "\ud800" (valid UTF-8 holds none),
# so a line without one is not searched field by field (a tenth of reading SciFact).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _surrogate_fields(record: _Record) -> list[str]:
    """The fields of ``record`` holding a lone surrogate (JSON lets ``"\ud800"`` through)."""
    fields = [name for name in ("id", "title", "text") if has_surrogates(getattr(record, name))]
    if has_surrogates(json.dumps(record.metadata, ensure_ascii=False, default=str)):
        fields.append("metadata")
    return fields


def _repaired(record: _Record) -> _Record:
    return _Record(
        id=replace_surrogates(record.id),
        title=replace_surrogates(record.title),
        text=replace_surrogates(record.text),
        metadata=_repaired_value(record.metadata),
    )


def _repaired_value(value: Any) -> Any:
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, dict):
        return {replace_surrogates(str(k)): _repaired_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_repaired_value(v) for v in value]
    return value


def _document(record: _Record, rel: str, id_prefix: str, mtime: float) -> Document:
    digest = hashlib.sha256(f"{record.title}\n{record.text}".encode()).hexdigest()
    return Document(
        id=id_prefix + record.id,
        title=record.title,
        text=record.text,
        path=rel,
        mtime=mtime,
        sha256=digest,
        kind="jsonl",
        metadata=record.metadata,
    )


def _parse_line(line: bytes) -> _Record | str:
    """Parse one line into a record, or return why it is not one."""
    try:
        decoded = line.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 ({exc.reason} at byte {exc.start})"
    try:
        obj = json.loads(decoded)
    except json.JSONDecodeError as exc:
        return f"invalid JSON ({exc.msg})"
    except RecursionError:
        return "invalid JSON (nested too deeply)"
    if not isinstance(obj, dict):
        return f"not a JSON object (got {type(obj).__name__})"
    return _record(obj)


def _record(obj: dict[str, Any]) -> _Record | str:
    id_key = "_id" if "_id" in obj else "id"
    raw_id = obj.get(id_key)
    if raw_id is None or raw_id == "":
        return "missing id (`_id` or `id`)"
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        return f"id must be a string or an integer (got {type(raw_id).__name__})"
    text_key = "text" if "text" in obj else "contents"
    text = obj.get(text_key)
    if text is None:
        return "missing text (`text` or `contents`)"
    if not isinstance(text, str):
        return f"text must be a string (got {type(text).__name__})"
    title = obj.get("title")
    if title is None:
        title = ""
    elif not isinstance(title, str):
        return f"title must be a string (got {type(title).__name__})"
    if not text.strip() and not title.strip():
        return "empty text and no title (nothing to index)"
    extra = {key: value for key, value in obj.items() if key not in (id_key, text_key, "title")}
    nested = extra.pop("metadata", None) if isinstance(extra.get("metadata"), dict) else None
    metadata = {**(nested or {}), **extra}
    return _Record(
        id=str(raw_id),
        title=title,
        text=unix_newlines(text),
        metadata=metadata,
    )
