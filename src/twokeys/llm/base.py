"""The ``LLM`` interface every model backend implements.

A backend implements one method, :meth:`LLM.stream`; :meth:`LLM.complete` joins it (HTTP
backends override it with a non-streaming request). A prompt is either a list of chat
:class:`Message` values (for chat models) or one string (a completion prompt, for base
models, which need ``stop`` strings to end). ``LLM.chat`` says which one a model wants.
The backends import this module and it imports none of them: models are made by name in
:mod:`twokeys.llm.spec`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from twokeys.errors import ConfigError
from twokeys.text.tokens import TokenCounter

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")


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

    def unreachable(self) -> str | None:
        """Why the model's server cannot be reached or does not answer (naming the model
        and its URL), found within about a second; None when it answers, and for models
        in this process."""
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
