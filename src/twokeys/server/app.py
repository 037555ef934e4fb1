"""The HTTP API over one index (FastAPI): search, ask, documents, and the page.

Routes: ``POST /search``, ``POST /ask`` (``stream: true``: server-sent events),
``POST /documents`` (JSON or a multipart upload), ``GET``/``DELETE /documents/{id}``,
``GET /stats``, ``GET /healthz``, ``GET /`` (the search page), and the OpenAI-compatible
``/v1`` routes (:mod:`twokeys.server.openai_api`).

Security (:mod:`twokeys.server.security`, before any route runs): Host allow-list,
cross-site requests refused, keys with roles (``Authorization: Bearer KEY``; every route
but the page and the probes needs one when keys are configured, write routes a write
key), JSON bodies only, concurrency and time limits. Request bodies, queries, ``k`` and
uploads are limited (:class:`Limits`) with a 4xx error that says which limit; no
response names a file system path (messages are scrubbed); CORS is off unless origins
are given. Operations: an access log line per request and ``X-Request-ID``
(:mod:`twokeys.server.accesslog`), ``/healthz``, ``/readyz`` and ``/metrics``
(:mod:`twokeys.server.probes`, :mod:`twokeys.server.metrics`). Errors are
``{"detail": "..."}`` (``{"error": {...}}`` under ``/v1``).
"""

from __future__ import annotations

import json
import logging
import mimetypes
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from twokeys import __version__
from twokeys.errors import TwokeysError
from twokeys.llm.base import LLM
from twokeys.llm.http import ServiceError
from twokeys.rag.ask import ask_events
from twokeys.server.accesslog import AccessLog, log_sink
from twokeys.server.config import Limits, RequestError, ServerConfig, check_collection_name
from twokeys.server.documents import (
    KIND_SUFFIX,
    check_id,
    document_page,
    document_record,
    read_document,
)
from twokeys.server.events import closing, event_payload, sse
from twokeys.server.schema import (
    AnswerData,
    AskBody,
    DocumentData,
    DocumentPage,
    DocumentsBody,
    SearchBatchBody,
    SearchBatchResponse,
    SearchBody,
    SearchResponse,
    WriteResponse,
    ask_options,
)
from twokeys.server.search_api import run_batch, run_search
from twokeys.server.security import KEY_SCOPE, Guard, Policy, page_policy
from twokeys.server.service import IndexBusyError, IndexService, UnknownDocumentError
from twokeys.types import Document

log = logging.getLogger("twokeys.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# -- pieces ---------------------------------------------------------------------------


class _BodyLimit:
    """Refuses bodies over the limit (413) by their Content-Length, or while they stream."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        upload = headers.get("content-type", "").startswith("multipart/form-data")
        limit = self.limits.max_upload_bytes if upload else self.limits.max_body_bytes
        what = "upload" if upload else "request body"
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            await _drain(receive, more=True)
            await _send_error(
                scope, send, 413, f"{what}: {int(length)} bytes; the limit is {limit}"
            )
            return
        seen = 0
        started = False
        refused = False  # the 413 is sent: whatever the app answers afterwards is dropped

        async def limited_receive() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    if not started and not refused:
                        refused = True
                        await _drain(receive, more=bool(message.get("more_body")))
                        await _send_error(
                            scope, send, 413, f"{what}: over {limit} bytes; the limit is {limit}"
                        )
                    raise RequestError(413, f"{what}: over {limit} bytes")
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except RequestError:
            if not refused:
                raise


_DRAIN_BYTES = 64 << 20  # read (and drop) at most this much of a refused body


async def _drain(receive: Receive, *, more: bool) -> None:
    """Read the rest of a refused body (up to :data:`_DRAIN_BYTES`) before answering: a
    server that closes with unread input makes the client's TCP stack reset the
    connection, and the client may never see the 413."""
    drained = 0
    while more and drained <= _DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        drained += len(message.get("body", b""))
        more = bool(message.get("more_body"))


async def _send_error(scope: Scope, send: Send, status: int, message: str) -> None:
    body = json.dumps(_error_body(scope.get("path", ""), status, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _error_body(path: str, status: int, message: str) -> dict[str, Any]:
    if path.startswith("/v1/"):
        kind = "invalid_request_error" if status < 500 else "server_error"
        codes = {401: "invalid_api_key", 404: "not_found", 413: "request_too_large"}
        return {"error": {"message": message, "type": kind, "code": codes.get(status)}}
    return {"detail": message}


class _Scrubber:
    """Takes file system paths and the index location out of messages: a local index
    folder becomes its name, another backend's URL its scheme and host (never its
    credentials), any other absolute path ``<path>``."""

    _ABSOLUTE = re.compile(r"(?<![\w:/.])/(?:[^\s/'\"():,]+/)*[^\s/'\"():,]*")

    def __init__(self, location: str | Path, path: Path | None) -> None:
        if path is not None:
            prefixes = {str(path.resolve()), str(path), str(location)}
            self._name = path.resolve().name
        else:
            parts = urlsplit(str(location))
            prefixes = {str(location)}
            self._name = f"{parts.scheme}://{parts.hostname or ''}"
        self._prefixes = sorted(prefixes, key=len, reverse=True)

    def __call__(self, message: str) -> str:
        for prefix in self._prefixes:
            message = message.replace(prefix, self._name)
        return self._ABSOLUTE.sub("<path>", message)


def _validation_message(errors: Sequence[Any]) -> str:
    parts = []
    for e in errors:
        if e.get("type") == "json_invalid":
            return f"body: invalid JSON ({e.get('ctx', {}).get('error', 'unparseable')})"
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


class _SerialLLM(LLM):
    """An LLM that runs one generation at a time (llama.cpp in this process is not
    reentrant); HTTP backends are used as they are."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.name = inner.name
        self.chat = inner.chat
        self._lock = threading.Lock()

    def stream(self, prompt: Any, **kwargs: Any) -> Iterator[str]:
        with self._lock:
            yield from self.inner.stream(prompt, **kwargs)

    def detect_chat(self) -> bool:
        with self._lock:
            return self.inner.detect_chat()

    def token_counter(self) -> Any:
        return self.inner.token_counter()

    def unreachable(self) -> str | None:
        return self.inner.unreachable()

    def close(self) -> None:
        self.inner.close()


