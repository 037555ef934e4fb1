"""Text generators behind one small interface: Ollama, OpenAI-compatible servers, and
llama.cpp in this process. ``from_spec("ollama:qwen2.5:7b")`` makes one."""

from __future__ import annotations

from twokeys.llm.base import LLM, Message, Prompt, from_spec, parse_spec
from twokeys.llm.http import (
    ServiceError,
    ServiceResponseError,
    ServiceTimeoutError,
    ServiceUnavailableError,
)

__all__ = [
    "LLM",
    "Message",
    "Prompt",
    "ServiceError",
    "ServiceResponseError",
    "ServiceTimeoutError",
    "ServiceUnavailableError",
    "from_spec",
    "parse_spec",
]
