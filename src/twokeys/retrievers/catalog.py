"""Retrieval modes beyond the built-in ``bm25``, ``dense`` and ``hybrid``.

Each entry maps a mode name to ``"module:function"``; the function is imported only
when the mode is used and is called as ``function(index, settings) -> Retriever``
where ``index`` is a :class:`twokeys.engine.Index` and ``settings`` a
:class:`twokeys.engine.SearchSettings`.
"""

from __future__ import annotations

EXTRA_MODES: dict[str, str] = {
    "boolean": "twokeys.retrievers.classic:build_boolean",
    "tfidf": "twokeys.retrievers.classic:build_tfidf",
    "bm25+": "twokeys.retrievers.classic:build_bm25plus",
    "bm25l": "twokeys.retrievers.classic:build_bm25l",
    "lsi": "twokeys.retrievers.classic:build_lsi",
    "hybrid-rrf": "twokeys.retrievers.fusion_modes:build_rrf",
    "hybrid-rrf-confidence": "twokeys.retrievers.fusion_modes:build_rrf_confidence",
    "hybrid-minmax": "twokeys.retrievers.fusion_modes:build_minmax",
    "hybrid-zscore": "twokeys.retrievers.fusion_modes:build_zscore",
    "hybrid-dbsf": "twokeys.retrievers.fusion_modes:build_dbsf",
    "hybrid+e5": "twokeys.retrievers.reranking:build_hybrid_e5",
    "hybrid+proximity": "twokeys.retrievers.reranking:build_hybrid_proximity",
}

#: modes that read the dense vectors (an index built without an encoder cannot run them)
VECTOR_MODES: frozenset[str] = frozenset(
    {"dense", "hybrid", *(name for name in EXTRA_MODES if name.startswith("hybrid"))}
)
