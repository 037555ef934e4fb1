"""Query decomposition: a prompt that asks several things becomes several sub-queries,
each retrieved on its own, so one best-matching document does not fill the context.

:func:`decompose` is rule-based and deterministic: it splits at question marks,
semicolons, line breaks and sentence ends (a statement that sets the scene stays with
the question after it), then where a new question clause starts after a comma or a
conjunction (``, and what happens``, ``, can I``; not ``reset and re-pair``); a
condition (``if``, ``when`` ...) stays with the question clause after it. A part that
refers back (``it``, ``this`` ...) and names no identifier of its own gets the previous
part's identifiers and numbered items (or its content words) in brackets; at most
``max_parts`` parts are kept, the rest joined into the last.

:func:`decompose_with_llm` asks a model instead, and falls back to the rules when its
answer is not a usable list (:func:`usable_query`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from twokeys.errors import ConfigError
from twokeys.llm.base import LLM, Message

DEFAULT_MAX_PARTS = 4
_CARRIED = re.compile(r"\s*\([^()]*\)\s*$")  # words carried from the part before


def own_words(part: str) -> str:
    """``part`` without a closing parenthesis: a sub-query carries there the words of the
    part before it ("what does its light do (height device placed)"), which asked
    their own question."""
    return _CARRIED.sub("", part)


_WH = r"(?:what|why|when|where|which|who|whom|whose|how)"
_AUX = (
    r"(?:is|are|was|were|do|does|did|can|could|should|shall|will|would|has|have|had"
    r"|may|might|must|am)"
)
_SUBJECT = r"(?:i|you|we|they|it|he|she|there|this|that|these|those|the|my|our|your|its)"
_CLAUSE_BREAK = re.compile(
    rf"(?:\s*,\s*(?:(?:and|or|but|also|then)\s+)?|\s+(?:and|or|but)\s+(?:also\s+)?)"
    rf"(?={_WH}(?:\s+\w+)?\s+{_AUX}\b|{_WH}'s\b)"
    rf"|\s*,\s*(?:(?:and|or|but)\s+)?(?={_AUX}\s+{_SUBJECT}\b)"
    rf"|\s*,\s*(?:and|or|but)\s+(?={_AUX}\s+(?-i:[A-Z])\w)"
    rf"|\s*,\s*(?:and|or|but)\s+(?={_WH}\s+\w+)"
    rf"|\s*,\s*(?:and|or|but)\s+(?=(?:if|when|once|after|before)\b[^,?]*?(?:,\s*)?"
    rf"(?:{_WH}\s+(?:\w+\s+)?)?{_AUX}\s+{_SUBJECT}\b)",
    re.IGNORECASE,
)
_SENTENCE_BREAK = re.compile(r"(?<=\?)\s+|\s*;\s*|\s*\n+\s*|(?<=[.!])\s+(?=[A-Z])")
_LEADING = re.compile(r"^(?:(?:and|or|but|also|then|plus|so)\b[\s,]*)+", re.IGNORECASE)
_ID = r"(?:`[^`]+`|--?[\w][\w.-]*|[\w][\w./:@+#-]*[\d_./:@+#-][\w./:@+#-]*\w|[\w]*[a-z][A-Z]\w*)"
_ID_TOKEN = re.compile(rf"(?<![\w`]){_ID}(?![\w`])")
_BACK_REFERENCE = re.compile(
    r"\b(?:it|its|this|that|these|those|they|them|their|there)\b", re.IGNORECASE
)
# "code 4 from ...", "level 3": a word and a number no other content word follows (not
# "10 minutes", a quantity)
_NUMBERED = re.compile(r"\b([^\W\d_]+) (\d{1,3})\b(?![.,]\d)(?: ([^\W\d_]+))?")
_REQUEST = r"(?:tell|explain|describe|list|show|give|find|compare|summari[sz]e)"
_STOP = frozenset(
    """a an the and or but of to in on for with by at from is are was were be been do does
    did can could should will would has have had may might must i you we they it he she
    my our your its their this that these those there what why when where which who whom
    whose how about also tell me please explain describe""".split()
)


def decompose(prompt: str, *, max_parts: int = DEFAULT_MAX_PARTS) -> list[str]:
    """The sub-queries of ``prompt`` (just ``[prompt]`` when it asks one thing)."""
    if max_parts < 1:
        raise ConfigError(f"max_parts: must be >= 1, got {max_parts}")
    text = prompt.strip()
    if not text:
        raise ConfigError("question: is empty")
    parts: list[str] = []
    for sentence in _attach_statements(_SENTENCE_BREAK.split(text)):
        parts.extend(_clean(c) for c in _attach_conditions(_CLAUSE_BREAK.split(sentence)))
    parts = _with_back_references([p for p in parts if p])
    parts = list(dict.fromkeys(parts))
    if len(parts) > max_parts:
        parts = [*parts[: max_parts - 1], "; ".join(parts[max_parts - 1 :])]
    return parts if len(parts) > 1 else [text]


def decompose_with_llm(
    prompt: str, llm: LLM, *, max_parts: int = DEFAULT_MAX_PARTS, max_tokens: int = 200
) -> list[str]:
    """Ask ``llm`` for the sub-queries; the rule-based split when its answer is unusable."""
    if not prompt.strip():
        raise ConfigError("question: is empty")
    instruction = (
        f"Split the request below into at most {max_parts} standalone search queries, one per "
        "line, with no numbering and no other text. Repeat the subject in each query. If it "
        "asks only one thing, write it unchanged on one line."
    )
    if llm.detect_chat():  # a server is asked once, before the model's first prompt
        answer = llm.complete(
            [Message("system", instruction), Message("user", prompt.strip())],
            max_tokens=max_tokens,
        )
    else:
        answer = llm.complete(
            f"{instruction}\n\nRequest: {prompt.strip()}\nQueries:\n",
            stop=("\n\n", "Request:"),
            max_tokens=max_tokens,
        )
    parts = parse_query_list(answer)
    if not 1 <= len(parts) <= max_parts or not all(usable_query(p) for p in parts):
        return decompose(prompt, max_parts=max_parts)
    return parts if len(parts) > 1 else [prompt.strip()]


_SPECIAL_TOKEN = re.compile(
    r"<\|[^|>]*\|>|</?s>|<(?:start|end)_of_turn>|</?(?:bos|eos|pad|unk)>|\[/?INST\]|<<SYS>>",
    re.IGNORECASE,
)
_ECHO = re.compile(r"^(?:request|queries|query|answer|question|user|assistant|model)\s*:", re.I)


def usable_query(part: str) -> bool:
    """Whether a model-written sub-query is a search query: not a chat-template token
    (``<|im_end|>``, ``<end_of_turn>``), not an echo of the prompt's labels, has two or
    more letters and is at most 400 characters."""
    return (
        len(part) <= 400
        and sum(c.isalpha() for c in part) >= 2
        and not _SPECIAL_TOKEN.search(part)
        and not _ECHO.match(part)
    )


def parse_query_list(text: str) -> list[str]:
    """Lines of a model's answer, without bullets, numbers or quotes; blanks dropped."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d{1,2}[.)])\s*", "", line).strip().strip("\"'`").strip()
        if line:
            out.append(line)
    return list(dict.fromkeys(out))


_QUESTION_START = re.compile(rf"^\s*(?:{_WH}|{_AUX}|{_REQUEST})\b", re.IGNORECASE)


def _attach_statements(sentences: Sequence[str]) -> list[str]:
    """A statement that sets the scene ("my hub keeps restarting") joins the question
    after it, which needs it: "...; how often does it happen?" asks about the hub."""
    kept = [s for s in sentences if s.strip()]
    out: list[str] = []
    i = 0
    while i < len(kept):
        sentence = kept[i]
        if i + 1 < len(kept) and not _is_question(sentence) and _is_question(kept[i + 1]):
            joint = " " if sentence.rstrip()[-1:] in ".!" else "; "
            sentence = f"{sentence.rstrip()}{joint}{kept[i + 1]}"
            i += 1
        out.append(sentence)
        i += 1
    return out


def _attach_conditions(clauses: Sequence[str]) -> list[str]:
    """A condition ("If I write to the helpdesk", "..., and if it arrived broken") joins
    the question clause after it, which it qualifies: "how soon do I hear back?" asks
    nothing on its own. Not a condition that asks a question itself ("If I order this
    morning will it ship today")."""
    out: list[str] = []
    i = 0
    while i < len(clauses):
        clause = clauses[i]
        own = _clean(clause)
        if i < len(clauses) - 1 and _CONDITION.match(own) and not _INVERSION.search(own):
            clause = f"{clause.rstrip()}, {clauses[i + 1].lstrip()}"
            i += 1
        out.append(clause)
        i += 1
    return out


# an auxiliary verb before a pronoun: the condition asks a question of its own ("If I
# order this morning will it ship today")
_INVERSION = re.compile(rf"\b{_AUX}\s+(?:i|you|we|they|it|he|she|there)\b", re.IGNORECASE)
_CONDITION = re.compile(
    rf"(?:if|when|once|after|before|unless)\b(?!\s+(?:{_WH}|{_AUX})\b)", re.IGNORECASE
)


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence))


def _clean(clause: str) -> str:
    clause = _LEADING.sub("", clause.strip())
    return clause.strip(" \t,;:.!?").strip()


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'-]+", text)


def _with_back_references(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if out and _BACK_REFERENCE.search(part) and not _ID_TOKEN.search(part):
            numbered = [
                f"{m.group(1)} {m.group(2)}"
                for m in _NUMBERED.finditer(out[-1])
                if m.group(1).lower() not in _STOP and (m.group(3) or "").lower() in _STOP | {""}
            ]
            keys = [*_ID_TOKEN.findall(out[-1]), *numbered] or [
                w for w in _words(out[-1]) if w.lower() not in _STOP
            ]
            keys = keys[:6]
            if keys:
                part = f"{part} ({' '.join(keys)})"
        out.append(part)
    return out
