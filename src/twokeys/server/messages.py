"""A chat client's messages as a :class:`~twokeys.rag.conversation.Conversation`, and
fitting it into a model's token budget.

:func:`conversation_of` reads a chat client's messages: the system text, the earlier
turns (a reply's own sources tail taken off) and the newest user message, the question.
:func:`fit` keeps the system text (up to half the budget, cut at a sentence end) and
then the newest earlier turns that fit, never leaving a hole; the question has its own
section of the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from twokeys.errors import ConfigError
from twokeys.rag.conversation import Conversation, Turn
from twokeys.text.tokens import TokenCounter

#: the tail a reply of this service ends with (:mod:`twokeys.server.citations`' sources list)
_SOURCES_TAIL = re.compile(
    r"(?:\n\nNot supported by the cited sources:\n(?:- [^\n]*\n?)+?)?"
    r"(?:\n\nSearched for: [^\n]*)?"
    r"\n\n(?:Closest sources|Sources):\n\[\d+\] .*\Z",
    re.S,
)
#: the mark a reply of this service puts after a sentence its sources do not back
UNSUPPORTED_MARK = " [not supported by the cited source]"
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+|\n+")


def strip_sources(text: str) -> str:
    """A reply of this service without what it adds to the answer: its sources list, the
    query it searched, the unsupported sentences listed and marked."""
    return _SOURCES_TAIL.sub("", text).replace(UNSUPPORTED_MARK, "").rstrip()


def conversation_of(messages: Iterable[tuple[str, str]]) -> Conversation:
    """A conversation from ``(role, text)`` pairs as a chat client sends them.

    System (and ``developer``) messages make the system text; user and assistant
    messages are the turns; others (tool results) are left out. The newest user message
    with text is the question; messages after it (none, from a chat client) are dropped.
    """
    pairs = [(role, text.strip()) for role, text in messages]
    last = max((i for i, (role, text) in enumerate(pairs) if role == "user" and text), default=-1)
    if last < 0:
        raise ConfigError("messages: no user message with text")
    system = "\n\n".join(t for r, t in pairs[:last] if r in ("system", "developer") and t)
    turns = tuple(
        Turn(r, strip_sources(t) if r == "assistant" else t)  # type: ignore[arg-type]
        for r, t in pairs[:last]
        if r in ("user", "assistant") and t
    )
    return Conversation(pairs[last][1], turns, system)


def fit(conversation: Conversation, budget: int, count: TokenCounter) -> Conversation:
    """``conversation`` within ``budget`` tokens (module docstring)."""
    if budget < 0:
        raise ConfigError(f"budget: must be >= 0, got {budget}")
    system, cut = conversation.system, False
    if system and _tokens(count, system) > budget // 2:
        system, cut = _head(system, budget // 2, count), True
    left = budget - (_tokens(count, system) if system else 0)
    kept: list[Turn] = []
    for turn in reversed(conversation.turns):
        cost = _tokens(count, turn.text) + 4  # a role marker's few tokens
        if cost > left:
            break
        kept.append(turn)
        left -= cost
    kept.reverse()
    return replace(
        conversation,
        turns=tuple(kept),
        system=system,
        dropped=conversation.dropped + len(conversation.turns) - len(kept),
        system_cut=conversation.system_cut or cut,
    )


def used_tokens(conversation: Conversation, count: TokenCounter) -> int:
    """The tokens a chat model is shown of ``conversation`` besides its question."""
    texts = [m.content for m in conversation.messages()]
    if conversation.system:
        texts.append(conversation.system)
    return sum(_tokens(count, t) + 4 for t in texts)


def _tokens(count: TokenCounter, text: str) -> int:
    return int(count([text])[0])


def _head(text: str, budget: int, count: TokenCounter) -> str:
    """The longest beginning of ``text`` that ends a sentence or line and fits."""
    pieces = _pieces(text)
    out = ""
    for piece in pieces:
        longer = f"{out}{piece}"
        if _tokens(count, longer.rstrip()) > budget:
            break
        out = longer
    return out.rstrip()


def _pieces(text: str) -> Sequence[str]:
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        pieces.append(text[start:])
    return pieces
