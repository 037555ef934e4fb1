"""The answer without a language model: the best sentences of each part's own evidence,
cited.

For each sub-query, the candidates are the quotable units of the blocks that sub-query
brought into the context (so a part never quotes another part's evidence; when its own
blocks hold no matching unit, every block is searched):

* prose sentences and list items;
* table rows, each cell after its column's header (``Code: 4; Meaning: Hub
  unreachable``): the header says what the cells mean;
* whole-line comments of a fenced code block (``# Verify a downloaded manifest ...``),
  quoted with the code line after them.

Each candidate is scored by both sensors:

* *lexical*: the query terms it contains, each weighted by its rarity among the
  context's units (``ln(1 + N / df)``), as a share of the whole query's weight; the
  words of its headings (the heading right above it, and its chunk's heading path,
  which names what the whole page and section are about) and of a row's header count
  at :data:`HEADING_SHARE`, and a comment carries the terms of the code it describes;
* *dense* (when the index has an encoder): the cosine between the sub-query and the
  unit (a row with its header after its heading, as it is shown: ``Exit codes — Code:
  4; Meaning: Hub unreachable``, since a row's cells do not say what its table is
  about; a comment without its code), so a paraphrase ("money back if it arrived
  broken") finds the sentence that answers it ("delivered in a defective condition
  ... full refund") with no word in common. A prose sentence counts with the better of
  two readings: alone, and after the heading right above it (``Can I use my Hub
  abroad? — The supplied adapter accepts 100 to 240 V ...``), as a section answers its
  heading: a question that paraphrases the heading ("can I take my hub overseas")
  finds the answer beneath it even when the answer repeats none of the question, while
  a sentence that matches the question on its own keeps its own cosine.

The score is ``cosine + LEXICAL_SHARE * lexical`` (``lexical`` alone without an
encoder); ties go to the earlier block and sentence. The best ``per_query`` units
(that score at least :data:`DENSE_FLOOR`, or :data:`RELATIVE_FLOOR` without an encoder,
of the best; one row per table, as a row answers one lookup and every row holds its
table's header words, and the row a question names by number ("exit code 3": the row
whose ``Code`` cell is 3) takes its table's best place; not a sentence about the page
itself, "This page explains error code ZX-4821 ...", which states nothing about the
subject, unless no other unit is there) are quoted as written, each followed by its
block's citation ``[n]``. For a question that asks for a value (a duration, a number,
a price, a distance: :func:`twokeys.rag.answer_types.value_type`) the units that state
one and score within the floor come first, and when the quotes still state none its best
unit that does is added: the dense model often ranks the sentence that names the topic
("comes with a limited hardware warranty", "Partial top-ups count as fractions of a
cycle") above the one that gives the figure ("24 months from purchase", "A full charge
takes about four hours"). A row, a list item or a comment, a fragment of a
larger structure, is shown after the heading right above it (``1.2.9 — Added the
--quiet option``), prose stands alone. Each quote remembers the heading of the chunk it
comes from, so a block merged from several sections cites the right one. Headings are
not quoted. Terms come from the index's own analyzer, so ``ZX-4821`` matches only
``ZX-4821``.

A fact often spans two sentences, and the dense model often ranks the sentence that
sets the scene above the one that states the answer, so a quote brings the sentences
read with it (before and after it in its paragraph: no blank line or heading between;
in a list, in its own item, as each item makes its own point)
that score at least :data:`NEIGHBOUR_FLOOR` of the best; a lead-in ending in ``:``
brings the sentence after it in its paragraph, and a lead-in whose list follows after a
blank line ("choose one that:", then the items) brings the items that score at least
:data:`NEIGHBOUR_FLOOR` of the best, or else its best item: the lead-in alone says
nothing. A lead-in to a code block or table ("Remove old bundles from the Hub shell:")
carries that block's terms, so a question about ``hubctl diag purge`` finds the sentence
that says what the command is for, shown with the code line that holds the most of the
question's weight beyond the lead-in's own words, the line it was found by (``hubctl
diag purge --older-than 14d``); as the rest of the code is not quoted, a lead-in to code
brings the prose right after the code block, in its section, which says what the command
does or shows ("The file lists each disconnect ..."), unless that is a new list item
(the next step). A question that asks for a procedure ("how do I ...", "how to ...") is
answered by steps, and a step of a numbered list means little without the steps before
it ("Release the button."), so there a quoted step (or a sentence of one) brings the
steps of its list before it, from the first (the list read without a blank line). Rows
and comments are read alone.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from twokeys.errors import ConfigError
from twokeys.rag.answer_types import states, value_type
from twokeys.rag.kinds import numbered
from twokeys.rag.packing import Block, PackedContext
from twokeys.text.sentences import is_fence, split_sentences
from twokeys.types import HEADING_SEPARATOR

Terms = Callable[[str], list[str]]
Similarity = Callable[[str, Sequence[str]], list[float]]
"""``similarity(query, sentences)``: the cosine of the query to each sentence."""

RELATIVE_FLOOR = 0.5  # a further quote scores at least half the best one (lexical only)
DENSE_FLOOR = 0.8  # with the dense model: at least this share of the best score (dev)
LEXICAL_SHARE = 0.6  # what the lexical share adds to the cosine (set on the dev split)
NEIGHBOUR_FLOOR = 0.6  # a sentence next to a quote, in its paragraph, joins at this share
STEPS_QUOTED = 6  # units of a procedure's numbered steps quoted after the prose naming it
HEADING_SHARE = 0.5  # a query word in the sentence's headings counts half (set on dev)
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")
_STEP_MARKER = re.compile(r"^(\d{1,9})[.)]\s+")
# a question that asks for a procedure: "how do I ...", "how can we ...", "how to ..."
_PROCEDURE = re.compile(
    r"^\W*how\s+(?:(?:do|can|should|could|would|must|shall)\s+(?:i|we|you)|to)\b", re.IGNORECASE
)
# a sentence about the document itself: "This page explains ...", "This guide covers ..."
_ABOUT_THE_PAGE = re.compile(
    r"This (?:page|guide|article|document|section|policy|changelog|chapter|FAQ|glossary)\b"
)
_RULE_CELL = re.compile(r":?-{3,}:?")
_COMMENT = re.compile(r"^\s*(?:#(?!!)|//)\s*(\S.*?)\s*$")

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


Kind = Literal["sentence", "item", "row", "comment"]


@dataclass(frozen=True, slots=True)
class _Sentence:
    """A quotable unit: a prose sentence, a list item, a table row, a code comment."""

    number: int  # block
    queries: frozenset[int]  # sub-queries whose blocks hold it
    section: str  # the heading right above it: what a row, item or comment is about
    text: str  # as quoted: a row as "Header: cell; ...", a comment with its code line
    heading: str  # the heading path of the chunk it comes from
    paragraph: int  # sentences with the same number are read together (no blank line, heading)
    introduces: str = ""  # a lead-in's code or table, a comment's code: terms it carries
    kind: Kind = "sentence"
    table: int = 0  # a row's table (numbered from 1 across the context)
    own: str = ""  # when not ``text``, the words that are its own: a row's cells, a comment
    header: str = ""  # a row's header cells: they name its cells, weighed like a heading
    after_code: bool = False  # prose right after the code a lead-in introduced (no new item)
    step: int = 0  # the number of the numbered list item it is (or continues on its line)
    item_no: int = 0  # the list item it is or continues (numbered across the context), 0: none
    columns: tuple[tuple[str, str], ...] = ()  # a row's (header, cell) pairs, under a header
    chunk: str = ""  # the id of the chunk it comes from

    @property
    def words(self) -> str:
        return self.own or self.text

    @property
    def read(self) -> str:
        """What the dense model reads: a row with its header, after its heading (as it is
        shown), a comment without its code."""
        if self.kind != "row":
            return self.words
        return f"{self.section} — {self.text}" if self.section else self.text

    @property
    def framed(self) -> str:
        """A prose sentence as the answer to its heading (the section's question or
        topic); any other unit as :attr:`read`."""
        if self.kind == "sentence" and self.section:
            return f"{self.section} — {self.words}"
        return self.read

    @property
    def item(self) -> bool:
        return self.kind == "item"


def _sentences(context: PackedContext) -> list[_Sentence]:
    """The quotable units of the context's blocks, in reading order (module docstring)."""
    out: list[_Sentence] = []
    paragraph = tables = items = 0
    for block in context.blocks:
        paragraph += 1
        spans = split_sentences(block.text)
        pieces = [block.text[a:b] for a, b in spans]
        previous_end = 0
        heading_line: tuple[int, str] | None = None  # the last heading line read, and where
        header: list[str] | None = None  # the header cells of the table being read
        in_table = False
        after_code = -1  # the piece after the code block the last lead-in introduced
        step = 0  # the number of the numbered item the last piece was or continued
        item_no = 0  # the list item the last piece was or continued
        for k, ((a, b), piece) in enumerate(zip(spans, pieces, strict=True)):
            gap = block.text[previous_end:a]
            if "\n\n" in gap.replace(" ", ""):
                paragraph += 1
            previous_end = b
            lead = piece.lstrip()
            where = (block.number, frozenset(block.queries), _section(block, a, heading_line))
            if lead.startswith("|"):
                if not in_table:
                    in_table, tables = True, tables + 1
                cells = _cells(lead)
                following = pieces[k + 1].lstrip() if k + 1 < len(pieces) else ""
                if following.startswith("|") and _is_rule(_cells(following)):
                    header = cells  # the header row: it names the cells of the rows below
                elif not _is_rule(cells) and len((row := _row(cells, header)).split()) >= 3:
                    paragraph += 1  # a row is read alone
                    at = block.heading_at(a)
                    plain, named = _row(cells, None), " ".join(header or ())
                    columns: tuple[tuple[str, str], ...] = ()
                    if header is not None and len(header) == len(cells):
                        columns = tuple(zip(header, cells, strict=True))
                    sentence = _Sentence(*where, row, at, paragraph, "", "row", tables, plain)
                    chunk = block.chunk_at(a)
                    out.append(replace(sentence, header=named, columns=columns, chunk=chunk))
                    paragraph += 1
                continue
            header, in_table = None, False
            if is_fence(lead):
                for offset, comment, code in _comments(piece):
                    paragraph += 1  # a comment is read alone
                    at = block.heading_at(a + offset)
                    quoted = f"{comment}: `{code.partition(chr(10))[0]}`" if code else comment
                    out.append(
                        _Sentence(
                            *where,
                            quoted,
                            at,
                            paragraph,
                            code,
                            "comment",
                            own=comment,
                            chunk=block.chunk_at(a + offset),
                        )
                    )
                    paragraph += 1
                continue
            if not _quotable(piece):
                if lead.startswith("#"):
                    paragraph += 1  # a heading closes the paragraph before it
                    heading_line = (a, lead.lstrip("#").strip())
                continue
            introduces = ""
            shown: list[str] = []
            if piece.rstrip().endswith(":"):
                # the unquotable pieces it leads into: a code block, table rows
                for following in pieces[k + 1 :]:
                    if _quotable(following) or following.lstrip().startswith("#"):
                        break
                    shown.append(following)
                introduces = "\n".join(shown)
            kind: Kind = "item" if _LIST_MARKER.match(lead) else "sentence"
            text = _LIST_MARKER.sub("", " ".join(piece.split()))
            # a new unindented line that is no item ends the item (and the step) before it
            new_line = "\n" in gap and not gap.endswith((" ", "\t"))
            numbered = _STEP_MARKER.match(lead)
            if numbered is not None:
                step = int(numbered.group(1))
            elif kind == "item" or new_line:
                step = 0
            if kind == "item":
                items += 1
                item_no = items
            elif new_line:
                item_no = 0
            out.append(
                _Sentence(
                    *where,
                    text,
                    block.heading_at(a),
                    paragraph,
                    introduces,
                    kind,
                    after_code=k == after_code and kind == "sentence",
                    step=step,
                    item_no=item_no,
                    chunk=block.chunk_at(a),
                )
            )
            if any(is_fence(p.lstrip()) for p in shown):
                after_code = k + 1 + len(shown)
    return out