def serial_llm(llm: LLM | None) -> LLM | None:
    """``llm``, made safe to share between request threads."""
    if llm is None:
        return None
    from twokeys.llm.local import LocalLLM

    return _SerialLLM(llm) if isinstance(llm, LocalLLM) else llm


# -- the app --------------------------------------------------------------------------


def create_app(
    service: IndexService,
    *,
    llm: LLM | None = None,
    config: ServerConfig | None = None,
    collections: Mapping[str, IndexService] | None = None,
) -> FastAPI:
    """The FastAPI app serving ``service``'s index (see the module docstring).

    ``collections``: further indexes by name, each served whole under
    ``/collections/{name}/`` (every route) and as the model ``name`` under ``/v1``."""
    config = config or ServerConfig()
    limits = config.limits
    scrub = _Scrubber(service.location, service.path)
    from twokeys.server.metrics import Metrics

    collection = scrub(str(service.path or service.location))
    named = dict(collections or {})
    # every collection this server answers for, by its path (the main one) or its name
    metrics = Metrics(lambda: [(collection, service), *named.items()])
    shared_llm = metrics.counted(serial_llm(llm))
    keyed = config.keyed
    app = FastAPI(
        title="twokeys",
        version=__version__,
        description="Hybrid BM25 + dense retrieval over one index: search, ask, documents.",
        docs_url=None,  # served by apidocs.docs_router: local assets, asks for the key
        redoc_url=None,
        openapi_url=None if keyed else "/openapi.json",  # keyed: served below, with the key
    )
    app.state.service = service
    app.state.config = config
    app.state.metrics = metrics

    def require_key(request: Request) -> None:
        """The key was checked by the Guard (before the body was read); this makes sure
        no route is reached without it."""
        if keyed and getattr(request.scope.get(KEY_SCOPE), "secret", "") == "":
            raise HTTPException(
                401,
                "missing or wrong API key: send 'Authorization: Bearer KEY'",
                headers={"WWW-Authenticate": "Bearer"},
            )

    open_routes = APIRouter()
    api = APIRouter(dependencies=[Depends(require_key)])

    # -- errors ---------------------------------------------------------------------

    def error(request: Request, status: int, message: str) -> JSONResponse:
        return JSONResponse(_error_body(request.url.path, status, scrub(message)), status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        response = error(request, exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        message = _validation_message(exc.errors())
        return error(request, 400 if message.startswith("body: invalid JSON") else 422, message)

    @app.exception_handler(UnknownDocumentError)
    async def unknown_document(request: Request, exc: UnknownDocumentError) -> Response:
        return error(request, 404, str(exc))

    @app.exception_handler(ServiceError)
    async def model_error(request: Request, exc: ServiceError) -> Response:
        return error(request, 502, f"the language model failed: {exc}")

    @app.exception_handler(IndexBusyError)
    async def busy(request: Request, exc: IndexBusyError) -> Response:
        return error(request, 409, str(exc))

    @app.exception_handler(TwokeysError)
    async def twokeys_error(request: Request, exc: TwokeysError) -> Response:
        return error(request, 400, str(exc))

    @app.exception_handler(RequestError)
    async def server_error(request: Request, exc: RequestError) -> Response:
        return error(request, exc.status, exc.message)

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error(request, 500, f"internal error ({type(exc).__name__})")

    # -- limits ---------------------------------------------------------------------

    check_text = limits.check_text
    check_k = limits.check_count

    # -- search and ask -------------------------------------------------------------

    @api.post("/search", response_model=SearchResponse, tags=["search"])
    def search(body: SearchBody) -> Any:  # type: ignore[valid-type]
        """The top ``k`` chunks for a search request (``explain``: each retriever's evidence)."""
        given = body.model_dump(exclude_unset=True)  # type: ignore[attr-defined]
        with service.reader() as index:
            start = time.perf_counter()
            result = run_search(index, given, limits)
            metrics.observe_search(result["request"]["retriever"], time.perf_counter() - start)
            return result

    @api.post("/search/batch", response_model=SearchBatchResponse, tags=["search"])
    def search_batch(body: SearchBatchBody) -> Any:  # type: ignore[valid-type]
        """Several searches (each a ``/search`` body) from one generation of the index."""
        searches = [s.model_dump(exclude_unset=True) for s in body.searches]  # type: ignore[attr-defined]
        with service.reader() as index:
            return {"results": run_batch(index, searches, limits)}

    @api.post(
        "/ask",
        response_model=AnswerData,
        tags=["ask"],
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    def ask(body: AskBody) -> Any:  # type: ignore[valid-type]
        """Answer a question with cited sources; ``stream: true`` sends server-sent events
        ``retrieved``, ``packed``, ``model_failed``, ``delta`` (text) and ``done`` (the
        answer)."""
        question: str = body.question  # type: ignore[attr-defined]
        if not question.strip():
            raise RequestError(400, "question: is empty")
        check_text("question", question)
        options = ask_options(body, config.answers)
        check_k("k", options.k, limits.max_k)
        with_context: bool = body.with_context  # type: ignore[attr-defined]
        if body.stream:  # type: ignore[attr-defined]
            return StreamingResponse(
                closing(_sse_stream(service, question, shared_llm, options, with_context, scrub)),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        with service.reader() as index:
            for event in ask_events(index, question, llm=shared_llm, options=options):
                name, data = event_payload(event, with_context=with_context)
                if name == "done":
                    return JSONResponse(data)
        raise RequestError(500, "ask ended without an answer")  # pragma: no cover

    # -- documents ------------------------------------------------------------------

    @api.post(
        "/documents",
        response_model=WriteResponse,
        tags=["documents"],
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/DocumentsBody"}},
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "file": {
                                    "type": "array",
                                    "items": {"type": "string", "format": "binary"},
                                },
                                "id": {"type": "string"},
                            },
                            "required": ["file"],
                        }
                    },
                },
            }
        },
    )
    async def add_documents(request: Request) -> Any:
        """Add or replace documents, committed together and searchable at once.

        JSON: ``{"documents": [{"id", "text", "title"?, "kind"?, "metadata"?}]}``.
        Upload (multipart): one or more ``file`` parts (.md, .txt, .rst, .html); each takes
        its file name as id, or ``id`` for a single file."""
        kind = request.headers.get("content-type", "")
        if kind.startswith("multipart/form-data"):
            docs = await _uploaded(request, limits)
        elif kind.startswith("application/json") or not kind:
            raw = await request.body()
            try:
                body = DocumentsBody.model_validate_json(raw)
            except ValidationError as exc:
                message = _validation_message(exc.errors())
                raise RequestError(
                    400 if message.startswith("body: invalid JSON") else 422, message
                ) from None
            if len(body.documents) > limits.max_documents:
                raise RequestError(
                    400, f"documents: {len(body.documents)}; the limit is {limits.max_documents}"
                )
            docs = [
                read_document(
                    d.text.encode("utf-8"),
                    d.id,
                    KIND_SUFFIX[d.kind],
                    title=d.title,
                    metadata=d.metadata,
                )
                for d in body.documents
            ]
        else:
            raise RequestError(
                415, f"content-type {kind!r}: send application/json or multipart/form-data"
            )
        report = await run_in_threadpool(service.write, docs, ())
        return _write_response(service, report)

    @api.get("/documents", response_model=DocumentPage, tags=["documents"])
    def list_documents(
        offset: int = 0,
        limit: int = 100,
        filter: Annotated[list[str] | None, Query()] = None,
    ) -> Any:
        """The documents, in id order, a page at a time: each one's record, metadata and
        chunk count. ``filter`` (repeatable) takes the filters of a search (all hold)."""
        with service.reader() as index:
            return document_page(index, filter or (), offset, limit)

    @api.get("/documents/{doc_id:path}", response_model=DocumentData, tags=["documents"])
    def get_document(doc_id: str) -> Any:
        """A document's record and its chunks."""
        check_id(doc_id)
        with service.reader() as index:
            found = document_record(index, doc_id)
        if found is None:
            raise UnknownDocumentError(f"no document {doc_id!r}")
        return found

    @api.get("/files/{doc_id:path}", tags=["documents"], response_class=FileResponse)
    def source_file(doc_id: str) -> Any:
        """A document's original file, from the folder the index was built from (a PDF
        opens at a page with ``#page=N``); never a file outside the indexed folder."""
        check_id(doc_id)
        with service.reader() as index:
            info = index.backend.documents([doc_id]).get(doc_id)
            source = index.manifest.source
        if info is None:
            raise UnknownDocumentError(f"no document {doc_id!r}")
        file = _source_file(source, info.path)
        if file is None:
            raise RequestError(404, f"document {doc_id!r} has no file on this server")
        media = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        headers = {"X-Content-Type-Options": "nosniff"}
        if media != "application/pdf":  # a PDF opens in the browser's own viewer
            # a document is data: its scripts never run at this server's origin
            headers["Content-Security-Policy"] = "sandbox; default-src 'none'"
            if media in _ACTIVE_MEDIA:
                media = "text/plain; charset=utf-8"
        return FileResponse(file, media_type=media, headers=headers)

    @api.delete("/documents/{doc_id:path}", response_model=WriteResponse, tags=["documents"])
    def delete_document(doc_id: str) -> Any:
        """Delete a document; it is gone from searches at once."""
        check_id(doc_id)
        report = service.write((), (doc_id,))
        return _write_response(service, report)

    # -- status ---------------------------------------------------------------------

    @api.get("/stats", tags=["status"])
    def stats() -> dict[str, Any]:
        """Counts, parameters and sizes of the index being served (no file system paths)."""
        with service.reader() as index:
            data = index.info()
        for key in ("path", "files", "source"):  # file system paths stay on the server
            data.pop(key, None)
        data["writes"] = service.writes
        data["llm"] = llm.name if llm is not None else None
        return data

    if keyed:

        @api.get("/openapi.json", include_in_schema=False)
        def openapi() -> dict[str, Any]:
            return app.openapi()

    @open_routes.get("/healthz", tags=["status"])
    def healthz() -> dict[str, str]:
        """Liveness: always ``{"status": "ok"}`` while the server runs (no key needed)."""
        return {"status": "ok"}

    page = resources.files("twokeys.server").joinpath("static/index.html").read_text("utf-8")
    page_headers = {"Content-Security-Policy": page_policy(page)}

    markdown_js = resources.files("twokeys.server").joinpath("static/markdown-it.min.js")

    @open_routes.get("/assets/markdown-it.min.js", include_in_schema=False)
    def markdown_script() -> Response:
        """markdown-it (MIT), which the page renders answers and passages with."""
        return Response(markdown_js.read_bytes(), media_type="text/javascript")

    @open_routes.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index_page() -> HTMLResponse:
        """The search page: static HTML and a script; it calls the API (with the key)."""
        return HTMLResponse(page, headers=page_headers)

    from twokeys.server.apidocs import declare_errors, docs_router
    from twokeys.server.citations import passage_router
    from twokeys.server.openai_api import openai_router
    from twokeys.server.probes import probes_router

    app.include_router(open_routes)
    app.include_router(probes_router(service, shared_llm, metrics, Depends(require_key)))
    app.include_router(docs_router(keyed))
    app.include_router(passage_router(service), dependencies=[Depends(require_key)])
    app.include_router(api)
    app.include_router(
        openai_router(service, shared_llm, config, scrub, collections),
        dependencies=[Depends(require_key)],
    )
    for name, other in (collections or {}).items():
        check_collection_name(name, config.model_name)
        sub = create_app(other, llm=shared_llm, config=replace(config, model_name=name))
        app.mount(f"/collections/{name}", sub)
    base_openapi = app.openapi

    def full_openapi() -> dict[str, Any]:
        """FastAPI's schema, plus the JSON body of ``POST /documents`` (read by hand there,
        as the route also takes uploads)."""
        if app.openapi_schema is None:
            schema = base_openapi()
            body = DocumentsBody.model_json_schema(ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components.update(body.pop("$defs", {}))
            components["DocumentsBody"] = body
            app.openapi_schema = declare_errors(schema, keyed=keyed)
        return app.openapi_schema

    app.openapi = full_openapi  # type: ignore[method-assign]
    app.add_middleware(_BodyLimit, limits=limits)
    policy = Policy(
        keys=config.all_keys(),
        allowed_hosts=config.allowed_hosts,
        cors_origins=config.cors_origins,
        request_timeout_s=limits.request_timeout_s,
        max_concurrent_per_key=limits.max_concurrent_per_key,
    )
    app.add_middleware(Guard, policy=policy, error_body=_error_body)
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    sinks: list[Callable[[Any], None]] = [metrics.observe]
    if config.access_log != "off":
        sinks.append(log_sink(as_json=config.access_log == "json"))
    app.add_middleware(
        AccessLog,
        sinks=sinks,
        collection=collection,
        log_queries=config.log_queries,
        routes=app.router.routes,
    )
    return app


def _sse_stream(
    service: IndexService,
    question: str,
    llm: LLM | None,
    options: Any,
    with_context: bool,
    scrub: Callable[[str], str],
) -> Iterator[str]:
    with service.reader() as index:
        try:
            for event in ask_events(index, question, llm=llm, options=options):
                yield sse(*event_payload(event, with_context=with_context))
        except TwokeysError as exc:
            yield sse("error", {"detail": scrub(str(exc))})
        except Exception as exc:
            log.exception("internal error while streaming an answer")
            yield sse("error", {"detail": f"internal error ({type(exc).__name__})"})


async def _uploaded(request: Request, limits: Limits) -> list[Document]:
    form = await request.form(max_files=limits.max_documents, max_fields=limits.max_documents)
    files = [f for f in form.getlist("file") if isinstance(f, UploadFile)]
    if not files:
        raise RequestError(422, "file: no file part in the upload")
    ids = [str(v) for v in form.getlist("id")]
    if ids and len(files) != 1:
        raise RequestError(422, "id: give an id only with a single file")
    docs = []
    for i, upload in enumerate(files):
        name = Path(upload.filename or "").name
        doc_id = ids[0] if ids else name
        if not doc_id:
            raise RequestError(422, f"file {i + 1}: has no file name; give an id")
        raw = await upload.read()
        suffix = Path(name).suffix or ".txt"  # a PDF or DOCX is parsed off the event loop
        docs.append(await run_in_threadpool(read_document, raw, check_id(doc_id), suffix))
    return docs


def _write_response(service: IndexService, report: Any) -> dict[str, Any]:
    with service.reader() as index:
        generation = index.manifest.generation
    return {
        "added": report.added,
        "changed": report.changed,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "embedded_chunks": report.embedded_chunks,
        "documents": report.documents,
        "chunks": report.chunks,
        "generation": generation,
        "seconds": round(report.seconds, 4),
    }


#: file types a browser would run or render with scripts: a source file of these is
#: served as text
_ACTIVE_MEDIA = frozenset(
    {
        "text/html",
        "application/xhtml+xml",
        "image/svg+xml",
        "text/javascript",
        "application/javascript",
        "text/xml",
        "application/xml",
    }
)


def _source_file(source: str, rel: str) -> Path | None:
    """The file a document was read from: ``rel`` inside the indexed folder (never a
    path outside it), or the indexed file itself; None when there is none now."""
    if not source or not rel:
        return None
    root = Path(source)
    if root.is_file():
        return root if root.name == rel else None
    try:
        real_root = root.resolve(strict=True)
        candidate = (root / rel).resolve(strict=True)
    except OSError:
        return None
    if real_root not in candidate.parents or not candidate.is_file():
        return None
    return candidate
