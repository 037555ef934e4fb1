"""What the Word and PowerPoint readers share: a bounded look inside the ZIP container
before a library opens it, so a damaged file or a decompression bomb is a named skip in
bounded time and memory, never a crash or gigabytes of XML in memory."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from twokeys.ingest.base import OnSkip, SkippedFile, SourceFile, os_reason

#: the most one part of an Office file may unpack to, and all of its parts together
MAX_PART_BYTES = 256 << 20
MAX_TOTAL_BYTES = 1 << 30
_BLOCK = 1 << 20


def container_problem(path: Path) -> str | None:
    """Why ``path`` is not a ZIP container a reader may open, or None.

    Every XML part is unpacked as a stream and counted (what the headers claim is not
    trusted); unpacking stops at the limit. Media parts are left packed.
    """
    if path.stat().st_size == 0:
        return "empty file (0 bytes)"
    try:
        with zipfile.ZipFile(path) as archive:
            total = 0
            for info in archive.infolist():
                if not info.filename.endswith((".xml", ".rels")):
                    continue
                size = 0
                with archive.open(info) as part:
                    while block := part.read(_BLOCK):
                        size += len(block)
                        if size > MAX_PART_BYTES or total + size > MAX_TOTAL_BYTES:
                            return (
                                f"refused: {info.filename} unpacks to over "
                                f"{min(MAX_PART_BYTES, MAX_TOTAL_BYTES - total) >> 20} MB "
                                "(a decompression bomb?)"
                            )
                total += size
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        return f"damaged (not a readable ZIP container: {exc})"
    except NotImplementedError as exc:  # an unsupported compression method
        return f"damaged ({exc})"
    return None


def checked_container(source: SourceFile, report: OnSkip) -> tuple[str, float] | None:
    """The file's content hash and mtime when it is a container a reader may open;
    else None, with the reason reported (the index keeps what it holds of the file)."""
    try:
        problem = container_problem(source.path)
        sha256 = hashlib.sha256(source.path.read_bytes()).hexdigest()
        mtime = source.path.stat().st_mtime
    except OSError as exc:
        report(SkippedFile(source.rel, f"unreadable ({os_reason(exc)})", keep_indexed=True))
        return None
    if problem:
        report(SkippedFile(source.rel, problem, keep_indexed=True))
        return None
    return sha256, mtime
