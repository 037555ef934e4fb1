"""Browser attacks, keys and limits, checked before a request reaches the app (ASGI).

:class:`Guard` checks each HTTP request in this order, each refusal a one-line error:

1. **Host**: a loopback name, an IP literal or a configured name (``--allowed-host``);
   any other name, what a DNS-rebinding page sends, gets 421.
2. **No key in the URL** (``?api_key=``, ``?key=``, ``?token=`` ...): 400, as URLs end
   up in logs, histories and ``Referer`` headers.
3. **Browser origin**: on every route but the page and the probes, a request a browser
   marks as another site's (an ``Origin`` that is neither this server's nor a
   ``--cors-origin``; ``Sec-Fetch-Site: cross-site`` or ``same-site`` without one) gets
   403. The page's own requests are same-origin; programs send neither header.
4. **Key**: with keys, ``Authorization: Bearer KEY`` (matched in constant time, see
   :mod:`twokeys.server.keys`) or 401; a write route with a read-only key gets 403. No
   byte of the body has been read yet.
5. **Content type**: a body sent with POST, PUT or PATCH is ``application/json``
   (``multipart/form-data`` also on upload routes) or 415: ``text/plain`` and form
   encodings are what a browser sends to another site without asking first.
6. **Concurrency**: at most ``max_concurrent_per_key`` requests of one key at once, or 429.
7. **Timeout**: no response started within ``request_timeout_s`` (a slow body
   included) gets 408 (the body had not all arrived) or 504.

Every response carries ``X-Content-Type-Options: nosniff``, ``Referrer-Policy:
no-referrer`` and ``X-Frame-Options: DENY``; :func:`page_policy` is the search page's
Content-Security-Policy.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import ipaddress
import re
from collections.abc import Awaitable, Callable, Collection, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from twokeys.server.keys import ANONYMOUS, ApiKey, KeyRing

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ErrorBody = Callable[[str, int, str], dict[str, Any]]

KEY_SCOPE = "twokeys.key"  # the ApiKey a request was made with, in its ASGI scope
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
#: pages and their static assets, served without a key (they hold no index data and ask
#: for the key themselves); also under each collection's ``/collections/NAME`` prefix
OPEN_PATHS = frozenset({"/", "/healthz", "/readyz", "/favicon.ico", "/docs"})
OPEN_PREFIXES = ("/docs/assets/", "/assets/")
_COLLECTION = re.compile(r"^/collections/[^/]+(?=/)")
KEY_PARAMS = frozenset({"api_key", "apikey", "api-key", "key", "token", "access_token", "auth"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
)


def default_error_body(path: str, status: int, message: str) -> dict[str, Any]:
    return {"detail": message}


def is_write_route(method: str, path: str) -> bool:
    """Whether a request changes the index: a DELETE, PUT or PATCH, or a POST to a
    ``documents`` (upload) or ``reindex`` route."""
    if method in ("DELETE", "PUT", "PATCH"):
        return True
    return method == "POST" and path.rstrip("/").rsplit("/", 1)[-1] in ("documents", "reindex")


def is_upload_route(path: str) -> bool:
    return path.rstrip("/").endswith("/documents")


@dataclass(frozen=True)
class Policy:
    """What :class:`Guard` enforces."""

    keys: tuple[ApiKey, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # names besides loopback ones and IP literals; "*": any
    cors_origins: tuple[str, ...] = ()
    request_timeout_s: float = 120.0
    max_concurrent_per_key: int = 64
    open_paths: Collection[str] = OPEN_PATHS
    open_prefixes: tuple[str, ...] = OPEN_PREFIXES
    write_route: Callable[[str, str], bool] = is_write_route

    def is_open(self, path: str) -> bool:
        """Whether ``path`` is a page or a page's asset (no key needed to GET it)."""
        local = _COLLECTION.sub("", path, count=1) if path.startswith("/collections/") else path
        return local in self.open_paths or local.startswith(self.open_prefixes)


def host_allowed(host: str, allowed: Collection[str]) -> bool:
    """Whether a ``Host`` header names this server: a loopback name, an IP literal (no
    rebinding goes through an address) or one of ``allowed``."""
    name = host.strip().lower()
    if name.startswith("["):  # [::1]:8000
        name = name[1 : name.find("]")] if "]" in name else name
    elif name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    name = name.rstrip(".")
    if not name:
        return False
    if name in LOOPBACK_NAMES or "*" in allowed or name in {a.lower() for a in allowed}:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def cross_site(headers: dict[str, str], host: str, cors_origins: Collection[str]) -> str | None:
    """Why a request comes from another site's page, or None when it does not."""
    origin = headers.get("origin")
    if origin is not None:
        if origin in cors_origins:
            return None
        if origin != "null" and urlsplit(origin).netloc.lower() == host.lower():
            return None
        return f"Origin {origin!r} is not this server's and not an allowed --cors-origin"
    fetch_site = headers.get("sec-fetch-site", "").lower()
    if fetch_site in ("cross-site", "same-site"):
        return f"Sec-Fetch-Site: {fetch_site}"
    return None


