"""The ask events (:func:`twokeys.rag.ask.ask_events`) as named JSON payloads, and as
server-sent events: the one wire form the HTTP API, the page and the MCP server share."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.concurrency import run_in_threadpool

from twokeys.rag.ask import Done, Event, ModelFailed, Packed, Retrieved, TextDelta
from twokeys.rag.prompt import render_prompt


def event_payload(event: Event, *, with_context: bool = False) -> tuple[str, dict[str, Any]]:
    """``(name, data)`` for one ask event.

    ``retrieved``: each sub-query's hits and the retrieval confidence; ``packed``: the
    numbered blocks of the context with their chunk ids, and with ``with_context`` the
    exact context and prompt the model sees; ``model_failed``; ``delta``: a piece of the
    answer's text; ``done``: the answer (``Answer.to_dict``).
    """
    if isinstance(event, Retrieved):
        return "retrieved", {
            "sub_queries": [
                {"query": run.query, "hits": [h.to_dict() for h in run.hits]} for run in event.runs
            ],
            "confidence": [c.to_dict() for c in event.confidence],
        }
    if isinstance(event, Packed):
        plan = event.plan
        data: dict[str, Any] = {
            "blocks": [
                {
                    "number": b.number,
                    "path": b.path,
                    "cite": b.cite or b.path,
                    "title": b.title,
                    "heading": b.heading,
                    "chunk_ids": list(b.chunk_ids),
                    "tokens": b.tokens,
                    "text": b.text,
                }
                for b in plan.context.blocks
            ],
        }
        if with_context:
            data["context"] = plan.context.text
            data["prompt"] = render_prompt(plan.prompt)
        return "packed", data
    if isinstance(event, ModelFailed):
        return "model_failed", {"error": event.error}
    if isinstance(event, TextDelta):
        return "delta", {"text": event.text}
    if isinstance(event, Done):
        return "done", event.answer.to_dict(with_prompt=with_context)
    raise TypeError(f"unknown ask event {event!r}")  # pragma: no cover


def sse(name: str, data: Any) -> str:
    """One server-sent event."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


_END = object()


async def closing(chunks: Iterator[str]) -> AsyncIterator[str]:
    """``chunks`` (a generator doing blocking work) for a streaming response, each step on
    a worker thread; when the client leaves, the generator is closed at once, so its
    ``finally`` (releasing the index lease, the model) runs then, not at some later
    garbage collection. A step already running finishes first (anyio waits for it)."""
    try:
        while True:
            chunk = await run_in_threadpool(next, chunks, _END)
            if chunk is _END:
                return
            yield chunk  # type: ignore[misc]
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