def _section(block: Block, offset: int, heading_line: tuple[int, str] | None) -> str:
    """The innermost heading above character ``offset`` of the block: a heading line of
    its text, unless a chunk (whose heading is in its path, not its text) starts after it."""
    start = max((s for s, _ in block.parts if s <= offset), default=0)
    if heading_line is not None and heading_line[0] >= start:
        return heading_line[1]
    return block.heading_at(offset).rpartition(HEADING_SEPARATOR)[2]


def _cells(row: str) -> list[str]:
    """The cells of a Markdown table row, ``| a | b |``, stripped."""
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [" ".join(cell.split()) for cell in body.split("|")]


def _is_rule(cells: Sequence[str]) -> bool:
    """Whether a row is the ``| --- | :-: |`` line under a table's header."""
    return all(_RULE_CELL.fullmatch(c) for c in cells)


def _row(cells: Sequence[str], header: Sequence[str] | None) -> str:
    """A table row as a sentence: each cell after its column's header, ``Code: 4;
    Meaning: Hub unreachable`` (the cells alone when the block holds no header)."""
    if header is None or len(header) != len(cells):
        return "; ".join(c for c in cells if c)
    return "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c)


def _code_line(s: _Sentence, weight: dict[str, float], own: set[str], text_terms: Terms) -> str:
    """The line of the code a lead-in introduces that holds the most of the query's
    weight beyond the lead-in's own words (the first such line on a tie), or ``""``
    when no line holds any: the line the lead-in was found by, shown after it."""
    if not any(is_fence(p.lstrip()) for p in s.introduces.split("\n")):
        return ""
    best, shown = 0.0, ""
    for line in s.introduces.split("\n"):
        code = line.strip()
        if not code or is_fence(code) or _COMMENT.match(code) or code.startswith("|"):
            continue
        held = sum(weight.get(t, 0.0) for t in set(text_terms(code)) - own)
        if held > best:
            best, shown = held, code
    return shown


