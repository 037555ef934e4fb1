"""Ingestion: turn a folder or file of Markdown, text, reStructuredText, HTML, JSONL,
PDF, Word, PowerPoint or notebooks into :class:`~twokeys.types.Document` values
(readers: :mod:`twokeys.ingest.readers`)."""

from __future__ import annotations

from twokeys.ingest.files import SUPPORTED_SUFFIXES, SkippedFile, load_documents

__all__ = ["SUPPORTED_SUFFIXES", "SkippedFile", "load_documents"]
