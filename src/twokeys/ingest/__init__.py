"""Ingestion: turn a folder or file of Markdown, text, reStructuredText, HTML or JSONL
into :class:`~twokeys.types.Document` values."""

from __future__ import annotations

from twokeys.ingest.files import SUPPORTED_SUFFIXES, SkippedFile, load_documents

__all__ = ["SUPPORTED_SUFFIXES", "SkippedFile", "load_documents"]
