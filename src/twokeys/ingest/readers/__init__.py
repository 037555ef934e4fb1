"""The readers, one format a module, found by file suffix.

:data:`READERS` maps a suffix to a :class:`ReaderSpec`: the document kind, the module
whose ``read`` (a :class:`~twokeys.ingest.base.Reader`) reads it, and the optional
extra that module's library comes from. A reader's module is imported only when a file
of its kind is met, so the core imports no PDF or Office library; a new format is one
module and one line here.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from functools import cache
from typing import Final

from twokeys.ingest.base import Reader

# the suffixes of source code (the table only: tree-sitter is imported when a file is read)
from twokeys.ingest.readers.code import SUFFIXES as CODE_SUFFIXES


@dataclass(frozen=True, slots=True)
class ReaderSpec:
    """How a suffix is read: its kind, the reader's module, and for a reader whose
    library is optional, the extra that installs it and the modules it imports."""

    kind: str
    module: str
    extra: str | None = None
    requires: tuple[str, ...] = ()

    def available(self) -> bool:
        """Whether the libraries the reader needs are installed."""
        return all(_installed(name) for name in self.requires)

    def reader(self) -> Reader:
        reader: Reader = importlib.import_module(self.module).read
        return reader


@cache
def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


_TEXT = "twokeys.ingest.readers.text"
READERS: Final[dict[str, ReaderSpec]] = {
    ".md": ReaderSpec("markdown", _TEXT),
    ".markdown": ReaderSpec("markdown", _TEXT),
    ".txt": ReaderSpec("text", _TEXT),
    ".rst": ReaderSpec("rst", _TEXT),
    ".html": ReaderSpec("html", _TEXT),
    ".htm": ReaderSpec("html", _TEXT),
    ".jsonl": ReaderSpec("jsonl", "twokeys.ingest.jsonl"),
    ".pdf": ReaderSpec("pdf", "twokeys.ingest.readers.pdf", "pdf", ("pypdfium2",)),
    ".docx": ReaderSpec("docx", "twokeys.ingest.readers.docx", "office", ("docx",)),
    ".pptx": ReaderSpec("pptx", "twokeys.ingest.readers.pptx", "office", ("pptx",)),
    ".ipynb": ReaderSpec("notebook", "twokeys.ingest.readers.notebook"),
    **dict.fromkeys(
        CODE_SUFFIXES, ReaderSpec("code", "twokeys.ingest.readers.code", "code", ("tree_sitter",))
    ),
}

#: formats met often and not read, with what to do instead (a named skip)
NOT_READ: Final[dict[str, str]] = {
    ".doc": "legacy Word .doc is not read; save it as .docx",
    ".ppt": "legacy PowerPoint .ppt is not read; save it as .pptx",
    ".xls": "Excel .xls is not read",
}


def suffix_of(name: str) -> str:
    return os.path.splitext(name)[1].lower()


def spec_for(name: str) -> ReaderSpec | None:
    """The reader of a file name (by its suffix), or None."""
    return READERS.get(suffix_of(name))


def register(suffix: str, spec: ReaderSpec) -> None:
    """Read files ending in ``suffix`` (``".ext"``) with ``spec`` from now on."""
    READERS[suffix.lower()] = spec
