"""Shared HTTP plumbing for model servers: timeouts, retries with backoff, clear errors.

Every remote call (chat, completion, embeddings) goes through :class:`JSONService`, which

* sends JSON and parses JSON (or NDJSON / server-sent-event streams),
* retries connection failures, timeouts, ``429`` and ``5xx`` answers up to ``retries``
  times, sleeping ``backoff * 2**attempt`` seconds (capped at ``max_backoff``, or the
  server's ``Retry-After`` when it gives one) between attempts,
* never retries other ``4xx`` answers (a wrong model name or key will not fix itself),
* turns every failure into a :class:`ServiceError` whose message names the service, the
  URL, what went wrong and what to try.

A stream is retried only until its first chunk arrives; a failure after that is raised,
since replaying it would repeat text the caller has already shown.

``first_byte`` (seconds) is a deadline of its own for a stream's first byte: a server that
takes the request and sends nothing back (no status line, no headers) for that long is
reported at once, and not retried (it is hung or swamped, and the same request would hang
again). Once the answer has begun, each read gets the whole ``timeout``: a model that is
slow to produce tokens but streaming is never cut short by it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from twokeys.errors import ConfigError, TwokeysError

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_SSE_TYPES = ("text/event-stream",)
_NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/jsonlines")
DEFAULT_TIMEOUT = 120.0


class ServiceError(TwokeysError):
    """A model server could not be reached or gave an unusable answer."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ServiceTimeoutError(ServiceError):
    """No answer within the timeout, on every attempt."""


class ServiceUnavailableError(ServiceError):
    """Connection refused or reset, or a ``5xx`` / ``429`` answer on every attempt."""


class ServiceResponseError(ServiceError):
    """A non-retryable error status, or a body that is not the JSON the API promises."""


