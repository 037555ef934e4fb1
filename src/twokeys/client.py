"""A Python client for ``twokeys serve``: the library's search, over HTTP.

import twokeys.client
kb = twokeys.client.Client("http://127.0.0.1:8000", api_key="...")
for hit in kb.search("What does error code E-4821 mean?", k=5):
    print(hit.rank, hit.cite)

:meth:`Client.search` takes the keywords :meth:`twokeys.engine.Index.search` takes, checks
them here with the same :class:`~twokeys.request.SearchRequest` (so a bad option is the
same :class:`~twokeys.errors.ConfigError`, before any request is sent) and returns the
same :class:`~twokeys.types.Hit` values: a hit from the client equals the hit a local
``Index`` gives for that request.

Transport: every call has a timeout; a refused connection and a ``429`` / ``503`` answer
are retried ``retries`` times, waiting ``backoff * 2**attempt`` seconds (capped at
``max_backoff``) or the server's ``Retry-After``. Failures are the library's typed errors:
``400``/``413``/``422`` a :class:`ConfigError` (the server's message), ``401``/``403`` an
:class:`AuthError`, ``404`` a :class:`NotFoundError`, a server that cannot be reached,
times out or stays busy a :class:`ServiceUnavailable`.

The server has no batch route yet: :meth:`Client.search_many` sends one request per
query (on one kept-alive connection).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import httpx

from twokeys.errors import (
    AuthError,
    ConfigError,
    NotFoundError,
    ServiceUnavailable,
    TwokeysError,
)
from twokeys.request import SearchRequest
from twokeys.types import HEADING_SEPARATOR, Chunk, Hit

__all__ = ["AskEvent", "Client", "RemoteAnswer", "StoredDocument", "WriteResult"]

DEFAULT_TIMEOUT = 30.0
RETRY_STATUSES = frozenset({429, 503})
BATCH = 32  # searches in one POST /search/batch (the server's limit)


@dataclass(frozen=True, slots=True)
class RemoteAnswer:
    """An answer from ``POST /ask``: its text, kind and cited sources; ``data`` holds the
    whole answer as the server wrote it (``Answer.to_dict``)."""

    question: str
    text: str
    kind: str
    declined: bool
    sources: tuple[Mapping[str, Any], ...]
    data: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def abstains(self) -> bool:
        return self.kind in ("abstained", "no-evidence") or self.declined

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RemoteAnswer:
        return cls(
            question=str(data["question"]),
            text=str(data["answer"]),
            kind=str(data["kind"]),
            declined=bool(data.get("declined", False)),
            sources=tuple(data.get("sources", ())),
            data=data,
        )


@dataclass(frozen=True, slots=True)
class AskEvent:
    """One server-sent event of a streamed answer: ``retrieved``, ``packed``,
    ``model_failed``, ``delta`` (``data["text"]``) or ``done`` (the answer)."""

    name: str
    data: Mapping[str, Any]

    @property
    def hits(self) -> list[list[Hit]]:
        """A ``retrieved`` event's hits, one list per sub-query."""
        return [[Hit.from_dict(h) for h in run["hits"]] for run in self.data.get("sub_queries", ())]


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A document as the server holds it, with its chunks."""

    id: str
    title: str
    path: str
    kind: str
    sha256: str
    metadata: Mapping[str, Any]
    chunks: tuple[Chunk, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoredDocument:
        return cls(
            id=str(data["id"]),
            title=str(data["title"]),
            path=str(data["path"]),
            kind=str(data["kind"]),
            sha256=str(data["sha256"]),
            metadata=dict(data.get("metadata", {})),
            chunks=tuple(
                Chunk(
                    doc_id=str(data["id"]),
                    position=int(c["position"]),
                    text=str(c["text"]),
                    start=int(c["start"]),
                    end=int(c["end"]),
                    heading_path=tuple(c["heading"].split(HEADING_SEPARATOR))
                    if c.get("heading")
                    else (),
                )
                for c in data.get("chunks", ())
            ),
        )


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did: documents added, changed, unchanged and removed; the index's
    documents and chunks after it, and its new generation."""

    added: int
    changed: int
    unchanged: int
    removed: int
    documents: int
    chunks: int
    generation: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WriteResult:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


