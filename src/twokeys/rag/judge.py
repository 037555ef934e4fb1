"""The model as a judge, where one is configured: re-rank the fused hits (listwise),
say whether the passages answer the question (the learned confidence's ``verdict``
feature), and say whether each cited sentence of an answer is stated in its passages.

Each stage is optional and budgeted: short prompts of at most ``n`` passages cut to
``chars`` characters, a few tokens back, and for the sentence check a
:class:`SupportBudget`. A model that fails or answers in another form leaves the order,
the verdict (:data:`NOT_ASKED`) or the sentence as they were: a stage only adds
evidence. The ``rewrite`` stage is :mod:`twokeys.rag.followup`'s rewrite and
:func:`twokeys.rag.decompose.decompose_with_llm`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from twokeys.errors import ConfigError
from twokeys.llm.base import LLM, Message, Prompt
from twokeys.llm.http import ServiceError, ServiceTimeoutError, ServiceUnavailableError
from twokeys.rag.packing import Block
from twokeys.rag.support import SentenceCheck
from twokeys.text.tokens import TokenCounter, approx_token_counter
from twokeys.types import Hit

STAGES = ("rerank", "verdict", "rewrite", "support")
RERANK_N = 10
CHARS = 500
NOT_ASKED = 0.5

_NUMBER = re.compile(r"\d+")


def _passages(texts: Sequence[str], chars: int) -> str:
    return "\n\n".join(f"[{i}] {' '.join(t.split())[:chars]}" for i, t in enumerate(texts, 1))


def _prompt(llm: LLM, messages: Sequence[Message], lead: str = "Answer:") -> Prompt:
    """``messages`` for a chat model; for a base model, which continues text, the same
    words as one document ending in ``lead`` for it to continue."""
    if llm.detect_chat():  # asked of the server once; a local model knows
        return list(messages)
    return "\n\n".join(m.content for m in messages) + f"\n{lead}"


def rerank(
    llm: LLM, query: str, hits: Sequence[Hit], *, n: int = RERANK_N, chars: int = CHARS
) -> list[Hit]:
    """``hits`` with their first ``n`` re-ordered by the model (module docstring)."""
    head = list(hits[:n])
    if len(head) < 2:
        return list(hits)
    prompt = [
        Message("system", "You rank passages for a question. Reply with numbers only."),
        Message(
            "user",
            f"Question: {query}\n\nPassages:\n{_passages([h.text for h in head], chars)}\n\n"
            "List the numbers of the passages that help answer the question, most useful "
            "first, separated by commas.",
        ),
    ]
    try:
        reply = llm.complete(_prompt(llm, prompt, "Numbers:"), max_tokens=4 * n, temperature=0.0)
    except (ServiceUnavailableError, ServiceTimeoutError):
        return list(hits)
    order: list[int] = []
    for m in _NUMBER.finditer(reply):
        i = int(m.group()) - 1
        if 0 <= i < len(head) and i not in order:
            order.append(i)
    if not order:
        return list(hits)
    ranked = [head[i] for i in order] + [h for i, h in enumerate(head) if i not in order]
    return ranked + list(hits[n:])


VERDICT_SYSTEM = "You check whether passages answer a question. Reply yes or no."


def verdict(
    llm: LLM, question: str, texts: Sequence[str], *, n: int = 5, chars: int = CHARS
) -> float:
    """1.0: the model says the passages state the answer; 0.0: it says they do not;
    :data:`NOT_ASKED` when it cannot be reached or answers otherwise."""
    if not texts:
        return 0.0
    prompt = [
        Message("system", VERDICT_SYSTEM),
        Message(
            "user",
            f"Question: {question}\n\nPassages:\n{_passages(texts[:n], chars)}\n\n"
            "Do these passages state the answer to the question? Reply yes or no.",
        ),
    ]
    try:
        said = _yes_no(llm.complete(_prompt(llm, prompt), max_tokens=4, temperature=0.0))
    except (ServiceUnavailableError, ServiceTimeoutError):
        return NOT_ASKED
    return NOT_ASKED if said is None else float(said)


def _yes_no(reply: str) -> bool | None:
    """A yes/no reply read: True, False, or None when it starts with neither."""
    reply = reply.strip().lower()
    return True if reply.startswith("yes") else False if reply.startswith("no") else None


@dataclass(frozen=True, slots=True)
class SupportBudget:
    """What the sentence check may spend: at most ``sentences`` model calls (one per
    sentence, in the answer's order), ``tokens`` prompt tokens in all (counted with the
    model's tokenizer when it has one), and ``seconds`` of wall time, read before each
    call (each call also has the model's own timeout). ``chars``: of each cited passage
    shown."""

    sentences: int = 8
    tokens: int = 6000
    seconds: float = 60.0
    chars: int = 1200

    def __post_init__(self) -> None:
        for name in ("sentences", "tokens", "chars"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"support.{name}: expected an integer >= 1, got {value!r}")
        if not self.seconds > 0:
            raise ConfigError(f"support.seconds: expected a number > 0, got {self.seconds!r}")


SUPPORT_SYSTEM = "You check whether a sentence is supported by passages. Reply yes or no."


def support_verdicts(
    llm: LLM,
    sentences: Sequence[tuple[str, Sequence[str]]],
    budget: SupportBudget | None = None,
    *,
    counter: TokenCounter | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[bool | None]:
    """For each ``(sentence, cited passage texts)``: True when the model says the passages
    state every claim of the sentence, False when it says they do not, None when it was
    not asked (past the budget, or after the model failed) or answered otherwise."""
    budget = budget or SupportBudget()
    count = counter or approx_token_counter
    started = clock()
    spent = 0
    out: list[bool | None] = []
    for asked, (sentence, passages) in enumerate(sentences):
        if asked >= budget.sentences or clock() - started >= budget.seconds:
            break
        messages = [  # the question asked about one sentence and the passages it cites
            Message("system", SUPPORT_SYSTEM),
            Message(
                "user",
                f"Passages:\n{_passages(passages, budget.chars)}\n\nSentence: "
                f"{' '.join(sentence.split())}\n\nIs every claim of the sentence stated in "
                "the passages? Reply yes or no.",
            ),
        ]
        prompt = _prompt(llm, messages)
        cost = sum(count([m.content for m in messages])) + 4
        if spent + cost > budget.tokens:
            break
        spent += cost
        try:
            out.append(_yes_no(llm.complete(prompt, max_tokens=4, temperature=0.0)))
        except ServiceError:
            break  # down, too slow, or an error answer: the rest stay unjudged
    return out + [None] * (len(sentences) - len(out))


def judge_sentences(
    llm: LLM, checks: Sequence[SentenceCheck], blocks: Sequence[Block], budget: SupportBudget
) -> tuple[SentenceCheck, ...]:
    """``checks`` with the model's verdict deciding each sentence it judged, within
    ``budget``: those that cite a block and claim something (not those that decline); an
    unjudged one keeps the term check's status."""
    texts = {b.number: b.text for b in blocks}
    asked = [
        i for i, c in enumerate(checks) if c.citations and c.status in ("supported", "unsupported")
    ]
    said = support_verdicts(
        llm,
        [(checks[i].text, [texts[n] for n in checks[i].citations]) for i in asked],
        budget,
        counter=llm.token_counter(),
    )
    verdicts = dict(zip(asked, said, strict=True))
    return tuple(
        c
        if verdicts.get(i) is None
        else replace(c, status="supported" if verdicts[i] else "unsupported", model=verdicts[i])
        for i, c in enumerate(checks)
    )