def _comments(fence: str) -> list[tuple[int, str, str]]:
    """The whole-line comments of a fenced code block (``# ...``, ``// ...``; not ``#!``),
    each with its offset in ``fence``, its text, and the code lines after it up to the
    next comment or blank line (what it describes)."""
    out: list[tuple[int, str, str]] = []
    lines = fence.split("\n")
    offset = len(lines[0]) + 1
    starts = []
    for line in lines[1:]:
        starts.append(offset)
        offset += len(line) + 1
    body = list(zip(starts, lines[1:], strict=True))
    for i, (at, line) in enumerate(body):
        m = _COMMENT.match(line)
        if m is None or len(m.group(1).split()) < 3:
            continue
        code = []
        for _, after in body[i + 1 :]:
            if not after.strip() or _COMMENT.match(after) or is_fence(after):
                break
            code.append(after.strip())
        out.append((at, m.group(1).rstrip(":"), "\n".join(code)))
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
    evidence: Sequence[Collection[str]] | None = None,
) -> Extract:
    """Quote the sentences that best answer each of ``queries`` (see the module docstring).

    ``unanswered`` holds the indices of sub-queries the sources were judged not to
    answer; they get no quote, only a note. ``evidence``: for each sub-query, the ids of
    the chunks it quotes from (default: every chunk of the blocks it brought)."""
    if per_query < 1:
        raise ConfigError(f"per_query: must be >= 1, got {per_query}")
    sentences = _sentences(context)
    terms = [set(text_terms(s.words)) | set(text_terms(s.introduces)) for s in sentences]
    # the words of its headings (and a row's header) count too, at HEADING_SHARE: a page
    # about lumatek-cli is about it in every sentence, whether or not the sentence says so
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
        ranked = _numbered_rows_first(ranked, sentences, query, query_terms)
        ranked = _one_row_per_table(ranked, sentences)
        if not ranked:
            continue
        best = ranked[0][0]
        floor = (DENSE_FLOOR if similarity is not None else RELATIVE_FLOOR) * best
        scores = dict.fromkeys(own, 0.0) | {i: score for score, i in ranked}
        asked = value_type(query)
        stating = {i for i in own if states(asked, sentences[i].text)} if asked else set()
        # a question for a value is answered by a unit that states one: those close enough
        # to the best are quoted first
        ranked = sorted(ranked, key=lambda r: not (r[0] >= floor and r[1] in stating))
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
                and (
                    (scores[j] >= NEIGHBOUR_FLOOR * best and _same_item(sentences, si, j))
                    or _introduces(sentences, si, j)
                )
            ]
            read_with += [j for j in _after_code(sentences, si) if j in scores and j not in chosen]
            if _PROCEDURE.match(query):
                steps = _steps_before(sentences, si) + _steps_after(sentences, si)
                read_with += [j for j in steps if j in scores and j not in chosen]
            items = [j for j in _list_after(sentences, si) if j in scores and j not in chosen]
            if items:
                strong = [j for j in items if scores[j] >= NEIGHBOUR_FLOOR * best]
                read_with += strong or [max(items, key=lambda j: (scores[j], -j))]
            chosen.extend(sorted({si, *read_with}))
        if stating and not stating.intersection(chosen):
            # the question asks for a value the quotes do not give: its best unit that does
            chosen.extend(itertools.islice((si for _, si in ranked if si in stating), 1))
        for si in chosen:
            seen.add(si)
            s = sentences[si]
            line = _code_line(s, weight, set(text_terms(s.words)), text_terms)
            text = f"{s.text} `{line}`" if line else s.text
            quotes.append(Quote(text, s.number, qi, s.heading, _label(s)))
    return Extract(tuple(quotes), _render(quotes, queries, unanswered))


