"""Limits of ingestion that the CLI shows as defaults (kept apart from the readers, so
``twokeys --help`` imports none of them)."""

from __future__ import annotations

from typing import Final

#: a file bigger than this is skipped, and named (JSONL corpora are exempt)
MAX_FILE_BYTES: Final = 200 << 20
