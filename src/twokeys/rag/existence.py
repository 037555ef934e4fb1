"""Existence questions: a question that asks whether a thing exists or is offered.

"Is there a student discount?", "Do you sell a video doorbell?", "Can I buy an
extended warranty?", "Does Lumatek make a smart lock?": the question introduces the
thing with an indefinite article (or none: "do you offer gift wrapping") and asks
whether it is offered. A documentation set that has the thing names it, so some
passage holds the words of its name together; and a page that said there is none
would name it too. When no passage holds them, the pages cannot answer. BM25 and the
dense model still see such a question as covered: "discount" is a word of the refund
page, "warranty" has a page of its own, and the rest of the question ("Hub", "cameras",
"buy") is the corpus's everyday vocabulary.

:func:`asked_for` reads the thing's name: after the question's lead (``is there``,
``are there``, ``do you|they sell|offer|make|have|provide|stock``, ``does Lumatek
sell|offer|make|provide|stock``, ``can I buy|get|book|order|purchase``) and an optional
indefinite article, the run of words up to the first stopword, code (a token with a
digit) or punctuation (:mod:`twokeys.rag.runs`), at most :data:`MAX_WORDS` of them.

* Only a compound counts (:data:`MIN_WORDS`): "a solar panel", not "a speaker". Its
  first words say which member of a family is meant, which a page about the family
  does not name, while one generic noun ("a way to...") is left to the sensors.
* Alternatives joined by "or" are read as such: "a student or education discount"
  asks for a student discount or an education discount, and the pages answer it when
  they name either.
* A question about what a product has ("Does the Cam Go have a swappable battery?") is
  not read: a product's parts are described in other words ("a removable battery",
  "the sun hood supplied"), where what a company offers is named.
* A definite or possessive determiner ("can I get *my* money back", "is there *the*
  option") refers to something already known and asks nothing about its existence.

Whether the pages name it is the caller's check (:mod:`twokeys.rag.grounding`): some
chunk holds every analysed term of the name, in any order ("charging dock" is named by
"charges ... in the optional desktop dock"), which is looser than the side-by-side
check of the elements and phrase rules, as a thing is described in more ways than a
setting is labelled.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from twokeys.rag.runs import token_runs

if TYPE_CHECKING:
    from twokeys.analysis import Analyzer, Token

MIN_WORDS = 2  # a compound: a modifier says which member of a family is asked for
MAX_WORDS = 3  # the name is the start of the run; what follows is the rest of the question

_LEAD = re.compile(
    r"\b(?:"
    r"(?:is|are)\s+there"
    r"|(?:do|will)\s+(?:you|they)\s+(?:sell|offer|make|have|provide|stock)"
    r"|(?:does|will)\s+(?-i:[A-Z])[\w-]*\s+(?:sell|offer|make|provide|stock)"
    r"|can\s+(?:i|we)\s+(?:buy|get|book|order|purchase)"
    r")\s+(?:(?:a|an|any|some)\s+)?",
    re.IGNORECASE,
)
_KNOWN = re.compile(r"(?:the|my|your|our|his|her|its|their|this|that|these|those)\b", re.IGNORECASE)
_BREAK = re.compile(r"[?!,;:()\[\]{}\"<>|*`/]|\.(?=\s|$)|\s[-–—]+\s")


def asked_for(question: str, analyzer: Analyzer) -> list[tuple[str, ...]]:
    """The things ``question`` asks the existence of (module docstring), in order: for
    each, its name as written, or the names it offers as alternatives ("a student or
    education discount": ``("student discount", "education discount")``)."""

    def word(token: Token, terms: tuple[str, ...]) -> str | None:
        if not terms or (token.is_identifier and any(c.isdigit() for c in token.text)):
            return None  # a stopword, or a code such as ZX-4812 (the identifier rules')
        return token.text  # hyphenated words too: "trade-in", "two-way"

    things: list[tuple[str, ...]] = []
    for lead in _LEAD.finditer(question):
        rest = question[lead.end() :]
        if _KNOWN.match(rest):
            continue
        clause = _BREAK.split(rest, maxsplit=1)[0]
        found = token_runs(clause, analyzer, _BREAK, word)
        if not found or not rest.lower().startswith(found[0][0].lower()):
            continue  # the thing's name must come right after the lead, not later
        run = found[0][:MAX_WORDS]
        other = _alternative(clause, found)
        if other is None:
            names = [run] if len(run) >= MIN_WORDS else []
        elif len(run) < len(other):  # "a student or education discount": a shared head
            names = [(*run, other[-1]), other[:MAX_WORDS]]
        else:  # "smoke detectors or CO alarms"; "... or sirens" is left to the sensors
            names = [run, other[:MAX_WORDS]] if len(other) >= MIN_WORDS else []
        if names:
            things.append(tuple(" ".join(n) for n in names))
    return list(dict.fromkeys(things))


def _alternative(clause: str, found: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The run after "or" when ``clause`` joins its first two runs with it."""
    if len(found) < 2:
        return None
    between = re.escape(found[0][-1]) + r"\s+or\s+(?:an?\s+)?" + re.escape(found[1][0])
    return found[1] if re.search(between, clause, re.IGNORECASE) else None
