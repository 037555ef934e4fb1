"""``twokeys mcp``: the index as a Model Context Protocol server (the official ``mcp`` SDK).

Tools: ``search`` (ranked chunks, as ``POST /search``), ``ask`` (an answer with cited
sources, as ``POST /ask``), ``get_document`` (a document's chunks); every parameter is
described and every tool annotated (read-only, idempotent, closed world: ``ask`` is
open-world only when it sends the question to a model's server). Hits and chunks carry
their locator and citation (``cite``). With ``allow_write`` (``twokeys mcp
--allow-write``, or a write key in ``--keys-file``) a fourth tool, ``put_document``,
adds or replaces a document; without it no tool writes. Resources: each document as
``twokeys://documents/{id}`` (listed up to :data:`MAX_LISTED`; any id can be read
through the template). Transports: stdio (what desktop and coding assistants launch)
and streamable HTTP (``/mcp``) behind :func:`guarded_http_app`: the same Host, Origin
and key checks as ``twokeys serve`` (:mod:`twokeys.server.security`), and a read-only
key may not call a writing tool.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import replace
from typing import Annotated, Any, Literal
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.types import ToolAnnotations
from pydantic import Field

from twokeys import __version__
from twokeys.errors import TwokeysError
from twokeys.llm.base import LLM
from twokeys.rag.ask import AskOptions
from twokeys.rag.ask import ask as ask_index
from twokeys.request import SearchRequest
from twokeys.server.config import Limits, RequestError
from twokeys.server.documents import KIND_SUFFIX, check_id, document_record, read_document
from twokeys.server.keys import ApiKey
from twokeys.server.security import KEY_SCOPE, Guard, Policy
from twokeys.server.service import IndexService

MAX_LISTED = 1_000  # documents listed as resources; more are still readable by id
URI_PREFIX = "twokeys://documents/"
WRITE_TOOLS = frozenset({"put_document"})
_LOCAL = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

Query = Annotated[str, Field(description="What to look for, in words or identifiers.")]
K = Annotated[int, Field(description="How many hits to return (1 to the server's limit).")]
Mode = Annotated[
    str,
    Field(
        description="bm25 (exact words, identifiers), dense (meaning), hybrid (both, "
        "fused; the default) or a shorthand such as hybrid-rrf."
    ),
]
Filters = Annotated[
    list[str] | None,
    Field(
        description="Conditions that must all hold: path:policies/* or path:policies/, "
        "kind:markdown, id:a.md,b.md, lang=en, version>=2."
    ),
]
Explain = Annotated[
    bool, Field(description="Add each retriever's evidence (rank, score, matched terms).")
]
Question = Annotated[str, Field(description="The question to answer from the documents.")]
DocId = Annotated[
    str, Field(description="A document id, as search hits give it (doc_id), e.g. faq/refunds.md.")
]


def _with_citations(record: dict[str, Any], index: Any) -> dict[str, Any]:
    """``record`` (:func:`document_record`) with each chunk's locator and citation."""
    rows = index.backend.documents([record["id"]])[record["id"]]
    chunks = index.backend.chunks(range(rows.first_row, rows.first_row + rows.n_chunks))
    for data, chunk in zip(record["chunks"], chunks, strict=True):
        loc = chunk.locator
        data["locator"] = loc.to_dict() if loc else {}
        data["cite"] = loc.label(record["path"]) if loc else record["path"]
    return record


