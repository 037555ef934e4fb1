"""Text generators behind one small interface: Ollama, OpenAI-compatible servers, and
llama.cpp in this process. ``from_spec("ollama:qwen2.5:7b")`` makes one."""

from __future__ import annotations

from twokeys.llm.base import LLM, Message, Prompt
from twokeys.llm.http import (
    ServiceError,
    ServiceResponseError,
    ServiceTimeoutError,
    ServiceUnavailableError,
)
from twokeys.llm.spec import from_spec, parse_spec

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
