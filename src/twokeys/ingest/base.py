"""What every reader shares: the skip/warning record and the reader interface.

A reader turns one file into documents (:class:`~twokeys.types.Document`, with
:attr:`~twokeys.types.Document.segments` located where it can: pages, slides, cells)
and reports what it left out or repaired through ``report``; it never raises for a bad
file. Readers live one format a module under :mod:`twokeys.ingest.readers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from twokeys.types import Document


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file (or, for JSONL, one line of it) left out of an ingest, and why.

    With ``kept`` the file was indexed all the same, after a repair the reason names
    (an undecodable file name, a lone surrogate replaced): a warning, not a skip.
    With ``keep_indexed`` the file could not be read this time (damaged, encrypted, its
    reader's extra missing): what an index already holds of it is kept, not deleted.
    ``count`` > 1 stands for that many files skipped for one reason (a missing extra,
    said once per run).
    """

    path: str
    reason: str
    line: int | None = field(default=None, kw_only=True)
    kept: bool = field(default=False, kw_only=True)
    keep_indexed: bool = field(default=False, kw_only=True)
    count: int = field(default=1, kw_only=True)
    #: the files a skip of ``count`` > 1 stands for
    paths: tuple[str, ...] = field(default=(), kw_only=True)

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path} line {self.line}"
        return f"{where}: {self.reason}" if self.kept else f"skipped {where}: {self.reason}"


OnSkip = Callable[[SkippedFile], None]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file for a reader: where it is, its id/path in the index (``rel``), its kind
    (by suffix), and the prefix of record ids for a file of records (JSONL)."""

    path: Path
    rel: str
    kind: str
    id_prefix: str = ""


class Reader(Protocol):
    """A format's reader: the documents of one file, reporting skips and warnings."""

    def __call__(self, source: SourceFile, report: OnSkip) -> Iterator[Document]: ...


def unix_newlines(text: str) -> str:
    """``text`` with ``\\r\\n`` and ``\\r`` as ``\\n`` (one search for ``\\r`` first: the two
    replaces cost more than that where there is none, nearly everywhere)."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
