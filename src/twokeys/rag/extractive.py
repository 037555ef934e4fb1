"""The answer without a language model: the best sentences of the top evidence, cited.

For each sub-query, every sentence of the packed context is scored by the query terms it
contains, each weighted by its rarity among the context's sentences
(``ln(1 + N / df)``), with ties going to the earlier block and sentence. The best
``per_query`` sentences of each sub-query (that match at least one term, and score at
least half its best sentence) are quoted as written, each followed by its block's
citation ``[n]``. Headings, table rows and code
are not quoted. Terms come from the index's own analyzer, so ``ZX-4821`` matches only
``ZX-4821``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from twokeys.errors import ConfigError
from twokeys.rag.packing import PackedContext, split_sentences

Terms = Callable[[str], list[str]]

RELATIVE_FLOOR = 0.5  # a further quote scores at least half the best one
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")

EXTRACTIVE_NOTE = (
    "Extractive answer (no language model configured): the most relevant sentences from "
    "the sources, quoted as written, not a generated answer."
)


@dataclass(frozen=True, slots=True)
class Quote:
    """One quoted sentence and the citation number of its block."""

    text: str
    number: int
    query: int  # the sub-query it answers


@dataclass(frozen=True)
class Extract:
    quotes: tuple[Quote, ...]
    text: str

    @property
    def cited(self) -> tuple[int, ...]:
        return tuple(sorted({q.number for q in self.quotes}))


def extract(
    context: PackedContext,
    queries: Sequence[str],
    *,
    query_terms: Terms,
    text_terms: Terms,
    per_query: int = 2,
) -> Extract:
    """Quote the sentences that best answer each of ``queries`` (see the module docstring)."""
    if per_query < 1:
        raise ConfigError(f"per_query: must be >= 1, got {per_query}")
    sentences = [
        (block.number, _LIST_MARKER.sub("", " ".join(block.text[a:b].split())))
        for block in context.blocks
        for a, b in split_sentences(block.text)
        if _quotable(block.text[a:b])
    ]
    terms = [set(text_terms(text)) for _, text in sentences]
    df = Counter(t for ts in terms for t in ts)
    n = len(sentences)
    quotes: list[Quote] = []
    seen: set[int] = set()
    for qi, query in enumerate(queries):
        wanted = set(query_terms(query))
        scored = []
        for si, sentence_terms in enumerate(terms):
            score = sum(math.log(1 + n / df[t]) for t in wanted & sentence_terms)
            if score > 0 and si not in seen:
                scored.append((-score, si))
        ranked = sorted(scored)[:per_query]
        for neg, si in ranked:
            if -neg < RELATIVE_FLOOR * -ranked[0][0]:
                break  # much weaker than this sub-query's best sentence
            seen.add(si)
            number, text = sentences[si]
            quotes.append(Quote(text, number, qi))
    return Extract(tuple(quotes), _render(quotes, queries))


def _quotable(sentence: str) -> bool:
    s = sentence.lstrip()
    return len(s.split()) >= 3 and not s.startswith(("#", "```", "~~~", "|"))


def _render(quotes: Sequence[Quote], queries: Sequence[str]) -> str:
    if not quotes:
        return f"{EXTRACTIVE_NOTE}\n\nNo sentence in the sources matches the question's terms."
    lines = [EXTRACTIVE_NOTE]
    for qi, query in enumerate(queries):
        mine = [q for q in quotes if q.query == qi]
        if not mine:
            continue
        lines.append("")
        if len(queries) > 1:
            lines.append(f"{query}:")
        lines.extend(f"- {q.text} [{q.number}]" for q in mine)
    return "\n".join(lines)
