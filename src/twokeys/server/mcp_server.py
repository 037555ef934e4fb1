"""``twokeys mcp``: the index as a Model Context Protocol server (the official ``mcp`` SDK).

Tools: ``search`` (ranked chunks, as ``POST /search``), ``ask`` (an answer with cited
sources, as ``POST /ask``), ``get_document`` (a document's chunks). Resources: each
document as ``twokeys://documents/{id}`` (listed up to :data:`MAX_LISTED`; any id can be
read through the template). Transports: stdio (what desktop and coding assistants
launch) and streamable HTTP (``/mcp``; on a loopback address, or on any with an API key
that every request must send as ``Authorization: Bearer KEY``). It only reads: writes go
through ``twokeys serve``.
"""

from __future__ import annotations

import functools
import hmac
import json
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources import FunctionResource

from twokeys import __version__
from twokeys.errors import TwokeysError
from twokeys.llm.base import LLM
from twokeys.rag.ask import AskOptions
from twokeys.rag.ask import ask as ask_index
from twokeys.request import SearchRequest
from twokeys.server.config import Limits, RequestError
from twokeys.server.documents import document_record
from twokeys.server.service import IndexService

_UNAUTHORIZED = json.dumps(
    {"detail": "missing or wrong API key: send 'Authorization: Bearer KEY'"}
).encode()
MAX_LISTED = 1_000  # documents listed as resources; more are still readable by id
URI_PREFIX = "twokeys://documents/"


def create_mcp(
    service: IndexService, *, llm: LLM | None = None, limits: Limits | None = None
) -> MCPServer:
    """An MCP server over ``service``'s index (see the module docstring)."""
    limits = limits or Limits()
    with service.reader() as index:
        name = f"twokeys ({index.manifest.counts.get('documents', 0)} documents)"
        listed = index.backend.all_documents()[:MAX_LISTED]
    mcp = MCPServer(
        "twokeys",
        title=name,
        version=__version__,
        instructions="Search a document collection with hybrid BM25 + dense retrieval "
        "(search), answer questions from it with cited sources (ask), and read a "
        "document's chunks (get_document).",
    )

    def guard(check: Any, *args: Any) -> None:
        try:
            check(*args)
        except RequestError as exc:
            raise ToolError(exc.message) from None

    @mcp.tool()
    def search(
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        filters: list[str] | None = None,
        explain: bool = False,
    ) -> dict[str, Any]:
        """Rank the index's chunks for a query. mode: bm25 (exact words, identifiers),
        dense (meaning), hybrid (both, fused; the default) or a shorthand such as
        hybrid-rrf. filters (all must hold): path:policies/* or path:policies/,
        kind:markdown, id:a.md,b.md, lang=en, version>=2, page>=10 (a chunk's page).
        Returns hits with rank, score, document id, chunk id, cite (the file with its
        page, slide or lines: "manual.pdf p. 12"), locator, heading and text."""
        guard(limits.check_text, "query", query)
        guard(limits.check_count, "k", k, limits.max_k)
        try:
            request = SearchRequest.parse(query, mode, k=k, explain=explain, filters=filters)
            with service.reader() as index:
                hits = index.search(request)
        except TwokeysError as exc:
            raise ToolError(str(exc)) from None
        return {"hits": [h.to_dict() for h in hits]}

    @mcp.tool()
    def ask(question: str, mode: str = "hybrid") -> dict[str, Any]:
        """Answer a question from the index, citing numbered sources ([1], [2], ...).
        Without a language model on the server the answer is quoted sentences. Says so
        when the sources do not answer the question ("kind": "abstained"; "declined":
        true when the model read them and found no answer)."""
        guard(limits.check_text, "question", question)
        try:
            with service.reader() as index:
                answer = ask_index(index, question, llm=llm, options=AskOptions(mode=mode))
        except TwokeysError as exc:
            raise ToolError(str(exc)) from None
        return answer.to_dict()

    @mcp.tool()
    def get_document(doc_id: str) -> dict[str, Any]:
        """A document's title, metadata and chunks (ids as search hits give them)."""
        with service.reader() as index:
            found = document_record(index, doc_id)
        if found is None:
            raise ToolError(f"no document {doc_id!r}")
        return found

    def read(doc_id: str) -> str:
        with service.reader() as index:
            found = document_record(index, doc_id)
        if found is None:
            raise ResourceError(f"no document {doc_id!r}")
        return json.dumps(found, ensure_ascii=False)

    @mcp.resource(
        URI_PREFIX + "{+doc_id}",
        name="document",
        description="A document of the index and its chunks, as JSON.",
        mime_type="application/json",
    )
    def document(doc_id: str) -> str:
        return read(doc_id)

    for doc in listed:
        mcp.add_resource(
            FunctionResource(
                uri=URI_PREFIX + quote(doc.id, safe="/"),
                name=doc.id,
                title=doc.title,
                mime_type="application/json",
                fn=functools.partial(read, doc.id),
            )
        )
    return mcp


def require_bearer(app: Any, key: str) -> Any:
    """``app`` (ASGI) behind ``Authorization: Bearer KEY``, compared in constant time."""
    expected = f"Bearer {key}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": _UNAUTHORIZED})
                return
        await app(scope, receive, send)

    return guarded
