"""One access-log record per HTTP request, and a request id echoed in a header (ASGI).

:class:`AccessLog` times each request, gives it an id (the client's ``X-Request-ID`` when
it is a short token, else a fresh one) sent back in ``X-Request-ID``, and hands a
:class:`RequestRecord` to its sinks: the log line (:func:`format_record`, text or JSON
lines, logger ``twokeys.access``) and the metrics. A record holds the method, the
route's pattern (never the raw path: ids stay out), the status, the duration, the
collection and the key's *name*; never the key, and the query text only when asked.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from twokeys.server.security import KEY_SCOPE

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("twokeys.access")
REQUEST_ID = "x-request-id"
_TOKEN = re.compile(r"[A-Za-z0-9._-]{1,64}")
_QUERY_FIELDS = ("query", "question", "input")
_MAX_QUERY_BODY = 1 << 20


@dataclass(frozen=True)
class RequestRecord:
    """What the access log and the metrics know of one request."""

    request_id: str
    method: str
    route: str  # the route's pattern, e.g. /documents/{doc_id}; "-" when none matched
    status: int
    seconds: float
    collection: str
    key: str  # the key's name; "-" without keys
    query: str | None = None  # only when the server logs queries


def format_record(record: RequestRecord, *, as_json: bool) -> str:
    """The log line of ``record``: ``key=value`` words, or one JSON object."""
    data = asdict(record)
    data["seconds"] = round(record.seconds, 4)
    if record.query is None:
        del data["query"]
    if as_json:
        return json.dumps(data, ensure_ascii=False)
    words = [
        f"{k}={json.dumps(v, ensure_ascii=False) if k == 'query' else v}" for k, v in data.items()
    ]
    return " ".join(words)


def log_sink(as_json: bool) -> Callable[[RequestRecord], None]:
    """Writes each record to the ``twokeys.access`` logger at INFO."""

    def write(record: RequestRecord) -> None:
        if log.isEnabledFor(logging.INFO):
            log.info(format_record(record, as_json=as_json))

    return write


def query_of(body: bytes) -> str | None:
    """The query (or question, or last chat message) a JSON body asks, if any."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    for name in _QUERY_FIELDS:
        if isinstance(data.get(name), str):
            return str(data[name])
    messages = data.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        content = messages[-1].get("content")
        return content if isinstance(content, str) else None
    return None


class AccessLog:
    """ASGI middleware: times each request and hands its record to ``sinks``."""

    def __init__(
        self,
        app: ASGIApp,
        sinks: Sequence[Callable[[RequestRecord], None]],
        *,
        collection: str,
        log_queries: bool = False,
        routes: Sequence[Any] = (),
    ) -> None:
        self.app = app
        self.routes = routes
        self.sinks = tuple(sinks)
        self.collection = collection
        self.log_queries = log_queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        given = dict(scope["headers"]).get(REQUEST_ID.encode(), b"").decode("latin-1")
        request_id = given if _TOKEN.fullmatch(given) else uuid.uuid4().hex
        status = 500
        body = bytearray()

        async def recording_receive() -> Message:
            message = await receive()
            log_it = self.log_queries and message["type"] == "http.request"
            if log_it and len(body) < _MAX_QUERY_BODY:
                body.extend(message.get("body", b""))
            return message

        async def identified_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (REQUEST_ID.encode(), request_id.encode()),
                ]
            await send(message)

        try:
            await self.app(scope, recording_receive, identified_send)
        finally:
            route = scope.get("route") or self.route_of(scope)
            params = scope.get("path_params") or {}
            record = RequestRecord(
                request_id=request_id,
                method=scope["method"],
                route=str(getattr(route, "path", "-")),
                status=status,
                seconds=time.perf_counter() - start,
                collection=str(params.get("collection", self.collection)),
                key=getattr(scope.get(KEY_SCOPE), "name", "-"),
                query=query_of(bytes(body)) if self.log_queries and body else None,
            )
            for sink in self.sinks:
                sink(record)

    def route_of(self, scope: Scope) -> Any:
        """The route a request refused before routing would have reached, if any."""
        return _matching(self.routes, scope, "")


class _Found:
    def __init__(self, path: str) -> None:
        self.path = path


def _matching(routes: Sequence[Any], scope: Scope, prefix: str) -> _Found | None:
    """The pattern of the route among ``routes`` (and the routers included in them) that
    fully matches ``scope``."""
    from starlette.routing import Match

    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:  # an included router (FastAPI): look inside it
            sub = str(getattr(getattr(route, "include_context", None), "prefix", "") or "")
            if not scope["path"].startswith(sub):
                continue
            found = _matching(
                inner.routes, {**scope, "path": scope["path"][len(sub) :]}, prefix + sub
            )
            if found is not None:
                return found
            continue
        match, _ = route.matches(scope)
        if match == Match.FULL and hasattr(route, "path"):
            return _Found(prefix + str(route.path))
    return None
