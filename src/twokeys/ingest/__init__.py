"""Ingestion: turn a folder or file of Markdown, text, reStructuredText, HTML, JSONL,
PDF, Word, PowerPoint or notebooks into :class:`~twokeys.types.Document` values
(readers: :mod:`twokeys.ingest.readers`).

The names below load :mod:`twokeys.ingest.files` on first use (PEP 562), so importing a
small module of this package (``twokeys.ingest.limits``) costs nothing more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twokeys.ingest.files import SUPPORTED_SUFFIXES, SkippedFile, load_documents

__all__ = ["SUPPORTED_SUFFIXES", "SkippedFile", "load_documents"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from twokeys.ingest import files

        return getattr(files, name)
    raise AttributeError(f"module 'twokeys.ingest' has no attribute {name!r}")
