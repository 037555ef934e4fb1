"""The answer without a language model: the best units of each part's own evidence,
quoted as written and cited.

For each sub-query the candidates are the quotable units (:mod:`twokeys.rag.units`) of
the chunks it was judged on (every unit when none matches and there is no encoder).
Each is scored ``cosine + LEXICAL_SHARE * lexical``: *lexical* is the query's terms it
holds, each weighted ``ln(1 + N / df)`` over the context's units, as a share of the
query's weight, its headings' words (and a row's header) counting at
:data:`HEADING_SHARE`; the *cosine* (with an encoder) is the dense model's, the better of
the unit read alone and under its heading, as a section answers its heading. The best
``per_query`` units within :data:`DENSE_FLOOR` (:data:`RELATIVE_FLOOR` lexical only) of
the best are quoted, each with the sentences next to it in its paragraph and list item
that score :data:`NEIGHBOUR_FLOOR` of the best (a fact often spans two sentences). A
row, item or comment is shown after its heading; terms come from the index's analyzer.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from twokeys.errors import ConfigError
from twokeys.rag.packing import PackedContext
from twokeys.rag.units import Unit, neighbours, units

Terms = Callable[[str], list[str]]
Similarity = Callable[[str, Sequence[str]], list[float]]
"""``similarity(query, sentences)``: the cosine of the query to each sentence."""

RELATIVE_FLOOR = 0.5  # a further quote scores at least half the best one (lexical only)
DENSE_FLOOR = 0.8  # with the dense model: at least this share of the best score (dev)
LEXICAL_SHARE = 0.6  # what the lexical share adds to the cosine (set on the dev split)
NEIGHBOUR_FLOOR = 0.6  # a sentence next to a quote, in its paragraph, joins at this share
HEADING_SHARE = 0.5  # a query word in the sentence's headings counts half (set on dev)
EXTRACTIVE_NOTE = (
    "Extractive answer (no language model configured): the most relevant sentences from "
    "the sources, quoted as written, not a generated answer."
)
UNANSWERED = "The sources do not answer this part."


@dataclass(frozen=True, slots=True)
class Quote:
    """One quoted sentence, the citation number of its block and its chunk's heading."""

    text: str
    number: int
    query: int  # the sub-query it answers
    heading: str = ""
    label: str = ""  # the heading shown before a row, item or comment: what it is about


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
    per_query: int = 3,
    similarity: Similarity | None = None,
    unanswered: Collection[int] = (),
    evidence: Sequence[Collection[str]] | None = None,
) -> Extract:
    """Quote the sentences that best answer each of ``queries`` (see the module docstring).

    ``unanswered`` holds the indices of sub-queries the sources were judged not to
    answer; they get no quote, only a note. ``evidence``: for each sub-query, the ids of
    the chunks it quotes from (default: every chunk of the blocks it brought)."""
    if per_query < 1:
        raise ConfigError(f"per_query: must be >= 1, got {per_query}")
    sentences = units(context)
    terms = [set(text_terms(s.words)) | set(text_terms(s.introduces)) for s in sentences]
    # the words of its headings (and a row's header) count too, at HEADING_SHARE: a page
    # about a tool is about it in every sentence, whether or not the sentence says so
    above = [
        set(text_terms(f"{s.section}\n{s.header}\n{s.heading}")) - ts
        for s, ts in zip(sentences, terms, strict=True)
    ]
    df = Counter(t for ts in terms for t in ts)
    n = len(sentences)
    quotes: list[Quote] = []
    seen: set[int] = set()
    for qi, query in enumerate(queries):
        if qi in unanswered:
            continue
        wanted = set(query_terms(query))
        weight = {t: math.log(1 + n / max(df[t], 1)) for t in wanted}
        mass = sum(weight.values()) or 1.0
        lexical = [
            (
                sum(weight[t] for t in wanted & sentence_terms)
                + HEADING_SHARE * sum(weight[t] for t in wanted & heading_terms)
            )
            / mass
            for sentence_terms, heading_terms in zip(terms, above, strict=True)
        ]
        own = [
            i
            for i, s in enumerate(sentences)
            if (qi in s.queries if evidence is None else s.chunk in evidence[qi]) and i not in seen
        ]
        if not any(lexical[i] > 0 for i in own) and similarity is None:
            own = [i for i in range(n) if i not in seen]  # fall back to the whole context
        ranked = _rank(query, own, sentences, lexical, similarity)
        if not ranked:
            continue
        best = ranked[0][0]
        floor = (DENSE_FLOOR if similarity is not None else RELATIVE_FLOOR) * best
        scores = dict.fromkeys(own, 0.0) | {i: score for score, i in ranked}
        chosen: list[int] = []
        for score, si in ranked[:per_query]:
            if score < floor:
                break  # much weaker than this sub-query's best sentence
            if si in chosen:
                continue  # already quoted as a neighbour
            read_with = [
                j
                for j in neighbours(sentences, si)
                if j in scores and j not in chosen and scores[j] >= NEIGHBOUR_FLOOR * best
            ]
            chosen.extend(sorted({si, *read_with}))
        for si in chosen:
            seen.add(si)
            s = sentences[si]
            quotes.append(Quote(s.text, s.number, qi, s.heading, _label(s)))
    return Extract(tuple(quotes), _render(quotes, queries, unanswered))


def _rank(
    query: str,
    candidates: Sequence[int],
    sentences: Sequence[Unit],
    lexical: Sequence[float],
    similarity: Similarity | None,
) -> list[tuple[float, int]]:
    """``(score, sentence index)`` best first, ties to the earlier sentence."""
    if not candidates:
        return []
    if similarity is None:
        scored = [(lexical[i], i) for i in candidates if lexical[i] > 0]
    else:
        # each unit read alone and, a prose sentence, as the answer to its heading, in
        # one call; the better reading counts
        reads = [sentences[i].read for i in candidates]
        framed = {k: sentences[i].framed for k, i in enumerate(candidates)}
        framed = {k: text for k, text in framed.items() if text != reads[k]}
        both = similarity(query, reads + list(framed.values()))
        cosines = both[: len(reads)]
        for k, under in zip(framed, both[len(reads) :], strict=True):
            cosines[k] = max(cosines[k], under)
        scored = [
            (cos + LEXICAL_SHARE * lexical[i], i)
            for cos, i in zip(cosines, candidates, strict=True)
        ]
    return sorted(scored, key=lambda si: (-si[0], si[1]))


def _label(s: Unit) -> str:
    """The heading shown before a quote that is a fragment of a structure (a table row, a
    list item, a code comment), unless the quote already says it; prose stands alone."""
    if s.kind == "sentence" or not s.section:
        return ""
    if " ".join(s.section.lower().split()) in " ".join(s.text.lower().split()):
        return ""
    return s.section


def _render(quotes: Sequence[Quote], queries: Sequence[str], unanswered: Collection[int]) -> str:
    if not quotes:
        return f"{EXTRACTIVE_NOTE}\n\nNo sentence in the sources matches the question's terms."
    lines = [EXTRACTIVE_NOTE]
    for qi, query in enumerate(queries):
        mine = [q for q in quotes if q.query == qi]
        if not mine and qi not in unanswered:
            continue
        lines.append("")
        if len(queries) > 1:
            lines.append(f"{query}:")
        if qi in unanswered:
            lines.append(f"- {UNANSWERED}")
        lines.extend(
            f"- {q.label} — {q.text} [{q.number}]" if q.label else f"- {q.text} [{q.number}]"
            for q in mine
        )
    return "\n".join(lines)
