"""The answer without a language model: the best sentences of each part's own evidence,
cited.

For each sub-query, the candidates are the sentences of the blocks that sub-query
brought into the context (so a part never quotes another part's evidence; when its own
blocks hold no matching sentence, every block is searched). Each candidate is scored by
both sensors:

* *lexical*: the query terms it contains, each weighted by its rarity among the
  context's sentences (``ln(1 + N / df)``), as a share of the whole query's weight;
* *dense* (when the index has an encoder): the cosine between the sub-query and the
  sentence, so a paraphrase ("money back if it arrived broken") finds the sentence that
  answers it ("delivered in a defective condition ... full refund") with no word in
  common.

The score is ``cosine + LEXICAL_SHARE * lexical`` (``lexical`` alone without an
encoder); ties go to the earlier block and sentence. The best ``per_query`` sentences
(that score at least :data:`DENSE_FLOOR`, or :data:`RELATIVE_FLOOR` without an encoder,
of the best) are quoted as written, each followed by its block's citation ``[n]``; each
quote remembers the heading of the chunk it comes from, so a block merged from several
sections cites the right one. Headings, table rows and code are not quoted. Terms come
from the index's own analyzer, so ``ZX-4821`` matches only ``ZX-4821``.

A fact often spans two sentences, and the dense model often ranks the sentence that
sets the scene above the one that states the answer, so a quote brings the sentences
read with it (before and after it in its paragraph: no blank line or heading between)
that score at least :data:`NEIGHBOUR_FLOOR` of the best; a lead-in ending in ``:``
brings the sentence after it in its paragraph, and a lead-in whose list follows after a
blank line ("choose one that:", then the items) brings the items that score at least
:data:`NEIGHBOUR_FLOOR` of the best, or else its best item: the lead-in alone says
nothing. A lead-in to a code block or table ("Remove old
bundles from the Hub shell:") carries that block's terms, so a question about
``hubctl diag purge`` finds the sentence that says what the command is for.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from twokeys.errors import ConfigError
from twokeys.rag.packing import PackedContext
from twokeys.text.sentences import split_sentences

Terms = Callable[[str], list[str]]
Similarity = Callable[[str, Sequence[str]], list[float]]
"""``similarity(query, sentences)``: the cosine of the query to each sentence."""

RELATIVE_FLOOR = 0.5  # a further quote scores at least half the best one (lexical only)
DENSE_FLOOR = 0.8  # with the dense model: at least this share of the best score (dev)
LEXICAL_SHARE = 0.6  # what the lexical share adds to the cosine (set on the dev split)
NEIGHBOUR_FLOOR = 0.6  # a sentence next to a quote, in its paragraph, joins at this share
HEADING_SHARE = 0.5  # a query word in the sentence's own heading counts half (set on dev)
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")

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


@dataclass(frozen=True)
class Extract:
    quotes: tuple[Quote, ...]
    text: str

    @property
    def cited(self) -> tuple[int, ...]:
        return tuple(sorted({q.number for q in self.quotes}))


@dataclass(frozen=True, slots=True)
class _Sentence:
    number: int  # block
    text: str
    heading: str
    queries: frozenset[int]  # sub-queries whose blocks hold it
    paragraph: int  # sentences with the same number are read together (no blank line, heading)
    introduces: str = ""  # a lead-in's code block or table, whose terms it carries
    item: bool = False  # written as a list item


def _sentences(context: PackedContext) -> list[_Sentence]:
    """The quotable sentences of the context's blocks, in reading order."""
    out: list[_Sentence] = []
    paragraph = 0
    for block in context.blocks:
        paragraph += 1
        spans = split_sentences(block.text)
        previous_end = 0
        for k, (a, b) in enumerate(spans):
            piece = block.text[a:b]
            if "\n\n" in block.text[previous_end:a].replace(" ", ""):
                paragraph += 1
            previous_end = b
            if not _quotable(piece):
                if piece.lstrip().startswith("#"):
                    paragraph += 1  # a heading closes the paragraph before it
                continue
            introduces = ""
            if piece.rstrip().endswith(":"):
                # the unquotable pieces it leads into: a code block, table rows
                shown = []
                for c, d in spans[k + 1 :]:
                    following = block.text[c:d]
                    if _quotable(following) or following.lstrip().startswith("#"):
                        break
                    shown.append(following)
                introduces = "\n".join(shown)
            out.append(
                _Sentence(
                    block.number,
                    _LIST_MARKER.sub("", " ".join(piece.split())),
                    block.heading_at(a),
                    frozenset(block.queries),
                    paragraph,
                    introduces,
                    bool(_LIST_MARKER.match(piece.lstrip())),
                )
            )
    return out


