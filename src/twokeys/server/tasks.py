"""Chat clients' background tasks: title, tags, follow-up suggestions, search queries and
autocompletion requests sent through the chat endpoint.

Open WebUI (and clients built like it) asks the chat model for these with one user
message that embeds the chat in ``<chat_history>`` and names the JSON it wants back
(``JSON format: { "title": ... }``). Answering them with retrieval would search the
whole history as a question and reply with passages where the client parses JSON.
:func:`detect` recognises them by that shape (the task's JSON key after an output
instruction, and the embedded history or autocompletion text) and :func:`answer`
replies with the JSON the client expects, never failing:

* with a model, the client's own prompt goes to it (short, at temperature 0); an answer
  that parses as the expected JSON is returned;
* otherwise, or when the model fails or answers something else, a rule answers:
  ``title``: the chat's first user message, shortened to its first words;
  ``tags``: ``["General"]`` (what the client's own template says for a short chat);
  ``follow_ups``: questions on the headings of the passages retrieved for the last
  user message that it did not already ask (one search, never over the whole history);
  ``queries``: the last user message; ``text`` (autocompletion): nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from twokeys.engine import Index
from twokeys.llm.base import LLM, Message
from twokeys.llm.http import ServiceError

Task = Literal["title", "tags", "follow_ups", "queries", "text", "prompt"]
TASKS: tuple[str, ...] = ("title", "tags", "follow_ups", "queries", "text", "prompt")

_JSON_KEY = re.compile(r'(?:JSON format|JSON)\W{0,12}\{\s*"(\w+)"\s*:', re.I)
_HISTORY = re.compile(r"<chat_history>\s*(.*?)\s*</chat_history>", re.S)
_SPEAKER = re.compile(r"^(USER|ASSISTANT|SYSTEM)\s*:\s?", re.M)
_AUTOCOMPLETE_TEXT = re.compile(r"<text>(.*?)</text>", re.S)
TITLE_WORDS = 6
FOLLOW_UPS = 3
TASK_MAX_TOKENS = 128


@dataclass(frozen=True, slots=True)
class BackgroundTask:
    """A recognised task: the JSON key it wants and the chat it embeds."""

    task: Task
    prompt: str  # the client's whole message
    history: tuple[tuple[str, str], ...]  # (role, text) of the embedded chat, oldest first


def detect(message: str) -> BackgroundTask | None:
    """The background task a user message asks for, or None for a real question."""
    if "### Task:" not in message and "<chat_history>" not in message:
        return None
    found = _JSON_KEY.search(message)
    if found is None or found.group(1) not in TASKS:
        return None
    history = _HISTORY.search(message)
    if history is None and found.group(1) != "text":
        return None
    return BackgroundTask(
        found.group(1),  # type: ignore[arg-type]
        message,
        _turns(history.group(1)) if history else (),
    )


def _turns(text: str) -> tuple[tuple[str, str], ...]:
    marks = list(_SPEAKER.finditer(text))
    if not marks:
        return (("user", text.strip()),) if text.strip() else ()
    out = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() : end].strip()
        if body:
            out.append((mark.group(1).lower(), body))
    return tuple(out)


def answer(task: BackgroundTask, index: Index, llm: LLM | None) -> tuple[dict[str, Any], str]:
    """The JSON the client expects, and who made it (the model's name or ``"rule"``)."""
    if llm is not None:
        made = _from_model(task, llm)
        if made is not None:
            return made, llm.name
    return _by_rule(task, index), "rule"


def _from_model(task: BackgroundTask, llm: LLM) -> dict[str, Any] | None:
    try:
        if llm.detect_chat():  # a server is asked once, before the model's first prompt
            text = llm.complete([Message("user", task.prompt)], max_tokens=TASK_MAX_TOKENS)
        else:
            text = llm.complete(task.prompt, max_tokens=TASK_MAX_TOKENS, stop=("\n\n",))
    except ServiceError:
        return None
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or not _valid(task.task, data.get(task.task)):
        return None
    return {task.task: data[task.task]}


def _valid(task: str, value: Any) -> bool:
    if task in ("title", "text", "prompt"):
        return isinstance(value, str)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _by_rule(task: BackgroundTask, index: Index) -> dict[str, Any]:
    users = [text for role, text in task.history if role == "user"]
    if task.task == "title":
        first = users[0] if users else ""
        words = first.split()
        title = " ".join(words[:TITLE_WORDS]).rstrip("?.!,;:")
        return {"title": title or "New chat"}
    if task.task == "tags":
        return {"tags": ["General"]}
    if task.task == "queries":
        return {"queries": [users[-1]] if users else []}
    if task.task == "follow_ups":
        return {"follow_ups": _follow_ups(index, users)}
    return {task.task: ""}


def _follow_ups(index: Index, users: list[str]) -> list[str]:
    if not users:
        return []
    asked = " ".join(users).lower()
    out: list[str] = []
    for hit in index.search(users[-1][:500], k=10):
        heading = hit.chunk.heading.strip()
        topic = heading.rsplit(">", 1)[-1].strip().lstrip("#").strip()
        if not topic or topic.lower() in asked:
            continue
        question = f"What does the documentation say about {topic}?"
        if question not in out:
            out.append(question)
        if len(out) == FOLLOW_UPS:
            break
    return out
