"""The quotable units of a packed context, in reading order.

A block's text is read into units (:func:`units`): prose sentences, list items, table
rows with each cell after its column's header (``Code: 4; Meaning: Server
unreachable``). Each unit knows its block, the heading above it, its paragraph and list item (what
is read with it, :func:`neighbours`), and the code or table a lead-in (ending in ``:``)
introduces, whose terms it carries. Headings are never units; they are what units are
about. :mod:`twokeys.rag.extractive` ranks and quotes them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from twokeys.rag.packing import Block, PackedContext
from twokeys.text.sentences import split_sentences
from twokeys.types import HEADING_SEPARATOR

_LIST_MARKER = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")
_RULE_CELL = re.compile(r":?-{3,}:?")


Kind = Literal["sentence", "item", "row"]


@dataclass(frozen=True, slots=True)
class Unit:
    """A quotable unit: a prose sentence, a list item, a table row."""

    number: int  # block
    queries: frozenset[int]  # sub-queries whose blocks hold it
    section: str  # the heading right above it: what a row or item is about
    text: str  # as quoted: a row as "Header: cell; ..."
    heading: str  # the heading path of the chunk it comes from
    paragraph: int  # sentences with the same number are read together (no blank line, heading)
    introduces: str = ""  # a lead-in's code or table: terms it carries
    kind: Kind = "sentence"
    own: str = ""  # when not ``text``, the words that are its own: a row's cells
    header: str = ""  # a row's header cells: they name its cells, weighed like a heading
    item_no: int = 0  # the list item it is or continues (numbered across the context), 0: none
    chunk: str = ""  # the id of the chunk it comes from

    @property
    def words(self) -> str:
        return self.own or self.text

    @property
    def read(self) -> str:
        """What the dense model reads: a row with its header, after its heading (as it is
        shown)."""
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


def units(context: PackedContext) -> list[Unit]:
    """The quotable units of the context's blocks, in reading order (module docstring)."""
    out: list[Unit] = []
    paragraph = items = 0
    for block in context.blocks:
        paragraph += 1
        spans = split_sentences(block.text)
        pieces = [block.text[a:b] for a, b in spans]
        previous_end = 0
        heading_line: tuple[int, str] | None = None  # the last heading line read, and where
        header: list[str] | None = None  # the header cells of the table being read
        item_no = 0  # the list item the last piece was or continued
        for k, ((a, b), piece) in enumerate(zip(spans, pieces, strict=True)):
            gap = block.text[previous_end:a]
            if "\n\n" in gap.replace(" ", ""):
                paragraph += 1
            previous_end = b
            lead = piece.lstrip()
            where = (block.number, frozenset(block.queries), _section(block, a, heading_line))
            if lead.startswith("|"):
                cells = _cells(lead)
                following = pieces[k + 1].lstrip() if k + 1 < len(pieces) else ""
                if following.startswith("|") and _is_rule(_cells(following)):
                    header = cells  # the header row: it names the cells of the rows below
                elif not _is_rule(cells) and len((row := _row(cells, header)).split()) >= 3:
                    paragraph += 1  # a row is read alone
                    at, chunk = block.heading_at(a), block.chunk_at(a)
                    plain, named = _row(cells, None), " ".join(header or ())
                    out.append(Unit(*where, row, at, paragraph, "", "row", plain, named, 0, chunk))
                    paragraph += 1
                continue
            header = None
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
                    item_no=item_no,
                    chunk=block.chunk_at(a),
                )
            )
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


def neighbours(sentences: Sequence[Unit], i: int) -> list[int]:
    """The units read together with unit ``i``: the one before and after it in the same
    paragraph and list item."""
    return [
        j
        for j in (i - 1, i + 1)
        if 0 <= j < len(sentences)
        and sentences[j].paragraph == sentences[i].paragraph
        and sentences[j].item_no == sentences[i].item_no
    ]


def quotable(sentence: str) -> bool:
    s = sentence.lstrip()
    return len(s.split()) >= 3 and not s.startswith(("#", "```", "~~~", "|"))
