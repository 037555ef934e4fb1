"""The quotable units of a packed context, in reading order, and which units are read
together.

A block's text is read into units (:func:`units`):

* prose sentences and list items (a list item may be a numbered step);
* table rows, each cell after its column's header (``Code: 4; Meaning: Server
  unreachable``): the header says what the cells mean;
* whole-line comments of a fenced code block (``# Verify a downloaded manifest ...``),
  quoted with the code line after them.

Each unit knows its block, the heading right above it, its paragraph (no blank line or
heading between), its list item and step number, its table, and the code or table a
lead-in (a sentence ending in ``:``) introduces. The reading helpers say what is read
with a unit: its neighbours in the paragraph (:func:`neighbours`), the items of the list
a lead-in opens (:func:`list_after`), the prose after the code a lead-in introduces
(:func:`after_code`), and the steps of a numbered list before a step or after the prose
naming the procedure (:func:`steps_before`, :func:`steps_after`). Headings are never
units; they are what units are about. :mod:`twokeys.rag.extractive` ranks and quotes them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from twokeys.rag.packing import Block, PackedContext
from twokeys.text.sentences import is_fence, split_sentences
from twokeys.types import HEADING_SEPARATOR

STEPS_QUOTED = 6  # units of a procedure's numbered steps quoted after the prose naming it
_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")
_STEP_MARKER = re.compile(r"^(\d{1,9})[.)]\s+")
_RULE_CELL = re.compile(r":?-{3,}:?")
COMMENT = re.compile(r"^\s*(?:#(?!!)|//)\s*(\S.*?)\s*$")  # a whole-line code comment


Kind = Literal["sentence", "item", "row", "comment"]


@dataclass(frozen=True, slots=True)
class Unit:
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


def units(context: PackedContext) -> list[Unit]:
    """The quotable units of the context's blocks, in reading order (module docstring)."""
    out: list[Unit] = []
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
                    sentence = Unit(*where, row, at, paragraph, "", "row", tables, plain)
                    chunk = block.chunk_at(a)
                    out.append(replace(sentence, header=named, chunk=chunk))
                    paragraph += 1
                continue
            header, in_table = None, False
            if is_fence(lead):
                for offset, comment, code in _comments(piece):
                    paragraph += 1  # a comment is read alone
                    at = block.heading_at(a + offset)
                    quoted = f"{comment}: `{code.partition(chr(10))[0]}`" if code else comment
                    out.append(
                        Unit(
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
            if not quotable(piece):
                if lead.startswith("#"):
                    paragraph += 1  # a heading closes the paragraph before it
                    heading_line = (a, lead.lstrip("#").strip())
                continue
            introduces = ""
            shown: list[str] = []
            if piece.rstrip().endswith(":"):
                # the unquotable pieces it leads into: a code block, table rows
                for following in pieces[k + 1 :]:
                    if quotable(following) or following.lstrip().startswith("#"):
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
                Unit(
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
    Meaning: Server unreachable`` (the cells alone when the block holds no header)."""
    if header is None or len(header) != len(cells):
        return "; ".join(c for c in cells if c)
    return "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c)


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
        m = COMMENT.match(line)
        if m is None or len(m.group(1).split()) < 3:
            continue
        code = []
        for _, after in body[i + 1 :]:
            if not after.strip() or COMMENT.match(after) or is_fence(after):
                break
            code.append(after.strip())
        out.append((at, m.group(1).rstrip(":"), "\n".join(code)))
    return out


def same_item(sentences: Sequence[Unit], i: int, j: int) -> bool:
    """Units ``i`` and ``j`` belong to the same list item, or neither to one."""
    return sentences[i].item_no == sentences[j].item_no


def neighbours(sentences: Sequence[Unit], i: int) -> list[int]:
    """The sentences read together with sentence ``i``: the one before and after it in
    the same paragraph."""
    return [
        j
        for j in (i - 1, i + 1)
        if 0 <= j < len(sentences) and sentences[j].paragraph == sentences[i].paragraph
    ]


def list_after(sentences: Sequence[Unit], i: int) -> list[int]:
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


def after_code(sentences: Sequence[Unit], i: int) -> list[int]:
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


def steps_before(sentences: Sequence[Unit], i: int) -> list[int]:
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


def steps_after(sentences: Sequence[Unit], i: int) -> list[int]:
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


def _same_paragraph(a: Unit, b: Unit) -> bool:
    return a.number == b.number and a.paragraph == b.paragraph


def introduces(sentences: Sequence[Unit], i: int, j: int) -> bool:
    """Sentence ``i`` is a lead-in (ends in ``:``) to prose and ``j`` the sentence after it."""
    lead_in = sentences[i]
    return j == i + 1 and lead_in.text.endswith(":") and not lead_in.introduces


def quotable(sentence: str) -> bool:
    s = sentence.lstrip()
    return len(s.split()) >= 3 and not s.startswith(("#", "```", "~~~", "|"))