def _numbered_rows_first(
    ranked: Sequence[tuple[float, int]],
    sentences: Sequence[_Sentence],
    query: str,
    query_terms: Terms,
) -> list[tuple[float, int]]:
    """``ranked`` with the row a question names by number ("exit code 3": the row whose
    "Code" cell is 3, :func:`~twokeys.rag.kinds.numbered`) in its table's best place: the
    dense model and shared words tell one row of a table from another by its other
    cells, which the question does not give."""
    asked = {(n.term, str(n.number)) for n in numbered(query, query_terms)}
    named = {i for _, i in ranked if asked and _names_row(sentences[i], asked, query_terms)}
    out = list(ranked)
    for table in {sentences[i].table for i in named}:
        places = [k for k, (_, i) in enumerate(out) if sentences[i].table == table]
        rows = sorted((out[k][1] for k in places), key=lambda i: i not in named)
        for k, i in zip(places, rows, strict=True):
            out[k] = (out[k][0], i)  # the place keeps its score: the ranking is unchanged
    return out


def _names_row(row: _Sentence, asked: set[tuple[str, str]], query_terms: Terms) -> bool:
    """Whether ``row`` has a cell ``asked`` names: the number under a header that is the
    asked word (``Code`` 3)."""
    for head, cell in row.columns:
        terms = query_terms(head)
        if len(terms) == 1 and (terms[0], cell.strip()) in asked:
            return True
    return False