class JSONService:
    """A JSON-over-HTTP API at ``base_url`` (one service: "ollama", "openai", ...)."""

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = 2,
        first_byte: float | None = None,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout <= 0:
            raise ConfigError(f"timeout: must be > 0 seconds, got {timeout}")
        if retries < 0:
            raise ConfigError(f"retries: must be >= 0, got {retries}")
        if first_byte is not None and first_byte <= 0:
            raise ConfigError(f"first_byte_timeout: must be > 0 seconds, got {first_byte}")
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.first_byte = first_byte
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = sleep
        self._client = httpx.Client(
            headers=dict(headers or {}), timeout=httpx.Timeout(timeout), transport=transport
        )

    def close(self) -> None:
        self._client.close()

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    # -- requests -----------------------------------------------------------------------

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON and return the parsed JSON answer."""
        url = self.url(path)
        for attempt in self._attempts():
            with self._failures(url, attempt) as retry:
                response = self._client.post(url, json=body)
                self._check(url, response, attempt, retry)
                if retry.wait is None:
                    return self._json(url, response.text)
        raise AssertionError("unreachable")  # pragma: no cover

    def stream(self, path: str, body: Mapping[str, Any], *, sse: bool) -> Iterator[Any]:
        """POST ``body`` and yield each JSON event of an NDJSON (or, with ``sse``, an
        ``text/event-stream``) answer. A server-sent ``[DONE]`` ends the stream."""
        url = self.url(path)
        first = (
            None if self.first_byte is None else httpx.Timeout(self.timeout, read=self.first_byte)
        )
        for attempt in self._attempts():
            with (
                self._failures(url, attempt, first_byte=first is not None) as retry,
                self._client.stream(
                    "POST", url, json=body, timeout=first or httpx.USE_CLIENT_DEFAULT
                ) as response,
            ):
                retry.answered = True
                if first is not None:  # the answer has begun: its reads get the whole timeout
                    response.request.extensions["timeout"] = httpx.Timeout(self.timeout).as_dict()
                if response.status_code >= 400:
                    response.read()
                self._check(url, response, attempt, retry)
                if retry.wait is not None:
                    continue
                kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if kind and kind not in (_SSE_TYPES if sse else _NDJSON_TYPES):
                    # the server ignored "stream": one whole answer, or not an API at all
                    retry.started = True
                    yield self._whole(url, response.read().decode("utf-8", "replace"), kind)
                    return
                events = 0
                for line in response.iter_lines():
                    payload = _event_payload(line, sse)
                    if payload is None:
                        continue
                    if payload == "[DONE]":
                        return
                    event = self._json(url, payload)
                    retry.started = True
                    events += 1
                    yield event
                if events == 0:
                    raise ServiceResponseError(f"{self.name} at {url}: the stream held no answer")
                return
        raise AssertionError("unreachable")  # pragma: no cover

    # -- internals ------------------------------------------------------------------------

    def _attempts(self) -> Iterator[int]:
        yield from range(self.retries + 1)

    @contextmanager
    def _failures(self, url: str, attempt: int, *, first_byte: bool = False) -> Iterator[_Retry]:
        """Map transport failures to errors, or to a retry while attempts remain
        (``first_byte``: a read timeout before the answer began is the first-byte
        deadline's, and final)."""
        retry = _Retry()
        last = attempt >= self.retries
        try:
            yield retry
        except httpx.TimeoutException as exc:
            if first_byte and not retry.answered and isinstance(exc, httpx.ReadTimeout):
                raise ServiceTimeoutError(
                    f"{self.name} at {url}: took the request but sent nothing within "
                    f"{self.first_byte:g}s (timed out waiting for the first token); the "
                    "server is hung or overloaded, or the model still loading: raise "
                    "first_byte_timeout if it is only slow to start"
                ) from None
            if last or retry.started:
                raise ServiceTimeoutError(
                    f"{self.name} at {url}: no answer within {self.timeout:g}s "
                    f"({_attempts_text(attempt)}); the model may still be loading or too slow "
                    "for this timeout: raise --timeout"
                ) from None
            self._sleep(self._delay(attempt, None))
            return
        except httpx.TransportError as exc:
            if last or retry.started:
                raise ServiceUnavailableError(
                    f"{self.name} at {url}: {_reason(exc)} ({_attempts_text(attempt)}); "
                    f"is the server running at {self.base_url}?"
                ) from None
            self._sleep(self._delay(attempt, None))
            return
        if retry.wait is not None:
            self._sleep(retry.wait)

    def _check(self, url: str, response: httpx.Response, attempt: int, retry: _Retry) -> None:
        status = response.status_code
        if status < 400:
            return
        detail = _error_detail(response.text)
        if status in RETRY_STATUSES and attempt < self.retries:
            retry.wait = self._delay(attempt, response.headers.get("retry-after"))
            return
        where = f"{self.name} at {url}: HTTP {status}"
        if status in RETRY_STATUSES:
            raise ServiceUnavailableError(
                f"{where} after {_attempts_text(attempt)}: {detail}", status=status
            )
        hint = {
            401: "; check the API key (OPENAI_API_KEY)",
            403: "; check the API key and its permissions",
            404: "; check the model name and --base-url",
        }.get(status, "")
        raise ServiceResponseError(f"{where}: {detail}{hint}", status=status)

    def _json(self, url: str, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            snippet = " ".join(text.split())[:120]
            raise ServiceResponseError(
                f"{self.name} at {url}: the answer is not valid JSON: {snippet!r}"
            ) from None

    def _whole(self, url: str, text: str, kind: str) -> Any:
        """A non-streamed answer given to a streaming request: its JSON, or a clear error."""
        try:
            return json.loads(text)
        except ValueError:
            snippet = " ".join(text.split())[:120]
            raise ServiceResponseError(
                f"{self.name} at {url}: answered {kind or 'an untyped body'}, not the API's "
                f"JSON: {snippet!r}; check --base-url"
            ) from None

    def get(self, path: str) -> Any:
        """GET ``path`` once (no retries) and return the parsed JSON answer."""
        url = self.url(path)
        with self._failures(url, self.retries) as retry:
            response = self._client.get(url)
            self._check(url, response, self.retries, retry)
            return self._json(url, response.text)
        raise AssertionError("unreachable")  # pragma: no cover

    def check_alive(self, path: str, seconds: float) -> str | None:
        """Whether the server answers a GET of ``path`` within ``seconds`` (once, no
        retries): None when it answers anything at all (an error status included: the
        server is up), else why not."""
        url = self.url(path)
        try:
            self._client.get(url, timeout=seconds).close()
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                return f"cannot connect (no answer within {seconds:g} s)"
            return f"took the connection but sent no answer to GET {url} within {seconds:g} s"
        except httpx.ConnectError as exc:
            why = str(exc).split("] ", 1)[-1] or "connection failed"  # "[Errno 111] ..."
            return f"cannot connect ({why.lower()})"
        except httpx.TransportError as exc:
            return f"cannot connect ({_reason(exc)})"
        return None

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), self.max_backoff)
            except ValueError:
                pass
        return float(min(self.backoff * 2**attempt, self.max_backoff))


class _Retry:
    """One attempt's state: seconds to wait before the next one (set by a status check),
    whether the answer has begun, and whether a stream has yielded (after which a
    failure is not retried)."""

    wait: float | None = None
    started: bool = False
    answered: bool = False  # the server's status line and headers have arrived


def _attempts_text(attempt: int) -> str:
    return "1 attempt" if attempt == 0 else f"{attempt + 1} attempts"


def _event_payload(line: str, sse: bool) -> str | None:
    line = line.strip()
    if not line:
        return None
    if not sse:
        return line
    if not line.startswith("data:"):
        return None  # comments (": ping"), "event:", "id:" lines
    return line[len("data:") :].strip() or None


def _error_detail(text: str) -> str:
    """The message of an error body: ``{"error": "..."}``, ``{"error": {"message": ...}}``."""
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:200] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:300]
    return str(data)[:300]


def _reason(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.ConnectError):
        return "connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server closed the connection"
    return type(exc).__name__


def json_field(service: JSONService, url: str, data: Any, *path: str | int) -> Any:
    """``data[path[0]][path[1]]...`` or a :class:`ServiceResponseError` naming the field."""
    current = data
    for key in path:
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            dotted = ".".join(str(k) for k in path)
            raise ServiceResponseError(
                f"{service.name} at {url}: unexpected answer, no field {dotted!r}: "
                f"{json.dumps(data)[:200]}"
            ) from None
    return current
