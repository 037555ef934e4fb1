"""Ollama's native API: ``/api/chat`` for messages, ``/api/generate`` (raw) for prompts.

Streaming answers are NDJSON: one ``{"message": {"content": ...}, "done": false}`` object
a line, then a final ``{"done": true, ...}``. Errors arrive as ``{"error": "..."}``, with
an error status or, mid-stream, inside a ``200`` answer. ``num_ctx`` is sent when the
context size is known, since Ollama otherwise cuts long prompts to its default window
without saying so.
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


class OllamaLLM(LLM):
    """A model served by Ollama, e.g. ``OllamaLLM("qwen2.5:7b")``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "http://127.0.0.1:11434",
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = 2,
        context_tokens: int | None = None,
        transport: httpx.BaseTransport | None = None,
        **service: Any,
    ) -> None:
        self.model = model
        self.name = f"ollama:{model}"
        self.context_tokens = context_tokens
        self.service = JSONService(
            "ollama", base_url, timeout=timeout, retries=retries, transport=transport, **service
        )
        self._chat: bool | None = None
        self._transport = transport

    def close(self) -> None:
        self.service.close()

    def detect_chat(self) -> bool:
        """``/api/show`` gives the model's prompt template: a base model's is empty or just
        ``{{ .Prompt }}``, and it gets a completion prompt instead of chat messages."""
        if self._chat is None:
            probe = JSONService(
                "ollama",
                self.service.base_url,
                timeout=min(self.service.timeout, 10.0),
                retries=0,
                transport=self._transport,
            )
            try:
                data = probe.post("api/show", {"model": self.model})
            except ServiceError:
                data = None
            finally:
                probe.close()
            template = data.get("template") if isinstance(data, dict) else None
            if isinstance(template, str):
                self._chat = template.replace(" ", "") not in ("", "{{.Prompt}}")
            else:
                self._chat = True
            self.chat = self._chat
        return self._chat

    def _request(
        self, prompt: Prompt, stop: Sequence[str], max_tokens: int, temperature: float, stream: bool
    ) -> tuple[str, dict[str, Any]]:
        check_generation(max_tokens, temperature)
        options: dict[str, Any] = {"temperature": temperature, "num_predict": max_tokens}
        if stop:
            options["stop"] = list(stop)
        if self.context_tokens:
            options["num_ctx"] = self.context_tokens
        body: dict[str, Any] = {"model": self.model, "stream": stream, "options": options}
        if isinstance(prompt, str):
            body.update(prompt=prompt, raw=True)
            return "api/generate", body
        body["messages"] = [m.to_dict() for m in prompt]
        return "api/chat", body

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
        return self._text(path, data)

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        path, body = self._request(prompt, stop, max_tokens, temperature, stream=True)
        for event in self.service.stream(path, body, sse=False):
            text = self._text(path, event)
            if text:
                yield text
            if isinstance(event, dict) and event.get("done"):
                return

    def _text(self, path: str, data: Any) -> str:
        url = self.service.url(path)
        if isinstance(data, dict) and "error" in data:
            raise ServiceResponseError(f"ollama at {url}: {data['error']}")
        if path == "api/generate":
            text = json_field(self.service, url, data, "response")
        else:
            text = json_field(self.service, url, data, "message", "content")
        if not isinstance(text, str):
            raise ServiceResponseError(f"ollama at {url}: answer text is not a string: {text!r}")
        return text
