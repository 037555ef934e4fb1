"""Any OpenAI-compatible server: ``/chat/completions`` for messages, ``/completions`` for a
plain prompt (base models). vLLM, llama.cpp's ``llama-server``, LM Studio and OpenAI all
speak it. ``base_url`` includes the version prefix, e.g. ``http://127.0.0.1:8080/v1``.

Only what differs from the shared path (:mod:`twokeys.llm.remote`) is here. Streaming
answers are server-sent events: ``data: {...}`` lines with the text in
``choices[0].delta.content`` (chat) or ``choices[0].text`` (completions), ended by
``data: [DONE]``. OpenAI accepts at most four stop strings; the first four are sent.
A server that ignores ``"stream": true`` and sends one whole JSON answer is read as
that answer. llama.cpp's ``/props`` (beside ``/v1``) tells whether the model has a chat
template, so a base model gets a completion prompt; ``/v1/models`` is the liveness GET.

Token counting: llama.cpp's server exposes its model's tokenizer at ``/tokenize`` (beside
``/v1``); :meth:`OpenAICompatLLM.token_counter` uses it when the server answers there,
and returns None otherwise (the caller then estimates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from twokeys.llm.http import JSONService, ServiceError, ServiceResponseError, json_field
from twokeys.llm.remote import RemoteLLM
from twokeys.text.tokens import TokenCounter

MAX_STOP = 4


class OpenAICompatLLM(RemoteLLM):
    """A model behind an OpenAI-compatible API."""

    provider = "openai"
    service_name = "openai-compatible server"
    sse = True
    chat_path = "chat/completions"
    prompt_path = "completions"
    alive_path = "models"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        **shared: Any,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(model, base_url=base_url, headers=headers, **shared)
        self._tokenizer: JSONService | None = None
        self._probed = False

    def close(self) -> None:
        super().close()
        if self._tokenizer is not None:
            self._tokenizer.close()

    def _parameters(
        self, stop: Sequence[str], max_tokens: int, temperature: float
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {"max_tokens": max_tokens, "temperature": temperature}
        if stop:
            fields["stop"] = list(stop)[:MAX_STOP]
        return fields

    def _text(self, path: str, data: Any, streamed: bool) -> str | None:
        if isinstance(data, dict) and not data.get("choices"):
            if "error" in data:
                raise self.error(path, data["error"])
            if streamed:
                return None  # e.g. a streamed answer's final usage-only event
        choice = self.field(path, data, "choices", 0)
        whole = isinstance(choice, dict) and choice.get("message") is not None
        keys: tuple[str, ...]
        if path == self.prompt_path:
            keys = ("text",)
        elif whole or not streamed:  # a whole answer, also one sent to a streamed request
            keys = ("message", "content")
        else:
            keys = ("delta", "content")
        value: Any = choice
        for key in keys:
            if streamed and isinstance(value, dict) and key not in value:
                return None  # an event without text (the role, a finish reason)
            value = self.field(path, value, key)
        if value is None and streamed:
            return None
        if not isinstance(value, str):
            raise self.error(path, f"answer text is not a string: {value!r}")
        return value

    def _server_root(self) -> JSONService:
        """The server's own routes (``/props``, ``/tokenize``: llama.cpp's), beside ``/v1``."""
        return self.one_off(self.service.base_url.removesuffix("/v1"))

    def _template(self) -> str | None:
        props = self._server_root()
        try:
            data = props.get("props")
        finally:
            props.close()
        template = data.get("chat_template") if isinstance(data, dict) else None
        return template if isinstance(template, str) else None

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


def _tokenize(service: JSONService, text: str) -> list[int]:
    data = service.post("tokenize", {"content": text, "add_special": False})
    tokens = json_field(service, service.url("tokenize"), data, "tokens")
    if not isinstance(tokens, list):
        raise ServiceResponseError(f"{service.name}: /tokenize answered {data!r}")
    return tokens