def page_policy(html: str) -> str:
    """The Content-Security-Policy for ``html``: only its own inline scripts (by hash)
    and this server's script files run (every response carries ``nosniff``, and a
    document's own file is served sandboxed, so no document text runs as a script), it
    fetches only from this server, it is framed by no other page."""
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in re.findall(r"<script>(.*?)</script>", html, flags=re.S)
    ]
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'self' {' '.join(hashes)}".rstrip(),
            "style-src 'unsafe-inline'",
            "connect-src 'self'",
            "img-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


class Guard:
    """ASGI middleware enforcing a :class:`Policy` (see the module docstring)."""

    def __init__(self, app: ASGIApp, policy: Policy, error_body: ErrorBody | None = None) -> None:
        self.app = app
        self.policy = policy
        self.ring = KeyRing(policy.keys)
        self.error_body = error_body or default_error_body
        self.active: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(send)
        refusal = self.check(scope)
        if refusal is not None:
            status, message, extra = refusal
            await self.refuse(scope, send, status, message, extra)
            return
        key: ApiKey = scope[KEY_SCOPE]
        limit = self.policy.max_concurrent_per_key
        if self.active.get(key.name, 0) >= limit:
            name = "this server" if key is ANONYMOUS else f"key {key.name!r}"
            await self.refuse(
                scope,
                send,
                429,
                f"{name}: more than {limit} requests at once; try again",
                [(b"retry-after", b"1")],
            )
            return
        self.active[key.name] = self.active.get(key.name, 0) + 1
        try:
            await self.timed(scope, receive, send)
        finally:
            self.active[key.name] -= 1

    def check(self, scope: Scope) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """The refusal of a request by its headers alone, or None (and its key set)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        method: str = scope["method"]
        path: str = scope["path"]
        host = headers.get("host", "")
        if not host_allowed(host, self.policy.allowed_hosts):
            return 421, f"Host {host!r}: not a name of this server (add it with --allowed-host)", []
        query = scope.get("query_string", b"").decode("latin-1")
        given = [n for n, _ in parse_qsl(query, keep_blank_values=True) if n.lower() in KEY_PARAMS]
        if given:
            return (
                400,
                f"{given[0]}: an API key never goes in the URL; send 'Authorization: Bearer KEY'",
                [],
            )
        scope[KEY_SCOPE] = ANONYMOUS
        if method in ("GET", "HEAD") and self.policy.is_open(path):
            return None
        why = cross_site(headers, host, self.policy.cors_origins)
        if why is not None:
            return 403, f"cross-site request refused: {why}", []
        if self.ring:
            scheme, _, token = headers.get("authorization", "").partition(" ")
            key = self.ring.match(token.strip()) if scheme.lower() == "bearer" else None
            if key is None:
                return (
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer KEY'",
                    [(b"www-authenticate", b"Bearer")],
                )
            scope[KEY_SCOPE] = key
            if self.policy.write_route(method, path) and not key.can_write:
                return 403, f"key {key.name!r} is read-only: {method} {path} needs a write key", []
        if method in _BODY_METHODS:
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json" and not (
                kind == "multipart/form-data" and is_upload_route(path)
            ):
                accepted = "application/json" + (
                    " or multipart/form-data" if is_upload_route(path) else ""
                )
                return 415, f"content-type {kind or '(none)'!r}: send {accepted}", []
        return None

    async def refuse(
        self,
        scope: Scope,
        send: Send,
        status: int,
        message: str,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        import json

        body = json.dumps(self.error_body(scope.get("path", ""), status, message)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    *(extra or []),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def timed(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's answer, or 408/504 when none has started within the timeout (the
        work left running on a thread finishes on its own; what it sends is dropped)."""
        seconds = self.policy.request_timeout_s
        started = asyncio.Event()
        answered = False
        headers = dict(scope["headers"])
        body_done = scope["method"] not in _BODY_METHODS or headers.get(b"content-length") == b"0"

        async def watched_receive() -> Message:
            nonlocal body_done
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body"):
                body_done = True
            return message

        async def watched_send(message: Message) -> None:
            if answered:
                return
            if message["type"] == "http.response.start":
                started.set()
            await send(message)

        task = asyncio.ensure_future(self.app(scope, watched_receive, watched_send))
        waiter = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, waiter}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if started.is_set() or task.done():
            await task
            return
        answered = True
        task.cancel()
        task.add_done_callback(_retrieve)
        if body_done:
            await self.refuse(
                scope, send, 504, f"no answer within {seconds:g} s (--request-timeout)"
            )
        else:
            await self.refuse(
                scope,
                send,
                408,
                f"request body not received within {seconds:g} s (--request-timeout)",
            )


def _retrieve(task: asyncio.Future[Any]) -> None:
    with contextlib.suppress(BaseException):
        task.exception()


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            present = {k.lower() for k, _ in message.get("headers", [])}
            extra = [(k, v) for k, v in _SECURITY_HEADERS if k not in present]
            message["headers"] = [*message.get("headers", []), *extra]
        await send(message)

    return sending
