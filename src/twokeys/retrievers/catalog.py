"""Retrievers beyond the built-in ``bm25``, ``dense`` and ``hybrid``: the classic models.

Each entry maps a retriever name to ``"module:function"``; the function is imported
only when the retriever is used and is called as ``function(index, request) ->
Retriever`` where ``index`` is a :class:`twokeys.engine.Index` and ``request`` a
:class:`twokeys.request.SearchRequest`. (Mode shorthands such as ``hybrid-rrf`` are
fields of the request, see :mod:`twokeys.request`.)
"""

from __future__ import annotations

EXTRA_RETRIEVERS: dict[str, str] = {
    "boolean": "twokeys.retrievers.classic:build_boolean",
    "tfidf": "twokeys.retrievers.classic:build_tfidf",
    "bm25+": "twokeys.retrievers.classic:build_bm25plus",
    "bm25l": "twokeys.retrievers.classic:build_bm25l",
    "lsi": "twokeys.retrievers.classic:build_lsi",
}