class Client:
    """A ``twokeys serve`` at ``url``: search, ask, documents and stats (see the module doc)."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"url: must start with http:// or https://, got {url!r}")
        if type(timeout) not in (int, float) or timeout <= 0:
            raise ConfigError(f"timeout: must be > 0 seconds, got {timeout!r}")
        if type(retries) is not int or retries < 0:
            raise ConfigError(f"retries: must be an integer >= 0, got {retries!r}")
        self.url = url.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = sleep
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=self.timeout, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # -- search -------------------------------------------------------------------------

    def request(self, query: str | SearchRequest, /, **options: Any) -> SearchRequest:
        """The :class:`SearchRequest` that ``search(query, **options)`` sends, checked here."""
        if isinstance(query, SearchRequest):
            if options:
                raise ConfigError(
                    f"search: options ({', '.join(sorted(options))}) given with a "
                    "SearchRequest; set them on the request"
                )
            return query
        options = dict(options)
        mode = options.pop("mode", None)
        if "rerank" in options:  # the keyword's name before SearchRequest, as Index takes it
            options["reranker"] = options.pop("rerank")
        return SearchRequest.parse(query, mode, **options)

    def search(self, query: str | SearchRequest, /, **options: Any) -> list[Hit]:
        """The top ``k`` hits, as :meth:`twokeys.engine.Index.search` gives them."""
        data = self._json("POST", "/search", json=self.request(query, **options).to_dict())
        return [Hit.from_dict(h) for h in data["hits"]]

    def search_many(self, queries: Sequence[str], /, **options: Any) -> list[list[Hit]]:
        """:meth:`search` for each query with the same options, through the server's
        ``POST /search/batch`` (:data:`BATCH` searches a request, each batch answered from
        one generation of the index); a server without that route gets one request per
        query."""
        requests = [self.request(q, **options).to_dict() for q in queries]
        out: list[list[Hit]] = []
        for start in range(0, len(requests), BATCH):
            searches = requests[start : start + BATCH]
            try:
                data = self._json("POST", "/search/batch", json={"searches": searches})
            except NotFoundError:  # an older server: no batch route
                out.extend(self.search(SearchRequest.from_dict(r)) for r in searches)
                continue
            out.extend([Hit.from_dict(h) for h in r["hits"]] for r in data["results"])
        return out

    # -- ask ----------------------------------------------------------------------------

    def ask(self, question: str, /, **options: Any) -> RemoteAnswer:
        """An answer with its cited sources (options: those of ``twokeys.rag.AskOptions``)."""
        body = {**options, "question": question, "stream": False}
        return RemoteAnswer.from_dict(self._json("POST", "/ask", json=body))

    def ask_stream(self, question: str, /, **options: Any) -> Iterator[AskEvent]:
        """The answer's events as they come (``delta`` carries text); the last is ``done``.
        An ``error`` event from the server is raised as a :class:`TwokeysError`."""
        body = {**options, "question": question, "stream": True}
        with self._send("POST", "/ask", json=body, stream=True) as response:
            name, lines = "message", []
            for line in response.iter_lines():
                if line.startswith("event:"):
                    name = line[len("event:") :].strip()
                elif line.startswith("data:"):
                    lines.append(line[len("data:") :].strip())
                elif not line and lines:
                    data = json.loads("\n".join(lines))
                    if name == "error":
                        raise TwokeysError(f"{self.url}/ask: {data.get('detail', data)}")
                    yield AskEvent(name, data)
                    name, lines = "message", []

    # -- documents ----------------------------------------------------------------------

    def document(self, doc_id: str) -> StoredDocument:
        """A document and its chunks; a :class:`NotFoundError` if there is none."""
        return StoredDocument.from_dict(self._json("GET", f"/documents/{_quote(doc_id)}"))

    def add_documents(self, documents: Sequence[Mapping[str, Any]]) -> WriteResult:
        """Add or replace documents (``{"id", "text", "title"?, "kind"?, "metadata"?}``),
        committed together and searchable when this returns."""
        body = {"documents": [dict(d) for d in documents]}
        return WriteResult.from_dict(self._json("POST", "/documents", json=body))

    def add_files(self, paths: Sequence[str | Path]) -> WriteResult:
        """Upload files (.md, .txt, .rst, .html), each under its file name as id."""
        files = [("file", (Path(p).name, Path(p).read_bytes())) for p in paths]
        return WriteResult.from_dict(self._json("POST", "/documents", files=files))

    def delete_document(self, doc_id: str) -> WriteResult:
        """Delete a document; it is gone from searches when this returns."""
        return WriteResult.from_dict(self._json("DELETE", f"/documents/{_quote(doc_id)}"))

    # -- status -------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The served index's counts, parameters and sizes (``GET /stats``)."""
        data: dict[str, Any] = self._json("GET", "/stats")
        return data

    def healthy(self) -> bool:
        """Whether the server answers ``/healthz`` (once, no retries)."""
        try:
            return self._http.get("/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    # -- transport ----------------------------------------------------------------------

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        with self._send(method, path, **kwargs) as response:
            response.read()
            try:
                return response.json()
            except ValueError:
                raise ServiceUnavailable(
                    f"{self.url}{path}: the answer is not JSON; is this a twokeys server?"
                ) from None

    def _send(self, method: str, path: str, *, stream: bool = False, **kwargs: Any) -> _Response:
        where = f"{method} {self.url}{path}"
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            request = self._http.build_request(method, path, **kwargs)
            try:
                response = self._http.send(request, stream=True)
            except httpx.ConnectError:
                if last:
                    raise ServiceUnavailable(
                        f"{where}: connection failed ({_attempts(attempt)}); "
                        f"is twokeys serve running at {self.url}?"
                    ) from None
                self._sleep(self._delay(attempt, None))
                continue
            except httpx.TimeoutException:
                raise ServiceUnavailable(
                    f"{where}: no answer within {self.timeout:g}s; raise timeout="
                ) from None
            except httpx.TransportError as exc:
                raise ServiceUnavailable(f"{where}: {type(exc).__name__}: {exc}") from None
            status = response.status_code
            if status < 400:
                return _Response(response)
            response.read()
            response.close()
            if status in RETRY_STATUSES and not last:
                self._sleep(self._delay(attempt, response.headers.get("retry-after")))
                continue
            raise _error(where, status, _detail(response), attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            seconds = _retry_after(retry_after)
            if seconds is not None:
                return min(seconds, self.max_backoff)
        return float(min(self.backoff * 2**attempt, self.max_backoff))


class _Response:
    """A streamed response, closed when the ``with`` block ends."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __enter__(self) -> httpx.Response:
        return self.response

    def __exit__(self, *exc: object) -> None:
        self.response.close()


def _quote(doc_id: str) -> str:
    from urllib.parse import quote

    return quote(doc_id, safe="/")


def _attempts(attempt: int) -> str:
    return "1 attempt" if attempt == 0 else f"{attempt + 1} attempts"


def _retry_after(value: str) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return " ".join(response.text.split())[:200] or "(empty body)"
    if isinstance(data, dict):
        detail = data.get("detail", data.get("error", data))
        if isinstance(detail, dict):
            detail = detail.get("message", detail)
        return str(detail)
    return str(data)[:300]


def _error(where: str, status: int, detail: str, attempt: int) -> TwokeysError:
    if status in (400, 413, 422):
        return ConfigError(detail)  # the library's own message, as a local search gives it
    if status in (401, 403):
        return AuthError(f"{where}: HTTP {status}: {detail}; pass Client(url, api_key=...)")
    if status == 404:
        return NotFoundError(f"{where}: {detail}")
    if status in RETRY_STATUSES or status in (409, 502, 504):
        return ServiceUnavailable(
            f"{where}: HTTP {status} after {_attempts(attempt)}: {detail}", status=status
        )
    return TwokeysError(f"{where}: HTTP {status}: {detail}")
