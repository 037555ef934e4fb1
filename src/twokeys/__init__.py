"""twokeys: hybrid lexical + dense retrieval for RAG over your own documents.

The names below are imported on first use (PEP 562), so ``import twokeys`` and the
command line load only what the work in hand needs: a bm25 search never imports the
indexer, scipy or the ONNX runtime.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from twokeys.engine import Index, open_index
    from twokeys.filters import Filter
    from twokeys.indexer import IndexOptions, IndexReport, build_index
    from twokeys.request import SearchRequest
    from twokeys.types import Chunk, Document, Evidence, Hit, ScoredChunk

# public name -> the module that defines it
_LAZY = {
    "Chunk": "twokeys.types",
    "Document": "twokeys.types",
    "Evidence": "twokeys.types",
    "Filter": "twokeys.filters",
    "Hit": "twokeys.types",
    "Index": "twokeys.engine",
    "IndexOptions": "twokeys.indexer",
    "IndexReport": "twokeys.indexer",
    "ScoredChunk": "twokeys.types",
    "SearchRequest": "twokeys.request",
    "build_index": "twokeys.indexer",
    "open_index": "twokeys.engine",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'twokeys' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
