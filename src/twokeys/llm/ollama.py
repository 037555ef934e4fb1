"""Ollama's native API: ``/api/chat`` for messages, ``/api/generate`` (raw) for prompts.

Only what differs from the shared path (:mod:`twokeys.llm.remote`) is here. Streaming
answers are NDJSON: one ``{"message": {"content": ...}, "done": false}`` object a line,
then a final ``{"done": true, ...}``. Errors arrive as ``{"error": "..."}``, with an error
status or, mid-stream, inside a ``200`` answer. ``num_ctx`` is sent when the context size
is known, since Ollama otherwise cuts long prompts to its default window without saying
so. ``/api/show`` tells the model's prompt template; ``/api/version`` is the liveness GET.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twokeys.llm.remote import RemoteLLM


class OllamaLLM(RemoteLLM):
    """A model served by Ollama, e.g. ``OllamaLLM("qwen2.5:7b")``."""

    provider = "ollama"
    service_name = "ollama"
    sse = False
    chat_path = "api/chat"
    prompt_path = "api/generate"
    alive_path = "api/version"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "http://127.0.0.1:11434",
        context_tokens: int | None = None,
        **shared: Any,
    ) -> None:
        super().__init__(model, base_url=base_url, **shared)
        self.context_tokens = context_tokens

    def _parameters(
        self, stop: Sequence[str], max_tokens: int, temperature: float
    ) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": temperature, "num_predict": max_tokens}
        if stop:
            options["stop"] = list(stop)
        if self.context_tokens:
            options["num_ctx"] = self.context_tokens
        return {"options": options}

    def _prompt_fields(self, prompt: str) -> dict[str, Any]:
        return {"prompt": prompt, "raw": True}

    def _done(self, event: Any) -> bool:
        return isinstance(event, dict) and bool(event.get("done"))

    def _text(self, path: str, data: Any, streamed: bool) -> str:
        if isinstance(data, dict) and "error" in data:
            raise self.error(path, data["error"])
        keys = ("response",) if path == self.prompt_path else ("message", "content")
        text = self.field(path, data, *keys)
        if not isinstance(text, str):
            raise self.error(path, f"answer text is not a string: {text!r}")
        return text

    def _template(self) -> str | None:
        show = self.one_off()
        try:
            data = show.post("api/show", {"model": self.model})
        finally:
            show.close()
        template = data.get("template") if isinstance(data, dict) else None
        return template if isinstance(template, str) else None
