"""One turn of a chat, as the OpenAI-compatible chat route answers it.

A chat client sends the whole conversation each turn. :func:`plan_turn` reads it
(:func:`~twokeys.server.messages.conversation_of`), makes the newest user message a
standalone search query (:func:`~twokeys.rag.followup.standalone_query`) and, for a
chat model, fits the system text and earlier turns into the server's chat context
(:attr:`ServerConfig.chat_context`): the conversation gets what the default answer
budget (:class:`~twokeys.rag.packing.Budget`) leaves, and the answer's budget
(context, question, answer) is what the fitted conversation leaves, so the whole
prompt stays within the chat context however long the chat grows. Only the newest
user message is capped (:class:`Limits`): the system prompt and the history are
fitted, never refused.

:class:`Shaper` applies the client's ``stop`` sequences and ``max_tokens`` to the reply
as it streams: the text is cut before the first stop sequence, or at the token limit
(``finish_reason`` ``"length"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from twokeys.engine import Index
from twokeys.errors import ConfigError
from twokeys.llm.base import LLM
from twokeys.rag.ask import Answer, AskOptions, model_failed_note
from twokeys.rag.conversation import Conversation
from twokeys.rag.extractive import EXTRACTIVE_NOTE
from twokeys.rag.followup import Followup, standalone_query
from twokeys.rag.packing import MIN_TOTAL, Budget
from twokeys.server.config import Limits, RequestError
from twokeys.server.messages import conversation_of, fit, used_tokens
from twokeys.text.tokens import TokenCounter, approx_token_counter


@dataclass(frozen=True)
class TurnPlan:
    """What to ask for one chat turn."""

    conversation: Conversation  # fitted (for a model), else as sent
    followup: Followup
    options: AskOptions
    llm: LLM | None  # None when the model already failed on the rewrite
    history_tokens: int  # the fitted conversation's tokens in the prompt

    @property
    def question(self) -> str:
        return self.conversation.question


def read_conversation(pairs: Sequence[tuple[str, str]], limits: Limits) -> Conversation:
    """The conversation, its newest user message checked against the cap."""
    conversation = conversation_of(pairs)
    newest = max(i for i, (role, text) in enumerate(pairs) if role == "user" and text.strip())
    limits.check_text(f"messages[{newest}].content", conversation.question)
    return conversation


def plan_turn(
    index: Index,
    conversation: Conversation,
    llm: LLM | None,
    *,
    chat_context: int,
    defaults: AskOptions | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> TurnPlan:
    """Rewrite the follow-up and fit the conversation (module docstring); ``defaults``:
    the server's answer options, the budget and temperature set per turn. A model
    server that is down, unroutable or hung is found first
    (:meth:`~twokeys.llm.base.LLM.unreachable`: about a second at most, remembered for a
    few) and the turn is answered from the sources at once, naming it."""
    down = llm.unreachable() if llm is not None else None
    if down is not None:  # answered from the sources at once, saying why
        llm = None
    followup = standalone_query(index, conversation, llm=llm)
    if down is not None:
        followup = replace(followup, model_error=down)
    if followup.model_error is not None:
        llm = None  # not reached now: do not wait for it a second time in this turn
    base = Budget()
    history = 0
    if llm is not None and llm.detect_chat():  # a base model's prompt takes no history
        counter: TokenCounter = llm.token_counter() or approx_token_counter
        conversation = fit(conversation, max(0, chat_context - base.total), counter)
        history = used_tokens(conversation, counter)
        base = Budget.for_total(max(MIN_TOTAL, chat_context - history))
    if max_tokens is not None:
        try:
            base = replace(base, answer=max_tokens) if llm is not None else base
        except ConfigError:
            raise RequestError(
                400,
                f"max_tokens: {max_tokens} leaves too little of the {base.total}-token "
                "context for the sources; ask for fewer",
            ) from None
    options = replace(defaults or AskOptions(), budget=base, temperature=temperature or 0.0)
    return TurnPlan(conversation, followup, options, llm, history)


def fix_note(text: str, plan: TurnPlan) -> str:
    """An extractive answer given because the rewrite found the model failing says so."""
    if plan.followup.model_error is not None:
        return text.replace(EXTRACTIVE_NOTE, model_failed_note(plan.followup.model_error), 1)
    return text


def searched_text(plan: TurnPlan) -> str:
    """The line that says which query was searched, when it is not the message itself."""
    if plan.followup.how == "as asked":
        return ""
    return f"\n\nSearched for: {plan.followup.query}"


def answer_model_error(answer: Answer, plan: TurnPlan) -> str | None:
    return answer.model_error or plan.followup.model_error


class Shaper:
    """Cuts a streamed reply at the client's stop sequences or token limit."""

    def __init__(self, stops: Sequence[str], limit: int | None) -> None:
        self.stops = tuple(stops)
        self.limit = limit
        self.hold = max((len(s) for s in self.stops), default=1) - 1
        self.pending = ""
        self.sent = ""
        self.finish: str | None = None  # "stop" or "length" once cut

    def feed(self, text: str) -> str:
        """The part of ``text`` to send now ("" once the reply is cut)."""
        if self.finish is not None:
            return ""
        self.pending += text
        for stop in self.stops:
            at = self.pending.find(stop)
            if at >= 0:
                self.pending = self.pending[:at]
                self.finish = "stop"
                return self._send(self.pending)
        keep = self.hold if self.stops else 0
        ready, self.pending = (
            (self.pending[: len(self.pending) - keep], self.pending[len(self.pending) - keep :])
            if keep
            else (self.pending, "")
        )
        return self._send(ready)

    def close(self) -> str:
        if self.finish is not None:
            return ""
        rest, self.pending = self.pending, ""
        return self._send(rest)

    def _send(self, text: str) -> str:
        if self.limit is not None:
            text = self._within_limit(text)
        self.sent += text
        if self.finish == "stop":
            self.pending = ""
        return text

    def _within_limit(self, text: str) -> str:
        assert self.limit is not None
        if approx_token_counter([self.sent + text])[0] <= self.limit:
            return text
        words = text.split(" ")
        out = ""
        for i, word in enumerate(words):
            longer = f"{out} {word}" if i else word
            if approx_token_counter([self.sent + longer])[0] > self.limit:
                break
            out = longer
        self.finish = "length"
        self.pending = ""
        return out
