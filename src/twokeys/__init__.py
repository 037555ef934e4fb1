"""twokeys: hybrid lexical + dense retrieval for RAG over your own documents."""

from __future__ import annotations

__version__ = "0.1.0"

from twokeys.engine import Index, open_index
from twokeys.filters import Filter
from twokeys.indexer import IndexOptions, IndexReport, build_index
from twokeys.request import SearchRequest
from twokeys.types import Chunk, Document, Evidence, Hit, ScoredChunk

__all__ = [
    "Chunk",
    "Document",
    "Evidence",
    "Filter",
    "Hit",
    "Index",
    "IndexOptions",
    "IndexReport",
    "ScoredChunk",
    "SearchRequest",
    "__version__",
    "build_index",
    "open_index",
]
