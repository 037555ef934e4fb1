"""The model as a judge, where one is configured: re-rank the fused hits, and say whether
the passages answer the question.

Both stages are optional (``ask --llm-stage rerank --llm-stage verdict``) and budgeted:
each sends one short prompt of at most ``n`` passages cut to ``chars`` characters and
asks for a few tokens back. A model that cannot be reached, or answers in a form not
asked for, leaves the retrieval order and the verdict as they were (0.5, "not asked"):
a stage can only add evidence, never remove the answer.

* :func:`rerank`: listwise: the model lists the numbers of the passages that help,
  most useful first; those come first in that order, the others after in fused order.
* :func:`verdict`: 1.0 when the model says the passages state the answer, 0.0 when it
  says they do not; the learned confidence reads it as the ``verdict`` feature.

The small local model here reads passages weakly (it often lists every number, and says
"yes" to on-topic passages); the stages are for a capable model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from twokeys.llm.base import LLM, Message
from twokeys.llm.http import ServiceTimeoutError, ServiceUnavailableError
from twokeys.types import Hit

STAGES = ("rerank", "verdict")
RERANK_N = 10
CHARS = 500
NOT_ASKED = 0.5

_NUMBER = re.compile(r"\d+")


def _passages(texts: Sequence[str], chars: int) -> str:
    return "\n\n".join(f"[{i}] {' '.join(t.split())[:chars]}" for i, t in enumerate(texts, 1))


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
        reply = llm.complete(prompt, max_tokens=4 * n, temperature=0.0)
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


def verdict(
    llm: LLM, question: str, texts: Sequence[str], *, n: int = 5, chars: int = CHARS
) -> float:
    """1.0: the model says the passages state the answer; 0.0: it says they do not;
    :data:`NOT_ASKED` when it cannot be reached or answers otherwise."""
    if not texts:
        return 0.0
    prompt = [
        Message("system", "You check whether passages answer a question. Reply yes or no."),
        Message(
            "user",
            f"Question: {question}\n\nPassages:\n{_passages(texts[:n], chars)}\n\n"
            "Do these passages state the answer to the question? Reply yes or no.",
        ),
    ]
    try:
        reply = llm.complete(prompt, max_tokens=4, temperature=0.0).strip().lower()
    except (ServiceUnavailableError, ServiceTimeoutError):
        return NOT_ASKED
    if reply.startswith("yes"):
        return 1.0
    if reply.startswith("no"):
        return 0.0
    return NOT_ASKED
