"""A chat conversation as a value: the system text, the earlier turns and the newest user
message, the question. :meth:`Conversation.messages` alternates user and assistant, as
chat templates require. (The server reads a chat client's messages into one and fits it
into its token budget: :mod:`twokeys.server.messages`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from twokeys.llm.base import Message

Speaker = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier message of the conversation."""

    role: Speaker
    text: str


@dataclass(frozen=True)
class Conversation:
    """The system text, the earlier turns (oldest first) and the newest user message."""

    question: str
    turns: tuple[Turn, ...] = ()
    system: str = ""
    dropped: int = 0  # earlier turns left out to fit a budget
    system_cut: bool = False  # the system text was shortened to fit a budget

    @property
    def earlier_questions(self) -> tuple[str, ...]:
        """The earlier user messages, oldest first."""
        return tuple(t.text for t in self.turns if t.role == "user")

    def messages(self) -> tuple[Message, ...]:
        """The earlier turns as chat messages a template accepts (module docstring)."""
        merged: list[Turn] = []
        for turn in self.turns:
            if merged and merged[-1].role == turn.role:
                merged[-1] = Turn(turn.role, f"{merged[-1].text}\n\n{turn.text}")
            else:
                merged.append(turn)
        while merged and merged[0].role != "user":
            merged.pop(0)
        if merged and merged[-1].role != "assistant":
            merged.pop()
        return tuple(Message(t.role, t.text) for t in merged)
