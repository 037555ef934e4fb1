"""The one chat path of models behind a server (Ollama, any OpenAI-compatible server).

:class:`RemoteLLM` holds what every such backend does alike: it builds the request
(model, messages or a completion prompt, the generation parameters), sends it through
:class:`~twokeys.llm.http.JSONService` (retries with backoff, the total timeout and the
first-byte deadline, NDJSON or server-sent-event parsing, failures mapped to
:class:`~twokeys.llm.http.ServiceError`), reads the answer's text, asks the server once
whether the model has a chat template, and checks that the server is alive.

A backend module (:mod:`~twokeys.llm.ollama`, :mod:`~twokeys.llm.openai_compat`) holds
only what differs: its routes, how it names the generation parameters, where the text
is in an answer, and where it tells a chat template.

Liveness (:meth:`RemoteLLM.unreachable`): a GET of the server's cheapest route
(``/v1/models``, Ollama's ``/api/version``) must get any answer within
:data:`ALIVE_SECONDS`; the finding is reused for :data:`ALIVE_MEMORY` seconds. It tells a
server that is down, unroutable or hung (it takes the connection and never answers) in
about a second, before a chat turn waits on it, without judging how fast the model
generates. The first-byte deadline (``first_byte``, default :data:`DEFAULT_FIRST_BYTE`
seconds, at most the timeout) then bounds a generation request the server takes and
never starts answering; once the answer streams, only ``timeout`` applies.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import httpx

from twokeys.llm.base import LLM, Prompt, check_generation
from twokeys.llm.http import (
    DEFAULT_TIMEOUT,
    JSONService,
    ServiceError,
    ServiceResponseError,
    json_field,
)

ALIVE_SECONDS = 1.0  # how long the server may take to answer the liveness GET
ALIVE_MEMORY = 5.0  # seconds a liveness finding is reused
DEFAULT_FIRST_BYTE = 10.0  # seconds a generation request may wait for its first byte
PROBE_TIMEOUT = 10.0  # the most a one-off question to the server (chat template) waits


class RemoteLLM(LLM):
    """A model behind a server; subclasses say what differs (see the module docstring)."""

    #: the spec's provider, e.g. "ollama"
    provider: ClassVar[str]
    #: how errors name the service, e.g. "openai-compatible server"
    service_name: ClassVar[str]
    #: True: streams are server-sent events; False: NDJSON
    sse: ClassVar[bool]
    #: routes, relative to the base URL: messages, a completion prompt, the liveness GET
    chat_path: ClassVar[str]
    prompt_path: ClassVar[str]
    alive_path: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        first_byte: float | None = None,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        **service: Any,
    ) -> None:
        self.model = model
        self.name = f"{self.provider}:{model}"
        self._headers = dict(headers or {})
        self._transport = transport
        self.service = JSONService(
            self.service_name,
            base_url,
            headers=self._headers,
            timeout=timeout,
            retries=retries,
            first_byte=min(first_byte or DEFAULT_FIRST_BYTE, timeout),
            transport=transport,
            **service,
        )
        self._chat: bool | None = None
        self._alive: tuple[float, str | None] | None = None

    # -- what differs ---------------------------------------------------------------------

    @abstractmethod
    def _parameters(
        self, stop: Sequence[str], max_tokens: int, temperature: float
    ) -> dict[str, Any]:
        """The request's generation fields, in the backend's names."""

    @abstractmethod
    def _text(self, path: str, data: Any, streamed: bool) -> str | None:
        """The text of an answer or (``streamed``) of a streamed event (None: an event
        without text); an error the server put in the answer raises
        :class:`ServiceResponseError`."""

    @abstractmethod
    def _template(self) -> str | None:
        """The model's chat template, as the server tells it (None: it does not say)."""

    def _prompt_fields(self, prompt: str) -> dict[str, Any]:
        return {"prompt": prompt}

    def _done(self, event: Any) -> bool:
        """Whether a streamed event is the last one (beside the stream's own end)."""
        return False

    # -- the shared path ------------------------------------------------------------------

    def close(self) -> None:
        self.service.close()

    def _request(
        self, prompt: Prompt, stop: Sequence[str], max_tokens: int, temperature: float, stream: bool
    ) -> tuple[str, dict[str, Any]]:
        check_generation(max_tokens, temperature)
        body: dict[str, Any] = {"model": self.model}
        body.update(self._parameters(stop, max_tokens, temperature))
        body["stream"] = stream
        if isinstance(prompt, str):
            body.update(self._prompt_fields(prompt))
            return self.prompt_path, body
        body["messages"] = [m.to_dict() for m in prompt]
        return self.chat_path, body

    def complete(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        path, body = self._request(prompt, stop, max_tokens, temperature, stream=False)
        return self._text(path, self.service.post(path, body), False) or ""

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        path, body = self._request(prompt, stop, max_tokens, temperature, stream=True)
        for event in self.service.stream(path, body, sse=self.sse):
            text = self._text(path, event, True)
            if text:
                yield text
            if self._done(event):
                return

    def field(self, path: str, data: Any, *keys: str | int) -> Any:
        """``data[keys...]``, a clear error when missing (see :func:`json_field`)."""
        return json_field(self.service, self.service.url(path), data, *keys)

    def error(self, path: str, message: object) -> ServiceResponseError:
        return ServiceResponseError(f"{self.service.name} at {self.service.url(path)}: {message}")

    def one_off(self, base_url: str | None = None) -> JSONService:
        """A service for one question to the server (no retries, a short timeout), at
        ``base_url`` (default: the model's)."""
        return JSONService(
            self.service.name,
            base_url or self.service.base_url,
            headers=self._headers,
            timeout=min(self.service.timeout, PROBE_TIMEOUT),
            retries=0,
            transport=self._transport,
        )

    def detect_chat(self) -> bool:
        """Asks the server once whether the model has a chat template: a base model has
        none (or just the prompt) and gets a completion prompt instead of messages; a
        server that does not say gets messages."""
        if self._chat is None:
            try:
                template = self._template()
            except ServiceError:
                template = None
            if template is None:
                self._chat = True
            else:
                self._chat = "".join(template.split()) not in ("", "{{.Prompt}}")
            self.chat = self._chat
        return self._chat

    def unreachable(self) -> str | None:
        """The liveness check of the module docstring, remembered for a few seconds."""
        now = time.monotonic()
        if self._alive is not None and now - self._alive[0] < ALIVE_MEMORY:
            return self._alive[1]
        why = self.service.check_alive(self.alive_path, ALIVE_SECONDS)
        found = None
        if why is not None:
            base = self.service.base_url
            found = f"{self.name} at {base}: {why}; is the server running at {base}?"
        self._alive = (now, found)
        return found