def create_mcp(
    service: IndexService,
    *,
    llm: LLM | None = None,
    limits: Limits | None = None,
    allow_write: bool = False,
    answers: AskOptions | None = None,
) -> MCPServer:
    """An MCP server over ``service``'s index (see the module docstring); ``answers``: how
    the ask tool answers (its ``mode`` is the tool's argument)."""
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
        "document's chunks (get_document)."
        + (" put_document adds or replaces a document." if allow_write else ""),
    )

    def guard(check: Any, *args: Any) -> None:
        try:
            check(*args)
        except RequestError as exc:
            raise ToolError(exc.message) from None

    @mcp.tool(annotations=_LOCAL)
    def search(
        query: Query,
        k: K = 5,
        mode: Mode = "hybrid",
        filters: Filters = None,
        explain: Explain = False,
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

    remote = llm is not None and hasattr(llm, "service")  # a model behind HTTP

    @mcp.tool(
        annotations=ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=remote
        )
    )
    def ask(question: Question, mode: Mode = "hybrid") -> dict[str, Any]:
        """Answer a question from the index, citing numbered sources ([1], [2], ...).
        Without a language model on the server the answer is quoted sentences. Says so
        when the sources do not answer the question ("kind": "abstained"; "declined":
        true when the model read them and found no answer)."""
        guard(limits.check_text, "question", question)
        try:
            with service.reader() as index:
                options = replace(answers or AskOptions(), mode=mode)
                answer = ask_index(index, question, llm=llm, options=options)
        except TwokeysError as exc:
            raise ToolError(str(exc)) from None
        return answer.to_dict()

    @mcp.tool(annotations=_LOCAL)
    def get_document(doc_id: DocId) -> dict[str, Any]:
        """A document's title, metadata and chunks, each chunk with its locator and
        citation (cite)."""
        try:
            check_id(doc_id)
        except TwokeysError as exc:
            raise ToolError(str(exc)) from None
        with service.reader() as index:
            found = document_record(index, doc_id)
            if found is None:
                raise ToolError(f"no document {doc_id!r}")
            return _with_citations(found, index)

    if allow_write:

        @mcp.tool(
            annotations=ToolAnnotations(
                read_only_hint=False,
                destructive_hint=True,  # replaces a document of the same id
                idempotent_hint=True,
                open_world_hint=False,
            )
        )
        def put_document(
            doc_id: Annotated[
                str,
                Field(description="The document's id: a relative path such as notes/a.md."),
            ],
            text: Annotated[str, Field(description="The document's whole text.")],
            title: Annotated[
                str | None, Field(description="A title (else read from the text).")
            ] = None,
            kind: Annotated[
                Literal["markdown", "text", "html", "rst"],
                Field(description="How to read the text."),
            ] = "markdown",
        ) -> dict[str, Any]:
            """Add a document to the index, or replace the one with this id; it is
            searchable at once. Returns what changed and the new counts."""
            try:
                doc = read_document(text.encode("utf-8"), doc_id, KIND_SUFFIX[kind], title=title)
                report = service.write([doc], ())
            except TwokeysError as exc:
                raise ToolError(str(exc)) from None
            return {
                "added": report.added,
                "changed": report.changed,
                "unchanged": report.unchanged,
                "documents": report.documents,
                "chunks": report.chunks,
            }

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


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_MAX_INSPECTED = 4 << 20  # the SDK's own body limit


def guarded_http_app(
    app: ASGIApp,
    keys: tuple[ApiKey, ...],
    *,
    allowed_hosts: tuple[str, ...] = (),
    limits: Limits | None = None,
) -> ASGIApp:
    """The streamable HTTP ``app`` behind :class:`~twokeys.server.security.Guard` (Host,
    Origin, ``Authorization: Bearer KEY``, JSON bodies, concurrency, timeout), with
    read-only keys kept from the writing tools."""
    limits = limits or Limits()
    policy = Policy(
        keys=keys,
        allowed_hosts=allowed_hosts,
        request_timeout_s=limits.request_timeout_s,
        max_concurrent_per_key=limits.max_concurrent_per_key,
        open_paths=frozenset(),
        open_prefixes=(),
        write_route=lambda method, path: False,  # tools/call is read below
    )
    return Guard(_WriteToolGate(app), policy)


class _WriteToolGate:
    """Refuses (403) a JSON-RPC ``tools/call`` of a writing tool made with a read-only
    key; the body, read here, is handed on unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = scope.get(KEY_SCOPE)
        if scope["type"] != "http" or scope["method"] != "POST" or key is None or key.can_write:
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break
            if size > _MAX_INSPECTED:
                break
        body = b"".join(m.get("body", b"") for m in messages)
        tool = _called_write_tool(body)
        if tool is not None:
            detail = json.dumps(
                {"detail": f"key {key.name!r} is read-only: the tool {tool} needs a write key"}
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 403,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": detail})
            return
        pending = list(messages)

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replay, send)


def _called_write_tool(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    for item in data if isinstance(data, list) else [data]:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if name in WRITE_TOOLS:
                return str(name)
    return None
