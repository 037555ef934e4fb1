"""OpenAI-compatible routes, so a chat UI (Open WebUI) or any OpenAI client can use the
index as a model named ``twokeys``.

``POST /v1/chat/completions`` answers the conversation's newest user message with
:func:`twokeys.rag.ask.ask_events`: retrieval, then the server's ``--llm`` (or, without
one, the extractive answer), with the sources listed at the end of the reply. The
conversation is read and fitted by :mod:`twokeys.server.chat` (only the newest user
message is capped; a follow-up is searched as a standalone query, and the reply says
which); a chat client's background task (title, tags, follow-up suggestions,
autocompletion: :mod:`twokeys.server.tasks`) is answered with the JSON it asks for.
``max_tokens``, ``stop`` and ``temperature`` are honoured; ``n`` above 1 and a forced
tool call (``tool_choice`` "required" or a named function) are refused with a 400 naming
the field; tools offered with ``tool_choice`` "auto" (Open WebUI offers its built-in
ones every turn) are left uncalled, as "auto" allows. ``GET /v1/models`` lists the one model;
``POST /v1/embeddings`` embeds text with the index's encoder.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

import twokeys.server.citations as citations
from twokeys.engine import Index
from twokeys.errors import ConfigError, TwokeysError
from twokeys.llm.base import LLM
from twokeys.rag.ask import Answer, Done, Event, TextDelta, ask_events
from twokeys.rag.conversation import Conversation
from twokeys.server.chat import (
    Shaper,
    TurnPlan,
    answer_model_error,
    fix_note,
    plan_turn,
    read_conversation,
    searched_text,
)
from twokeys.server.config import RequestError, ServerConfig
from twokeys.server.events import closing
from twokeys.server.messages import conversation_of
from twokeys.server.service import IndexService
from twokeys.server.tasks import answer as answer_task
from twokeys.server.tasks import detect
from twokeys.server.token_ids import decode_inputs
from twokeys.text.tokens import approx_token_counter


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
    """The fields of OpenAI's chat completion request that twokeys reads; ``n`` above 1
    and a forced tool call are refused (one answer, no tool calls; offered tools are
    left uncalled, as ``tool_choice`` "auto" allows); other fields are accepted and
    ignored."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    stop: str | list[str] | None = None
    n: int | None = Field(default=None, ge=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None

    def stops(self) -> tuple[str, ...]:
        given = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        if len(given) > 4:
            raise RequestError(400, f"stop: {len(given)} sequences; the limit is 4")
        return tuple(s for s in given if s)

    def token_limit(self) -> int | None:
        return self.max_completion_tokens or self.max_tokens


class EmbeddingsBody(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    input: str | list[str] | list[int] | list[list[int]]
    encoding_format: Literal["float", "base64"] = "float"


def sources_text(answer: Answer) -> str:
    """The sources, as the lines appended to the reply, each named by its path."""
    return citations.sources_text(answer, {})


def openai_router(
    service: IndexService,
    llm: LLM | None,
    config: ServerConfig,
    scrub: Callable[[str], str],
    collections: Mapping[str, IndexService] | None = None,
) -> APIRouter:
    """The ``/v1`` routes; each of ``collections`` (the server's further indexes) is one
    more model, named by its collection."""
    router = APIRouter(prefix="/v1", tags=["openai"])
    model_name: str = config.model_name
    limits = config.limits
    services = {model_name: service, **(collections or {})}
    default_service = service

    def check_model(name: str, *also: str) -> None:
        if name not in (*services, *also):
            served = ", ".join(repr(n) for n in services)
            raise RequestError(404, f"model {name!r} not found; this server serves {served}")

    def model_card(name: str) -> dict[str, Any]:
        """A collection as a model; ``generation`` is the index generation it answers
        from (it advances at each commit, e.g. under ``--watch``)."""
        card = {"id": name, "object": "model", "created": 0, "owned_by": "twokeys"}
        return {**card, "generation": services[name].generation}

    @router.get("/models")
    def models() -> dict[str, Any]:
        """The models: one per collection (index), answered through retrieval (and the
        server's --llm)."""
        return {"object": "list", "data": [model_card(name) for name in services]}

    @router.get("/models/{model_id:path}")
    def model(model_id: str) -> dict[str, Any]:
        """One model by its id (OpenAI's ``models.retrieve``)."""
        check_model(model_id)
        return model_card(model_id)

    @router.post("/chat/completions")
    def chat_completions(body: ChatCompletionBody, request: Request) -> Any:
        """OpenAI's chat completion: the answer, its sources cited at the end. The model
        names the collection asked."""
        check_model(body.model)
        service = services[body.model]
        if body.n is not None and body.n > 1:
            raise RequestError(400, f"n: {body.n}; this server gives one choice (n=1)")
        if body.tools and body.tool_choice not in (None, "auto", "none"):
            # offered tools may go uncalled ("auto", what Open WebUI sends with its
            # built-in tools on every turn); a forced call cannot be honoured
            raise RequestError(
                400,
                "tool_choice: this server calls no tools, so it cannot be made to call one; "
                'send tool_choice "auto" or "none", or no tools',
            )
        stops = body.stops()
        pairs = [(m.role, m.text()) for m in body.messages]
        conversation = conversation_of(pairs)
        task = detect(conversation.question)
        if task is None:  # a task embeds the whole chat in its one message: not capped
            conversation = read_conversation(pairs, limits)
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        reply = _Reply(completion_id, created, body.model)
        # where the collection's own routes are (its passages, for the citations' links)
        home = str(request.base_url)
        if body.model != model_name:
            home = f"{home.rstrip('/')}/collections/{body.model}"
        if task is not None:  # a chat client's title, tags, follow-ups ...: JSON, no search
            with service.reader() as index:
                data, made_by = answer_task(task, index, llm)
            text = json.dumps(data, ensure_ascii=False)
            usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            extra = {"task": task.task, "made_by": made_by}
            if body.stream:
                return _event_stream(reply.whole_stream(text, usage, body))
            return JSONResponse(reply.whole(text, "stop", usage, {"twokeys": extra}))
        shaper = Shaper(stops, body.token_limit())
        if body.stream:
            return _event_stream(
                _stream(
                    service,
                    conversation,
                    llm,
                    body,
                    reply,
                    shaper,
                    scrub,
                    config,
                    home,
                )
            )
        with service.reader() as index:
            plan = _plan(index, conversation, llm, body, config)
            answer = _answer(index, plan)
            labels = citations.cites(index, answer)
        whole = (
            fix_note(citations.marked_text(answer), plan)
            + searched_text(plan)
            + citations.sources_text(answer, labels)
        )
        text = shaper.feed(whole) + shaper.close()
        notes = citations.url_citations(answer, labels, home, text)
        data = answer.to_dict()
        data["model_error"] = answer_model_error(answer, plan)
        data["search"] = plan.followup.to_dict()
        data["conversation"] = _conversation_data(plan)
        completion = reply.whole(
            text, shaper.finish or "stop", _usage(answer, text, plan), {"twokeys": data}
        )
        completion["choices"][0]["message"]["annotations"] = notes
        return JSONResponse(completion)

    @router.post("/embeddings")
    def embeddings(body: EmbeddingsBody) -> dict[str, Any]:
        """Vectors from the index's encoder (the one its chunks were embedded with). Token-id
        input is read as tiktoken's ``cl100k_base`` ids (:mod:`twokeys.server.token_ids`)."""
        if isinstance(body.input, list) and any(not isinstance(x, str) for x in body.input):
            # token ids (LangChain's default): the client's cl100k_base, read back as text
            texts = decode_inputs(body.input)  # type: ignore[arg-type]
        else:
            texts = [body.input] if isinstance(body.input, str) else [str(x) for x in body.input]
        if not texts:
            raise ConfigError("input: is empty")
        if len(texts) > limits.max_embedding_inputs:
            raise ConfigError(
                f"input: {len(texts)} texts; the limit is {limits.max_embedding_inputs}"
            )
        for text in texts:
            limits.check_text("input", text)
        with services.get(body.model, default_service).reader() as index:
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


def _event_stream(events: Iterator[str]) -> StreamingResponse:
    return StreamingResponse(
        closing(events),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


class _Reply:
    """The envelope of one completion: whole, or as stream chunks."""

    def __init__(self, completion_id: str, created: int, model: str) -> None:
        self.id = completion_id
        self.created = created
        self.model = model

    def whole(
        self, text: str, finish: str, usage: dict[str, int], extra: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": usage,
            **extra,
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> str:
        data = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"

    def usage_chunk(self, usage: dict[str, int]) -> str:
        data = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": usage,
        }
        return f"data: {json.dumps(data)}\n\n"

    def whole_stream(
        self, text: str, usage: dict[str, int], body: ChatCompletionBody
    ) -> Iterator[str]:
        yield self.chunk({"role": "assistant", "content": ""})
        yield self.chunk({"content": text})
        yield self.chunk({}, "stop")
        if (body.stream_options or {}).get("include_usage"):
            yield self.usage_chunk(usage)
        yield "data: [DONE]\n\n"


def _turn_events(index: Index, plan: TurnPlan) -> Iterator[Event]:
    """The events of answering a planned chat turn (its follow-up searched as planned)."""
    return ask_events(
        index,
        plan.question,
        llm=plan.llm,
        options=plan.options,
        search=plan.followup.query,
        conversation=plan.conversation,
    )


def _answer(index: Index, plan: TurnPlan) -> Answer:
    for event in _turn_events(index, plan):
        if isinstance(event, Done):
            return event.answer
    raise AssertionError("ask_events ended without an answer")  # pragma: no cover


def _conversation_data(plan: TurnPlan) -> dict[str, Any]:
    c = plan.conversation
    return {
        "turns_kept": len(c.turns),
        "turns_dropped": c.dropped,
        "system_cut": c.system_cut,
        "tokens": plan.history_tokens,
    }


def _usage(answer: Answer, text: str, plan: TurnPlan | None = None) -> dict[str, int]:
    context = answer.plan.context
    prompt = context.total - context.section("answer").budget if context.sections else 0
    if plan is not None and plan.llm is not None:
        prompt += plan.history_tokens
    completion = approx_token_counter([text])[0] if text else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _plan(
    index: Index,
    conversation: Conversation,
    llm: LLM | None,
    body: ChatCompletionBody,
    config: ServerConfig,
) -> TurnPlan:
    """One chat turn's plan (the searched query, the fitted conversation, the options),
    from the request's sampling fields and the server's chat context."""
    return plan_turn(
        index,
        conversation,
        llm,
        chat_context=config.chat_context,
        defaults=config.answers,
        temperature=body.temperature,
        max_tokens=body.token_limit(),
    )


def _stream(
    service: IndexService,
    conversation: Conversation,
    llm: LLM | None,
    body: ChatCompletionBody,
    reply: _Reply,
    shaper: Shaper,
    scrub: Callable[[str], str],
    config: ServerConfig,
    base_url: str,
) -> Iterator[str]:
    usage: dict[str, int] | None = None
    yield reply.chunk({"role": "assistant", "content": ""})
    with service.reader() as index:
        try:
            plan = _plan(index, conversation, llm, body, config)
            for event in _turn_events(index, plan):
                if isinstance(event, TextDelta):
                    piece = shaper.feed(fix_note(event.text, plan))
                    if piece:
                        yield reply.chunk({"content": piece})
                elif isinstance(event, Done):
                    answer = event.answer
                    labels = citations.cites(index, answer)
                    tail = shaper.feed(
                        citations.unsupported_text(answer)
                        + searched_text(plan)
                        + citations.sources_text(answer, labels)
                    )
                    tail += shaper.close()
                    if tail:
                        yield reply.chunk({"content": tail})
                    notes = citations.url_citations(answer, labels, base_url, shaper.sent)
                    if notes:  # one url_citation per source (Open WebUI: source cards)
                        yield reply.chunk({"annotations": notes})
                    usage = _usage(answer, shaper.sent, plan)
        except RequestError as exc:
            yield reply.chunk({"content": f"\n\n[twokeys error: {scrub(exc.message)}]"})
        except Exception as exc:  # the stream has begun: say so in the reply
            message = scrub(str(exc)) if isinstance(exc, TwokeysError) else type(exc).__name__
            yield reply.chunk({"content": f"\n\n[twokeys error: {message}]"})
    yield reply.chunk({}, shaper.finish or "stop")
    if (body.stream_options or {}).get("include_usage") and usage is not None:
        yield reply.usage_chunk(usage)
    yield "data: [DONE]\n\n"