def _one_row_per_table(
    ranked: Sequence[tuple[float, int]], sentences: Sequence[_Sentence]
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


def _same_item(sentences: Sequence[_Sentence], i: int, j: int) -> bool:
    """Units ``i`` and ``j`` belong to the same list item, or neither to one."""
    return sentences[i].item_no == sentences[j].item_no


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


def _after_code(sentences: Sequence[_Sentence], i: int) -> list[int]:
    """The first sentence after the code block a lead-in ``i`` introduces (past the
    code's comments), when prose follows the code in the same section: what the
    command does or shows is said there, as the code itself is not quoted."""
    if not sentences[i].introduces:
        return []
    j = i + 1
    while j < len(sentences) and sentences[j].kind == "comment":
        j += 1
    after = j < len(sentences) and sentences[j].after_code
    return [j] if after and sentences[j].number == sentences[i].number else []


def _steps_before(sentences: Sequence[_Sentence], i: int) -> list[int]:
    """The steps of the numbered list before unit ``i`` (a step or a sentence of one, the
    list read without a blank line), from its first step: a step is done after them."""
    out: list[int] = []
    step = sentences[i].step
    j = i - 1
    while step and j >= 0:
        s = sentences[j]
        if not _same_paragraph(s, sentences[i]):
            break
        if not 0 < s.step <= step:
            break
        out.append(j)
        step = s.step
        j -= 1
    return out


def _steps_after(sentences: Sequence[_Sentence], i: int) -> list[int]:
    """The steps of the numbered list right after the paragraph of prose sentence ``i``
    (from step 1, in its section, at most :data:`STEPS_QUOTED` units): the procedure
    the paragraph describes ("A network reset removes saved Wi-Fi details only. ...
    1. Press and hold the button ...")."""
    first = sentences[i]
    if first.kind != "sentence" or first.step or first.item_no:
        return []
    j = i + 1
    while j < len(sentences) and _same_paragraph(sentences[j], first):
        j += 1
    out: list[int] = []
    while j < len(sentences) and len(out) < STEPS_QUOTED:
        s = sentences[j]
        if s.number != first.number or s.paragraph != first.paragraph + 1 or not s.step:
            break
        if not out and s.step != 1:
            break
        out.append(j)
        j += 1
    return out


def _same_paragraph(a: _Sentence, b: _Sentence) -> bool:
    return a.number == b.number and a.paragraph == b.paragraph


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


def _label(s: _Sentence) -> str:
    """The heading shown before a quote that is a fragment of a structure (a table row, a
    list item, a code comment), unless the quote already says it; prose stands alone."""
    if s.kind == "sentence" or not s.section:
        return ""
    if " ".join(s.section.lower().split()) in " ".join(s.text.lower().split()):
        return ""
    return s.section


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
        lines.extend(
            f"- {q.label} — {q.text} [{q.number}]" if q.label else f"- {q.text} [{q.number}]"
            for q in mine
        )
    return "\n".join(lines)
