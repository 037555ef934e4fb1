"""OpenAI-compatible routes, so a chat UI (Open WebUI) or any OpenAI client can use the
index as a model named ``twokeys``.

``POST /v1/chat/completions`` answers the conversation's last user message with
:func:`twokeys.rag.ask.ask_events`: retrieval, then the server's ``--llm`` (or, without
one, the extractive answer), with the sources listed at the end of the reply. A
follow-up ("and how do I fix it?") -- one that points back with "it", "that", "they",
or that retrieval cannot place on its own, by the confidence rule that makes ``ask``
abstain -- is asked together with the user message before it. ``GET /v1/models`` lists
the one model; ``POST /v1/embeddings`` embeds text with the index's encoder.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from twokeys.engine import Index
from twokeys.errors import ConfigError, TwokeysError
from twokeys.llm.base import LLM
from twokeys.rag.ask import Answer, AskOptions, Done, TextDelta, ask_events
from twokeys.rag.grounding import retrieval_confidence
from twokeys.server.config import RequestError, ServerConfig
from twokeys.server.events import closing
from twokeys.server.service import IndexService


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str  # system, user, assistant, tool, developer, ...: only user turns are read
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(p.text or "" for p in self.content if p.type == "text")
        return self.content or ""


class ChatCompletionBody(BaseModel):
    """The fields of OpenAI's chat completion request that twokeys reads (others are
    accepted and ignored: sampling is the server's)."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None


class EmbeddingsBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    input: str | list[str]
    encoding_format: Literal["float", "base64"] = "float"


#: words by which a follow-up points back at what was asked before
_BACK_REFERENCE = re.compile(
    r"\b(?:it|its|it's|that|this|these|those|they|them|their|there|the same|above)\b", re.I
)


def conversation_question(index: Index, messages: list[ChatMessage]) -> str:
    """The question to answer: the last user message; a follow-up -- one that points back
    ("how do I fix it?") or that retrieval cannot place on its own -- is joined to the
    user message before it."""
    users = [m.text().strip() for m in messages if m.role == "user" and m.text().strip()]
    if not users:
        raise ConfigError("messages: no user message with text")
    last = users[-1]
    if len(users) > 1 and (
        _BACK_REFERENCE.search(last) or not retrieval_confidence(index, last).answerable
    ):
        return f"{users[-2]} {last}"
    return last


def sources_text(answer: Answer) -> str:
    """The sources, as the lines appended to the reply (as ``twokeys ask`` prints them)."""
    if not answer.sources:
        return ""
    lines = ["", "", "Closest sources:" if answer.abstains else "Sources:"]
    for s in answer.sources:
        heading = "; ".join(s.quoted_headings) or s.heading
        where = f" — {heading}" if heading else ""
        quiet = s.cited or answer.abstains
        lines.append(f"[{s.number}] {s.cite or s.path}{where}{'' if quiet else ' (not cited)'}")
    return "\n".join(lines)


def openai_router(
    service: IndexService,
    llm: LLM | None,
    config: ServerConfig,
    scrub: Callable[[str], str],
) -> APIRouter:
    router = APIRouter(prefix="/v1", tags=["openai"])
    model_name: str = config.model_name
    limits = config.limits

    def check_model(name: str, *also: str) -> None:
        if name not in (model_name, *also):
            raise RequestError(404, f"model {name!r} not found; this server serves {model_name!r}")

    @router.get("/models")
    def models() -> dict[str, Any]:
        """The one model: the index, answered through retrieval (and the server's --llm);
        ``generation`` is the index generation it answers from (it advances at each commit)."""
        model = {"id": model_name, "object": "model", "created": 0, "owned_by": "twokeys"}
        return {"object": "list", "data": [{**model, "generation": service.generation}]}

    @router.post("/chat/completions")
    def chat_completions(body: ChatCompletionBody) -> Any:
        """OpenAI's chat completion: the answer, its sources cited at the end."""
        check_model(body.model)
        for m in body.messages:
            limits.check_text("messages.content", m.text())
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if body.stream:
            return StreamingResponse(
                closing(
                    _stream(
                        service,
                        body.messages,
                        llm,
                        completion_id,
                        created,
                        model_name,
                        scrub,
                        include_usage=bool((body.stream_options or {}).get("include_usage")),
                    )
                ),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache"},
            )
        with service.reader() as index:
            question = conversation_question(index, body.messages)
            answer = _answer(index, question, llm)
        text = answer.text + sources_text(answer)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model_name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(answer, text),
                "twokeys": answer.to_dict(),
            }
        )

    @router.post("/embeddings")
    def embeddings(body: EmbeddingsBody) -> dict[str, Any]:
        """Vectors from the index's encoder (the one its chunks were embedded with)."""
        texts = [body.input] if isinstance(body.input, str) else list(body.input)
        if not texts:
            raise ConfigError("input: is empty")
        if len(texts) > limits.max_embedding_inputs:
            raise ConfigError(
                f"input: {len(texts)} texts; the limit is {limits.max_embedding_inputs}"
            )
        for text in texts:
            limits.check_text("input", text)
        with service.reader() as index:
            info = index.manifest.encoder
            if info is None:
                raise ConfigError("this index has no dense encoder (built with --no-dense)")
            check_model(body.model, info.name, info.id)
            encoder = index.encoder
        vectors = encoder.encode(texts, "document")
        tokens = sum(encoder.count_tokens(texts))
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": _vector(v, body.encoding_format)}
                for i, v in enumerate(vectors)
            ],
            "model": body.model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    return router


def _vector(vector: Any, encoding: str) -> list[float] | str:
    """A vector as JSON numbers, or as base64 of little-endian float32 (what OpenAI's
    client asks for by default)."""
    if encoding == "base64":
        return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


def _answer(index: Index, question: str, llm: LLM | None) -> Answer:
    for event in ask_events(index, question, llm=llm, options=AskOptions()):
        if isinstance(event, Done):
            return event.answer
    raise AssertionError("ask_events ended without an answer")  # pragma: no cover


def _usage(answer: Answer, text: str) -> dict[str, int]:
    context = answer.plan.context
    prompt = context.total - context.section("answer").budget if context.sections else 0
    completion = max(1, len(text.split()))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _stream(
    service: IndexService,
    messages: list[ChatMessage],
    llm: LLM | None,
    completion_id: str,
    created: int,
    model: str,
    scrub: Callable[[str], str],
    include_usage: bool = False,
) -> Iterator[str]:
    usage: dict[str, int] | None = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        data = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    with service.reader() as index:
        try:
            question = conversation_question(index, messages)
            for event in ask_events(index, question, llm=llm, options=AskOptions()):
                if isinstance(event, TextDelta):
                    yield chunk({"content": event.text})
                elif isinstance(event, Done):
                    tail = sources_text(event.answer)
                    if tail:
                        yield chunk({"content": tail})
                    usage = _usage(event.answer, event.answer.text + tail)
        except Exception as exc:  # the stream has begun: say so in the reply
            message = scrub(str(exc)) if isinstance(exc, TwokeysError) else type(exc).__name__
            yield chunk({"content": f"\n\n[twokeys error: {message}]"})
    yield chunk({}, "stop")
    if include_usage and usage is not None:  # OpenAI's stream_options.include_usage
        data = {"id": completion_id, "object": "chat.completion.chunk", "created": created}
        final = {**data, "model": model, "choices": [], "usage": usage}
        yield f"data: {json.dumps(final)}\n\n"
    yield "data: [DONE]\n\n"