def extract(
    context: PackedContext,
    queries: Sequence[str],
    *,
    query_terms: Terms,
    text_terms: Terms,
    per_query: int = 3,
    similarity: Similarity | None = None,
    unanswered: Collection[int] = (),
) -> Extract:
    """Quote the sentences that best answer each of ``queries`` (see the module docstring).

    ``unanswered`` holds the indices of sub-queries the sources were judged not to
    answer; they get no quote, only a note."""
    if per_query < 1:
        raise ConfigError(f"per_query: must be >= 1, got {per_query}")
    sentences = _sentences(context)
    terms = [set(text_terms(s.text)) | set(text_terms(s.introduces)) for s in sentences]
    # the words of a sentence's own (innermost) heading count too, at HEADING_SHARE
    above = [
        set(text_terms(s.heading.rpartition(" > ")[2])) - ts
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
        own = [i for i, s in enumerate(sentences) if qi in s.queries and i not in seen]
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
                for j in _neighbours(sentences, si)
                if j in scores
                and j not in chosen
                and (scores[j] >= NEIGHBOUR_FLOOR * best or _introduces(sentences, si, j))
            ]
            items = [j for j in _list_after(sentences, si) if j in scores and j not in chosen]
            if items:
                strong = [j for j in items if scores[j] >= NEIGHBOUR_FLOOR * best]
                read_with += strong or [max(items, key=lambda j: (scores[j], -j))]
            chosen.extend(sorted({si, *read_with}))
        for si in chosen:
            seen.add(si)
            s = sentences[si]
            quotes.append(Quote(s.text, s.number, qi, s.heading))
    return Extract(tuple(quotes), _render(quotes, queries, unanswered))


def _neighbours(sentences: Sequence[_Sentence], i: int) -> list[int]:
    """The sentences read together with sentence ``i``: the one before and after it in
    the same paragraph."""
    return [
        j
        for j in (i - 1, i + 1)
        if 0 <= j < len(sentences) and sentences[j].paragraph == sentences[i].paragraph
    ]


def _list_after(sentences: Sequence[_Sentence], i: int) -> list[int]:
    """The items of the list a lead-in ``i`` (ends in ``:``) introduces after a blank line."""
    lead_in = sentences[i]
    if not lead_in.text.endswith(":") or lead_in.introduces:
        return []
    items: list[int] = []
    for j in range(i + 1, len(sentences)):
        s = sentences[j]
        if s.number != lead_in.number or s.paragraph != lead_in.paragraph + 1 or not s.item:
            break
        items.append(j)
    return items


def _introduces(sentences: Sequence[_Sentence], i: int, j: int) -> bool:
    """Sentence ``i`` is a lead-in (ends in ``:``) to prose and ``j`` the sentence after it."""
    lead_in = sentences[i]
    return j == i + 1 and lead_in.text.endswith(":") and not lead_in.introduces


def _rank(
    query: str,
    candidates: Sequence[int],
    sentences: Sequence[_Sentence],
    lexical: Sequence[float],
    similarity: Similarity | None,
) -> list[tuple[float, int]]:
    """``(score, sentence index)`` best first, ties to the earlier sentence."""
    if not candidates:
        return []
    if similarity is None:
        scored = [(lexical[i], i) for i in candidates if lexical[i] > 0]
    else:
        cosines = similarity(query, [sentences[i].text for i in candidates])
        scored = [
            (cos + LEXICAL_SHARE * lexical[i], i)
            for cos, i in zip(cosines, candidates, strict=True)
        ]
    return sorted(scored, key=lambda si: (-si[0], si[1]))


def _quotable(sentence: str) -> bool:
    s = sentence.lstrip()
    return len(s.split()) >= 3 and not s.startswith(("#", "```", "~~~", "|"))


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
        lines.extend(f"- {q.text} [{q.number}]" for q in mine)
    return "\n".join(lines)
