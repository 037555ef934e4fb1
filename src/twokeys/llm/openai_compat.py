"""Any OpenAI-compatible server: ``/chat/completions`` for messages, ``/completions`` for a
plain prompt (base models). vLLM, llama.cpp's ``llama-server``, LM Studio and OpenAI all
speak it. ``base_url`` includes the version prefix, e.g. ``http://127.0.0.1:8080/v1``.

Streaming answers are server-sent events: ``data: {...}`` lines with the text in
``choices[0].delta.content`` (chat) or ``choices[0].text`` (completions), ended by
``data: [DONE]``. OpenAI accepts at most four stop strings; the first four are sent.

A server that ignores ``"stream": true`` and sends one whole JSON answer is read as
that answer; an HTML page or other non-JSON body is a clear error, never an empty
answer. :meth:`OpenAICompatLLM.detect_chat` asks llama.cpp's ``/props`` whether the
model has a chat template, so a base model gets a completion prompt.

Token counting: llama.cpp's server exposes its model's tokenizer at ``/tokenize`` (beside
``/v1``); :meth:`OpenAICompatLLM.token_counter` uses it when the server answers there,
and returns None otherwise (the caller then estimates).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from twokeys.llm.base import LLM, Prompt, check_generation
from twokeys.llm.http import (
    DEFAULT_TIMEOUT,
    JSONService,
    ServiceError,
    ServiceResponseError,
    json_field,
)
from twokeys.text.tokens import TokenCounter

MAX_STOP = 4


class OpenAICompatLLM(LLM):
    """A model behind an OpenAI-compatible API."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
        **service: Any,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.service = JSONService(
            "openai-compatible server",
            base_url,
            headers=headers,
            timeout=timeout,
            retries=retries,
            transport=transport,
            **service,
        )
        self._headers = headers
        self._transport = transport
        self._tokenizer: JSONService | None = None
        self._probed = False
        self._chat: bool | None = None

    def close(self) -> None:
        self.service.close()
        if self._tokenizer is not None:
            self._tokenizer.close()

    def _request(
        self, prompt: Prompt, stop: Sequence[str], max_tokens: int, temperature: float, stream: bool
    ) -> tuple[str, dict[str, Any]]:
        check_generation(max_tokens, temperature)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stream": stream,
        }
        if stop:
            body["stop"] = list(stop)[:MAX_STOP]
        if isinstance(prompt, str):
            body["prompt"] = prompt
            return "completions", body
        body["messages"] = [m.to_dict() for m in prompt]
        return "chat/completions", body

    def complete(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        path, body = self._request(prompt, stop, max_tokens, temperature, stream=False)
        data = self.service.post(path, body)
        field = ("text",) if path == "completions" else ("message", "content")
        return self._text(path, data, field)

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        path, body = self._request(prompt, stop, max_tokens, temperature, stream=True)
        field = ("text",) if path == "completions" else ("delta", "content")
        for event in self.service.stream(path, body, sse=True):
            if isinstance(event, dict) and not event.get("choices"):
                if "error" in event:
                    raise ServiceResponseError(
                        f"{self.service.name} at {self.service.url(path)}: {event['error']}"
                    )
                continue  # e.g. a final usage-only event
            whole = _choice(event).get("message") is not None  # the server did not stream
            text = self._text(
                path, event, ("message", "content") if whole else field, optional=True
            )
            if text:
                yield text

    def _text(self, path: str, data: Any, field: tuple[str, ...], *, optional: bool = False) -> str:
        url = self.service.url(path)
        choice = json_field(self.service, url, data, "choices", 0)
        value: Any = choice
        for key in field:
            if optional and isinstance(value, dict) and key not in value:
                return ""
            value = json_field(self.service, url, value, key)
        if value is None and optional:
            return ""
        if not isinstance(value, str):
            raise ServiceResponseError(
                f"{self.service.name} at {url}: answer text is not a string: {value!r}"
            )
        return value

    def _server_root(self) -> JSONService:
        """The server's own routes (``/props``, ``/tokenize``: llama.cpp's), beside ``/v1``;
        probes fail fast, without retries."""
        return JSONService(
            self.service.name,
            self.service.base_url.removesuffix("/v1"),
            headers=self._headers,
            timeout=min(self.service.timeout, 10.0),
            retries=0,
            transport=self._transport,
        )

    # -- chat template --------------------------------------------------------------------

    def detect_chat(self) -> bool:
        """llama.cpp's ``/props`` tells whether the loaded model has a chat template (a
        base model has none and loops on role markers when sent messages); other
        servers do not answer there and get chat messages."""
        if self._chat is None:
            props = self._server_root()
            try:
                data = props.get("props")
            except ServiceError:
                data = None
            finally:
                props.close()
            template = data.get("chat_template") if isinstance(data, dict) else None
            self._chat = bool(template.strip()) if isinstance(template, str) else True
            self.chat = self._chat
        return self._chat

    # -- tokenizer ----------------------------------------------------------------------

    def token_counter(self) -> TokenCounter | None:
        """llama.cpp's ``/tokenize`` when the server has it (probed once), else None."""
        if not self._probed:
            self._probed = True
            tokenizer = self._server_root()
            try:
                _tokenize(tokenizer, "probe")
            except ServiceError:
                tokenizer.close()
                return None
            self._tokenizer = tokenizer
        service = self._tokenizer
        if service is None:
            return None
        return lambda texts: [len(_tokenize(service, t)) if t else 0 for t in texts]


def _choice(event: Any) -> dict[str, Any]:
    choices = event.get("choices") if isinstance(event, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    return first if isinstance(first, dict) else {}


def _tokenize(service: JSONService, text: str) -> list[int]:
    data = service.post("tokenize", {"content": text, "add_special": False})
    tokens = json_field(service, service.url("tokenize"), data, "tokens")
    if not isinstance(tokens, list):
        raise ServiceResponseError(f"{service.name}: /tokenize answered {data!r}")
    return tokens
