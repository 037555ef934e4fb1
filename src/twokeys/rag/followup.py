"""A follow-up question made standalone, so that it retrieves with its conversation.

"And how many days do I have?" cannot be searched alone: what it asks about was said
in an earlier turn. :func:`standalone_query` gives the query to search for the newest
user message of a :class:`~twokeys.rag.conversation.Conversation`:

* **as asked** when there is no earlier user turn, or when the message stands on its
  own: it points back at nothing (no "it", "that", "they", ...) and retrieval can place
  it alone (the confidence rule that makes ``ask`` abstain finds it answerable);
* **by the model** (``llm``), asked to rewrite the message as one standalone search
  query from the conversation's recent turns; an answer that is empty, over
  :data:`MAX_QUERY_CHARS`, that keeps none of the message's own search terms
  (:func:`keeps_question`), or a failure of the model falls back to the rule;
* **by the rule** otherwise: the message plus the words of earlier user turns that
  weigh most, each word weighted by its idf in the index, halved for each user turn
  further back, so the turn just before counts most and a topic set long ago still
  counts; words already in the message, and words no chunk holds, are not added
  (nothing is fitted to a collection: the weights are the index's own statistics).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from twokeys.engine import Index
from twokeys.llm.base import LLM, Message
from twokeys.llm.http import ServiceError
from twokeys.rag.conversation import Conversation
from twokeys.rag.grounding import retrieval_confidence

How = Literal["as asked", "rule", "llm"]

#: words by which a follow-up points back at what was asked before
BACK_REFERENCE = re.compile(
    r"\b(?:it|its|it's|that|this|these|those|they|them|their|there|the same|above|"
    r"one|ones|such|else|also|too|instead)\b"
    r"|^\W*(?:and|but|or|so|what about|how about)\b",  # opens by going on from before
    re.I,
)
CARRIED_WORDS = 8  # words the rule adds, at most
DECAY = 0.5  # a user turn's weight relative to the one after it
MAX_QUERY_CHARS = 400  # a model's rewrite longer than this is not a query
LLM_TURNS = 6  # turns a model is shown to rewrite a follow-up
LLM_TURN_CHARS = 600  # characters of each turn it is shown
_WORD = re.compile(r"\w[\w.:/+-]*\w|\w")

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


def needs_context(index: Index, question: str) -> bool:
    """Whether ``question`` points back at earlier turns or cannot be placed alone."""
    return bool(BACK_REFERENCE.search(question)) or not (
        retrieval_confidence(index, question).answerable
    )


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
    if not needs_context(index, question):
        return Followup(question, "as asked")
    return Followup(rule_query(index, question, earlier), "rule")


def keeps_question(index: Index, question: str, query: str) -> bool:
    """Whether a model's rewrite keeps one of the message's own search terms, when it has
    any: one that keeps none searches for another question (a small model often repeats
    an earlier turn's question instead of rewriting the last one)."""
    own = set(index.analyzer.query_terms(question))
    return not own or bool(own & set(index.analyzer.query_terms(query)))


def rule_query(index: Index, question: str, earlier: tuple[str, ...]) -> str:
    """``question`` plus the weightiest words of the ``earlier`` user turns (oldest
    first), as the module docstring says."""
    analyzer = index.analyzer
    lexical = index.backend.lexical
    own = set(analyzer.query_terms(question))
    weights: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for back, text in enumerate(reversed(earlier)):
        scale = DECAY**back
        for position, word in enumerate(_WORD.findall(text)):
            terms = [t for t in analyzer.query_terms(word) if t not in own]
            known = [t for t in terms if lexical.has_term(t)]
            if not known:
                continue
            weight = scale * max(lexical.idf(known))
            key = word.lower()
            if weight > weights.get(key, 0.0):
                weights[key] = weight
                first_seen.setdefault(key, (-back, position))
    chosen = sorted(weights, key=lambda w: (-weights[w], first_seen[w]))[:CARRIED_WORDS]
    chosen.sort(key=lambda w: first_seen[w])  # in the order they were written
    return f"{question} {' '.join(chosen)}".strip() if chosen else question


def rewrite_with_llm(conversation: Conversation, llm: LLM) -> str:
    """The model's standalone query, or "" when its answer is not one."""
    turns = conversation.turns[-LLM_TURNS:]
    lines = [f"{t.role}: {_short(t.text)}" for t in turns]
    lines.append(f"user (last message): {_short(conversation.question)}")
    conversation_text = "\n".join(lines)
    prompt = [
        Message("system", REWRITE_SYSTEM),
        Message("user", f"Conversation:\n{conversation_text}\n\nStandalone search query:"),
    ]
    if not llm.chat:
        prompt_text = f"{REWRITE_SYSTEM}\n\n{conversation_text}\n\nStandalone search query:"
        answer = llm.complete(prompt_text, stop=("\n",), max_tokens=64)
    else:
        answer = llm.complete(prompt, max_tokens=64)
    line = next((x for x in answer.strip().splitlines() if x.strip()), "")
    line = re.sub(r"^(?:standalone )?(?:search )?query:\s*", "", line.strip(), flags=re.I)
    line = line.strip().strip("\"'`").strip()
    return line if 0 < len(line) <= MAX_QUERY_CHARS else ""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LLM_TURN_CHARS else f"{text[:LLM_TURN_CHARS]}..."
