"""A follow-up question made standalone, so that it retrieves with its conversation.

:func:`standalone_query` gives the query to search for a conversation's newest user
message: as asked when there is no earlier turn or it starts a new topic; by the model
(``llm``) when its rewrite keeps one of the message's own search terms; else by the
rule: the user turns of the current topic, oldest first, then the message.

The topic is read from retrieval, over the last :data:`TOPIC_TURNS` user turns: a turn
goes on with the topic when its own search finds the topic's best document among its
first :data:`TOPIC_DOCS`, or when it points back ("it", "and ...") with fewer than
:data:`FEW_TERMS` search terms; any other turn starts a new topic. The constants were
chosen on the train half of ``benchmarks/followups/`` (split by a hash of each
conversation's id) and are reported on the test half.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from twokeys.engine import Index
from twokeys.llm.base import LLM, Message
from twokeys.llm.http import ServiceError
from twokeys.rag.conversation import Conversation

How = Literal["as asked", "rule", "llm"]

#: words by which a follow-up points back at what was asked before
BACK_REFERENCE = re.compile(
    r"\b(?:it|its|it's|that|this|these|those|they|them|their|there|the same|above|"
    r"one|ones|such|else|also|too|instead)\b"
    r"|^\W*(?:and|but|or|so|what about|how about)\b",  # opens by going on from before
    re.I,
)
TOPIC_DOCS = 1  # a turn's own best documents that must hold its topic's best one
FEW_TERMS = 4  # a turn pointing back with fewer search terms than this cannot stand alone
TOPIC_TURNS = 6  # user turns read back for the current topic
MAX_QUERY_CHARS = 400  # a model's rewrite longer than this is not a query
LLM_TURNS = 6  # turns a model is shown to rewrite a follow-up
LLM_TURN_CHARS = 600  # characters of each turn it is shown

REWRITE_SYSTEM = (
    "You turn the user's last message in a conversation into one standalone search "
    "query for a document search engine. Resolve words such as 'it', 'that' or 'they' "
    "from the conversation and keep the user's own key words. If the message already "
    "stands on its own, return it unchanged. Reply with the query only, on one line."
)


@dataclass(frozen=True, slots=True)
class Followup:
    """The query searched for the newest user message, and how it was made."""

    query: str
    how: How
    model_error: str | None = None  # the model failed; the rule's query is used

    def to_dict(self) -> dict[str, str | None]:
        return {"query": self.query, "how": self.how, "model_error": self.model_error}


def standalone_query(
    index: Index, conversation: Conversation, *, llm: LLM | None = None
) -> Followup:
    """The query to search for ``conversation``'s newest message (module docstring)."""
    question = conversation.question.strip()
    earlier = conversation.earlier_questions
    if not earlier:
        return Followup(question, "as asked")
    if llm is not None:
        try:
            rewritten = rewrite_with_llm(conversation, llm)
        except ServiceError as exc:
            return Followup(rule_query(index, question, earlier), "rule", str(exc))
        if rewritten and keeps_question(index, question, rewritten):
            return Followup(rewritten, "llm")
    query = rule_query(index, question, earlier)
    return Followup(query, "as asked" if query == question else "rule")


def keeps_question(index: Index, question: str, query: str) -> bool:
    """Whether a model's rewrite keeps one of the message's own search terms, when it has
    any: one that keeps none searches for another question (a small model often repeats
    an earlier turn's question instead of rewriting the last one)."""
    own = set(index.analyzer.query_terms(question))
    return not own or bool(own & set(index.analyzer.query_terms(query)))


def rule_query(index: Index, question: str, earlier: Sequence[str]) -> str:
    """``question`` searched with the user turns of its topic (module docstring)."""
    topic = topic_turns(index, question, earlier)
    return " ".join((*(_clause(t) for t in topic), question)) if topic else question


def _clause(turn: str) -> str:
    """An earlier turn as words of the query, not a question of its own (a "?" would
    make the query two questions, each answered apart: :mod:`twokeys.rag.decompose`)."""
    return " ".join(re.sub(r"[?;]", " ", turn).split())


def topic_turns(index: Index, question: str, earlier: Sequence[str]) -> tuple[str, ...]:
    """The ``earlier`` user turns (oldest first) of the topic ``question`` goes on with;
    () when it starts a new one."""
    turns = [t.strip() for t in earlier[-TOPIC_TURNS:] if t.strip()]
    if not turns:
        return ()
    segment = [turns[0]]
    for turn in [*turns[1:], question]:
        segment = [*segment, turn] if goes_on(index, " ".join(segment), turn) else [turn]
    return tuple(segment[:-1])


def goes_on(index: Index, topic: str, turn: str) -> bool:
    """Whether ``turn`` goes on with ``topic`` (module docstring)."""
    if BACK_REFERENCE.search(turn) and len(set(index.analyzer.query_terms(turn))) < FEW_TERMS:
        return True
    best = _documents(index, topic, 1)
    return bool(best) and best[0] in _documents(index, turn, TOPIC_DOCS)


def _documents(index: Index, query: str, n: int) -> list[str]:
    """The first ``n`` distinct documents ``query`` finds."""
    found: list[str] = []
    for hit in index.search(query, k=max(10, 4 * n)):
        if hit.doc_id not in found:
            found.append(hit.doc_id)
    return found[:n]


def rewrite_with_llm(conversation: Conversation, llm: LLM) -> str:
    """The model's standalone query, or "" when its answer is not one."""
    turns = conversation.turns[-LLM_TURNS:]
    lines = [f"{t.role}: {_short(t.text)}" for t in turns]
    lines.append(f"user (last message): {_short(conversation.question)}")
    text = "\n".join(lines)
    if llm.detect_chat():  # a server is asked once, before the model's first prompt
        asked = f"Conversation:\n{text}\n\nStandalone search query:"
        answer = llm.complete(
            [Message("system", REWRITE_SYSTEM), Message("user", asked)], max_tokens=64
        )
    else:
        asked = f"{REWRITE_SYSTEM}\n\n{text}\n\nStandalone search query:"
        answer = llm.complete(asked, stop=("\n",), max_tokens=64)
    line = next((x for x in answer.strip().splitlines() if x.strip()), "")
    line = re.sub(r"^(?:standalone )?(?:search )?query:\s*", "", line.strip(), flags=re.I)
    line = line.strip().strip("\"'`").strip()
    return line if 0 < len(line) <= MAX_QUERY_CHARS else ""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LLM_TURN_CHARS else f"{text[:LLM_TURN_CHARS]}..."
