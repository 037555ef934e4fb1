"""The answer without a language model: the best sentences of each part's own evidence,
cited.

For each sub-query, the candidates are the quotable units (:mod:`twokeys.rag.units`:
prose sentences, list items, table rows with their header, code comments) of the blocks
that sub-query brought into the context (so a part never quotes another part's evidence;
when its own blocks hold no matching unit, every block is searched).

Each candidate is scored by both sensors:

* *lexical*: the query terms it contains, each weighted by its rarity among the
  context's units (``ln(1 + N / df)``), as a share of the whole query's weight; the
  words of its headings (the heading right above it, and its chunk's heading path,
  which names what the whole page and section are about) and of a row's header count
  at :data:`HEADING_SHARE`, and a comment carries the terms of the code it describes;
* *dense* (when the index has an encoder): the cosine between the sub-query and the
  unit (a row with its header after its heading, as it is shown: ``Exit codes — Code:
  4; Meaning: Server unreachable``, since a row's cells do not say what its table is
  about; a comment without its code), so a paraphrase ("money back if it arrived
  broken") finds the sentence that answers it ("delivered in a defective condition
  ... full refund") with no word in common. A prose sentence counts with the better of
  two readings: alone, and after the heading right above it (``Can I use it abroad?
  — The supplied adapter accepts 100 to 240 V ...``), as a section answers its
  heading: a question that paraphrases the heading ("can I take it overseas")
  finds the answer beneath it even when the answer repeats none of the question, while
  a sentence that matches the question on its own keeps its own cosine.

The score is ``cosine + LEXICAL_SHARE * lexical`` (``lexical`` alone without an
encoder); ties go to the earlier block and sentence. The best ``per_query`` units
(that score at least :data:`DENSE_FLOOR`, or :data:`RELATIVE_FLOOR` without an encoder,
of the best; one row per table, as a row answers one lookup and every row holds its
table's header words; not a sentence about the page itself, "This page explains the
configuration file ...", which states nothing about the subject, unless no other unit
is there) are quoted as written, each followed by its block's citation ``[n]``. A row,
a list item or a comment, a fragment of a
larger structure, is shown after the heading right above it (``1.2.9 — Added the
--quiet option``), prose stands alone. Each quote remembers the heading of the chunk it
comes from, so a block merged from several sections cites the right one. Headings are
not quoted. Terms come from the index's own analyzer, so ``v2.4.1`` matches only
``v2.4.1``.

A fact often spans two sentences, and the dense model often ranks the sentence that
sets the scene above the one that states the answer, so a quote brings the sentences
read with it (before and after it in its paragraph: no blank line or heading between;
in a list, in its own item, as each item makes its own point)
that score at least :data:`NEIGHBOUR_FLOOR` of the best; a lead-in ending in ``:``
brings the sentence after it in its paragraph, and a lead-in whose list follows after a
blank line ("choose one that:", then the items) brings the items that score at least
:data:`NEIGHBOUR_FLOOR` of the best, or else its best item: the lead-in alone says
nothing. A lead-in to a code block or table ("Remove old logs from the shell:")
carries that block's terms, so a question about ``logctl purge`` finds the sentence
that says what the command is for, shown with the code line that holds the most of the
question's weight beyond the lead-in's own words, the line it was found by (``logctl
purge --older-than 14d``); as the rest of the code is not quoted, a lead-in to code
brings the prose right after the code block, in its section, which says what the command
does or shows ("It prints each file it removed ..."), unless that is a new list item
(the next step). A question that asks for a procedure ("how do I ...", "how to ...") is
answered by steps, and a step of a numbered list means little without the steps before
it ("Release the button."), so there a quoted step (or a sentence of one) brings the
steps of its list before it, from the first (the list read without a blank line). Rows
and comments are read alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from twokeys.errors import ConfigError
from twokeys.rag.packing import PackedContext
from twokeys.rag.units import (
    COMMENT,
    Unit,
    after_code,
    introduces,
    list_after,
    neighbours,
    same_item,
    steps_after,
    steps_before,
    units,
)
from twokeys.text.sentences import is_fence

Terms = Callable[[str], list[str]]
Similarity = Callable[[str, Sequence[str]], list[float]]
"""``similarity(query, sentences)``: the cosine of the query to each sentence."""

RELATIVE_FLOOR = 0.5  # a further quote scores at least half the best one (lexical only)
DENSE_FLOOR = 0.8  # with the dense model: at least this share of the best score (dev)
LEXICAL_SHARE = 0.6  # what the lexical share adds to the cosine (set on the dev split)
NEIGHBOUR_FLOOR = 0.6  # a sentence next to a quote, in its paragraph, joins at this share
HEADING_SHARE = 0.5  # a query word in the sentence's headings counts half (set on dev)
# a question that asks for a procedure: "how do I ...", "how can we ...", "how to ..."
_PROCEDURE = re.compile(
    r"^\W*how\s+(?:(?:do|can|should|could|would|must|shall)\s+(?:i|we|you)|to)\b", re.IGNORECASE
)
# a sentence about the document itself: "This page explains ...", "This guide covers ..."
_ABOUT_THE_PAGE = re.compile(
    r"This (?:page|guide|article|document|section|policy|changelog|chapter|FAQ|glossary)\b"
)

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


def _code_line(s: Unit, weight: dict[str, float], own: set[str], text_terms: Terms) -> str:
    """The line of the code a lead-in introduces that holds the most of the query's
    weight beyond the lead-in's own words (the first such line on a tie), or ``""``
    when no line holds any: the line the lead-in was found by, shown after it."""
    if not any(is_fence(p.lstrip()) for p in s.introduces.split("\n")):
        return ""
    best, shown = 0.0, ""
    for line in s.introduces.split("\n"):
        code = line.strip()
        if not code or is_fence(code) or COMMENT.match(code) or code.startswith("|"):
            continue
        held = sum(weight.get(t, 0.0) for t in set(text_terms(code)) - own)
        if held > best:
            best, shown = held, code
    return shown


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
        about = {i for i in own if _ABOUT_THE_PAGE.match(sentences[i].text)}
        if len(about) < len(own):
            own = [i for i in own if i not in about]
        ranked = _rank(query, own, sentences, lexical, similarity)
        ranked = _one_row_per_table(ranked, sentences)
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
                if j in scores
                and j not in chosen
                and (
                    (scores[j] >= NEIGHBOUR_FLOOR * best and same_item(sentences, si, j))
                    or introduces(sentences, si, j)
                )
            ]
            read_with += [j for j in after_code(sentences, si) if j in scores and j not in chosen]
            if _PROCEDURE.match(query):
                steps = steps_before(sentences, si) + steps_after(sentences, si)
                read_with += [j for j in steps if j in scores and j not in chosen]
            items = [j for j in list_after(sentences, si) if j in scores and j not in chosen]
            if items:
                strong = [j for j in items if scores[j] >= NEIGHBOUR_FLOOR * best]
                read_with += strong or [max(items, key=lambda j: (scores[j], -j))]
            chosen.extend(sorted({si, *read_with}))
        for si in chosen:
            seen.add(si)
            s = sentences[si]
            line = _code_line(s, weight, set(text_terms(s.words)), text_terms)
            text = f"{s.text} `{line}`" if line else s.text
            quotes.append(Quote(text, s.number, qi, s.heading, _label(s)))
    return Extract(tuple(quotes), _render(quotes, queries, unanswered))


def _one_row_per_table(
    ranked: Sequence[tuple[float, int]], sentences: Sequence[Unit]
) -> list[tuple[float, int]]:
    """``ranked`` without the rows of a table after its best one: a row answers one
    lookup, and the rows of a table share its header, so without this the rows of a
    table whose header echoes the question fill every quote."""
    tables: set[int] = set()
    out = []
    for score, i in ranked:
        table = sentences[i].table
        if table:
            if table in tables:
                continue
            tables.add(table)
        out.append((score, i))
    return out


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
