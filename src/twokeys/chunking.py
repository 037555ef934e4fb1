"""Chunking: split a :class:`Document` into :class:`Chunk` passages under a token cap.

Markdown (and HTML, which arrives as light Markdown) is read by markdown-it-py
(CommonMark and tables; block structure only) into *blocks*: paragraphs and block
quotes, list runs, tables, HTML blocks, indented and fenced code blocks, front matter,
each the lines of its token's line map, grouped into *sections* by ATX (``#``..``######``)
and setext (``===``/``---``) headings. Every other kind (``text``, ``rst``, ``jsonl``) is
one untitled section of blank-line-separated paragraphs.

Heading lines are **not** part of any chunk body: a heading starts a section and lives
in ``Chunk.heading_path`` (a heading of level n replaces every level >= n), and
:func:`~twokeys.text.passages.indexed_text` puts it back, on its own line, in front of
the body. The cap ``max_tokens`` bounds that heading line (``" > ".join(heading_path)``,
or the document title for chunks outside any heading) plus the body. Chunks never
cross a heading.
A document of headings only is chunked as plain text (its heading lines are the body),
and a document with a title but an empty text is one chunk with an empty body under
the title as its heading (its indexed text is the title), so no document with
something to search is left without a chunk.

Within a section blocks are packed greedily. A block too big on its own is cut into
pieces: prose and list items at sentence ends (:func:`twokeys.text.sentences.sentence_spans`),
tables and front matter at lines, code at lines only; a sentence or row still too big
is cut at whitespace, so ``E-4821`` or
``/etc/grub.d/40_custom`` stay whole. Only a word bigger than the cap on its own (a
base64 blob) is cut inside, into equal slices that fit. A chunk exceeds the cap only
when one code line is bigger than it (or when the heading line alone takes over half
the cap: the body always keeps half of it). Whatever the tokens, a chunk body holds at
most :attr:`ChunkerConfig.max_chars` characters: a longer code line, or a 2 MB line of
punctuation that the approximate counter sees as one token, is cut to fit.

Each chunk after the first in a section starts with whole trailing sentences (or code
lines) of the previous chunk, at most ``overlap_tokens`` of them. A chunk with fewer
than ``min_tokens`` of its own tokens is not closed before a block that must be cut:
that block's first pieces are merged into it instead.

A document whose reader located spans of its text (:attr:`Document.segments`: PDF
pages, slides, notebook cells) is chunked segment by segment: a chunk never crosses a
segment's edge and takes that segment's :class:`~twokeys.types.Locator`; a segment's
``section`` (a PDF outline path, a Word heading path, joined by ``" > "``) heads its
chunks' heading path. Runs of small ``joinable`` segments of one section (together at
most about one chunk of text, :func:`join_chars`) are chunked as one, and a chunk over
several of them gets a locator spanning them (``pp. 12-13``). A document without segments is chunked
as above, its chunks without a locator.

Token counts come from a batched :data:`TokenCounter`. Each sentence, line and (for
over-long sentences) word is counted once, in at most two calls per document (three
when a word must be sliced), and the count of a span is the sum of its pieces' counts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import cache
from itertools import islice
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

from twokeys.errors import ConfigError
from twokeys.text.passages import heading_line
from twokeys.text.passages import indexed_text as indexed_text  # importable from here too
from twokeys.text.sentences import sentence_spans, trim_span
from twokeys.text.tokens import TokenCounter as TokenCounter  # importable from here too
from twokeys.text.tokens import approx_span_counts
from twokeys.text.tokens import approx_token_counter as approx_token_counter
from twokeys.types import HEADING_SEPARATOR, Chunk, Document, Locator, Segment

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_kernel: ModuleType | None
try:  # the compiled packing (``text/_kernel.c``); the same chunks without it
    from twokeys.text import _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None
#: whether sections are packed by the compiled kernel where it is built (tests compare)
compiled_packing = True

MARKDOWN_KINDS = frozenset({"markdown", "html", "notebook", "docx"})
CHARS_PER_TOKEN = 16  # a generous bound: English runs about 4-5 characters a token
MIN_MAX_CHARS = 4000


@dataclass(frozen=True)
class ChunkerConfig:
    """Chunk size parameters, in tokens of the :data:`TokenCounter` in use."""

    max_tokens: int = 250  # cap on tokens of (heading line + chunk body)
    overlap_tokens: int = 32  # trailing sentences repeated at the start of the next chunk
    min_tokens: int = 24  # a smaller open chunk absorbs the start of a block that must be cut
    page_tokens: int = 0  # max_tokens for a PDF's pages, 0: as the rest (:meth:`for_pages`)

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"chunker.{f.name}: expected int, got {value!r}")
        if self.max_tokens < 16:
            raise ConfigError(f"chunker.max_tokens: must be at least 16, got {self.max_tokens}")
        if self.overlap_tokens < 0 or 2 * self.overlap_tokens >= self.max_tokens:
            raise ConfigError(
                f"chunker.overlap_tokens: must be >= 0 and < max_tokens / 2 "
                f"({self.max_tokens / 2:g}), got {self.overlap_tokens}"
            )
        if self.min_tokens < 0:
            raise ConfigError(f"chunker.min_tokens: must be >= 0, got {self.min_tokens}")
        if self.page_tokens != 0 and self.page_tokens < 16:
            raise ConfigError(
                f"chunker.page_tokens: must be 0 (as max_tokens) or at least 16, "
                f"got {self.page_tokens}"
            )

    def for_pages(self) -> ChunkerConfig:
        """The settings a PDF's pages are chunked with: ``page_tokens`` as the cap (at
        most ``max_tokens``; 0 keeps ``max_tokens``), the overlap and minimum scaled
        down with it.

        Not the default, by measurement. On the PDF page benchmark's page texts
        (``benchmarks/pdf_pages.py``, train split, a page scored by its best chunk) the
        dense model read short units better: nDCG@10 identifier / paraphrase 0.848 /
        0.684 from chunks of 250 tokens, 0.838 / 0.726 from 128, 0.879 / 0.761 from
        64, and BM25 0.960 / 0.817 from 250, 0.966 / 0.839 from 64. But with the PDFs
        indexed by the reader itself (section paths heading every chunk, small pages
        joined; ``pdf_pages native``), 64-token pages gave the hybrid 0.960 / 0.845 on
        train against 0.938 / 0.853 from 250 and 0.879 / 0.794 on test against 0.903 /
        0.842. With 104 train queries (58 more written) and the hybrid's verbatim rule:
        0.965 / 0.831 from 64 against 0.962 / 0.859 from 250 (BM25 from 64: 0.986 /
        0.816). With 296 queries (146 train): 0.958 / 0.833 from 128 against 0.956 /
        0.837 from 250 on train; fused by page, 128 was train's best (0.964 / 0.856) and
        on test below the default (0.928 / 0.790 against 0.935 / 0.808).
        """
        if self.page_tokens == 0:
            return self
        cap = min(self.page_tokens, self.max_tokens)
        if cap == self.max_tokens:
            return self
        return replace(
            self,
            max_tokens=cap,
            overlap_tokens=min(self.overlap_tokens, cap // 4),
            min_tokens=min(self.min_tokens, cap // 5),
        )

    @property
    def max_chars(self) -> int:
        """The cap on a chunk body in characters (whatever the tokens): a word or code
        line longer than it is cut, so no chunk holds a 2 MB line."""
        return max(MIN_MAX_CHARS, CHARS_PER_TOKEN * self.max_tokens)

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> ChunkerConfig:
        """Build from a mapping such as a manifest entry; unknown keys are an error."""
        known = [f.name for f in fields(cls)]
        values: dict[str, int] = {}
        for key, value in d.items():
            if key not in known:
                raise ConfigError(f"chunker: unknown field {key!r} (known: {', '.join(known)})")
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"chunker.{key}: expected int, got {value!r}")
            values[key] = value
        return cls(**values)


def chunk_document(
    doc: Document, count_tokens: TokenCounter, config: ChunkerConfig = ChunkerConfig()
) -> list[Chunk]:
    """Split ``doc`` into chunks in reading order (see the module docstring for the rules)."""
    return chunk_documents([doc], count_tokens, config)[0]


def has_text(doc: Document) -> bool:
    """Whether ``doc`` has something to index, so that it gets at least one chunk."""
    return bool(doc.text.strip() or doc.title.strip())


def chunk_documents(
    docs: Sequence[Document], count_tokens: TokenCounter, config: ChunkerConfig = ChunkerConfig()
) -> list[list[Chunk]]:
    """The chunks of each of ``docs``, as :func:`chunk_document` gives them.

    The sentences and lines of all the documents are counted in one ``count_tokens``
    call (a tokenizer such as the default encoder's then spreads a long batch over every
    core), so a batch of documents costs about one call instead of one per document.
    The approximate counter reads each document's pieces in place in its text instead.
    """
    configs = [config.for_pages() if doc.kind == "pdf" else config for doc in docs]
    plans = [_plan(doc, cfg) for doc, cfg in zip(docs, configs, strict=True)]
    counted = [(doc, plan) for doc, plan in zip(docs, plans, strict=True) if plan is not None]
    if count_tokens is approx_token_counter:
        all_counts = [
            approx_token_counter(plan.headings) + approx_span_counts(doc.text, plan.pieces)
            for doc, plan in counted
        ]
    else:
        texts = [t for doc, plan in counted for t in plan.strings(doc.text)]
        counts = iter(_count(count_tokens, texts))
        all_counts = [
            list(islice(counts, len(plan.headings) + len(plan.pieces))) for _, plan in counted
        ]
    doc_counts = iter(all_counts)
    out: list[list[Chunk]] = []
    for doc, plan, cfg in zip(docs, plans, configs, strict=True):
        if plan is None:
            title = " ".join(doc.title.split())
            # a record with a title and no body (BEIR corpora have them): the title is its
            # heading, so it is indexed (indexed_text) and shown wherever headings are
            out.append([Chunk(doc.id, 0, "", 0, 0, (title,))] if title else [])
            continue
        out.append(_chunks(doc, plan, next(doc_counts), count_tokens, cfg))
    return out


@dataclass(frozen=True, slots=True)
class _Plan:
    """A document's sections, their heading lines and piece spans, and every piece's
    span in order. What is counted: the heading lines, then the pieces."""

    sections: list[_Section]
    headings: list[str]
    spans: list[list[list[tuple[int, int]]]]
    pieces: list[tuple[int, int]]
    #: the segments each section lies in (by _Section.group), for a document with segments
    groups: tuple[tuple[Segment, ...], ...] = ()

    def strings(self, text: str) -> list[str]:
        """What is counted, as strings of ``text``."""
        return self.headings + [text[a:b] for a, b in self.pieces]


def _plan(doc: Document, config: ChunkerConfig) -> _Plan | None:
    """Sections and pieces of ``doc``; None when its text is blank."""
    text = doc.text
    if not text.strip():
        return None
    if doc.segments:
        return _segmented_plan(doc, config)
    if doc.kind not in MARKDOWN_KINDS and "\n" not in text:
        # one paragraph (most records of a JSONL corpus): what the lines below give it
        start, end = trim_span(text, 0, len(text))
        sentences = sentence_spans(text, start, end)
        section = _Section((), (_Block(start, end, "prose"),))
        return _Plan([section], [heading_line((), doc.title)], [[sentences]], sentences)
    sections = _markdown_sections(text) if doc.kind in MARKDOWN_KINDS else _plain_sections(text)
    if not any(s.blocks for s in sections):  # headings only: their lines are the text
        sections = _plain_sections(text)
    heading_lines = [heading_line(s.path, doc.title) for s in sections]
    spans = [[_piece_spans(text, block) for block in s.blocks] for s in sections]
    pieces = [span for sec in spans for blk in sec for span in blk]
    return _Plan(sections, heading_lines, spans, pieces)


def _chunks(
    doc: Document,
    plan: _Plan,
    counts: list[int],
    count_tokens: TokenCounter,
    config: ChunkerConfig,
) -> list[Chunk]:
    text = doc.text
    sections = plan.sections
    budgets = [max(config.max_tokens - n, config.max_tokens // 2) for n in counts[: len(sections)]]
    if _kernel is not None and compiled_packing:
        packed = _kernel.pack(
            plan.pieces,
            counts[len(sections) :],
            [len(block) for section in plan.spans for block in section],
            [block.kind == "code" for section in sections for block in section.blocks],
            [len(section.blocks) for section in sections],
            budgets,
            config.max_chars,
            config.overlap_tokens,
            config.min_tokens,
        )
        if packed is not None:  # else a piece must be cut: below
            paths = [section.path for section in sections]
            if plan.groups:
                return [
                    Chunk(
                        doc.id, i, text[a:b], a, b, paths[k], _locate(plan, sections[k], a, b, text)
                    )
                    for i, (k, a, b) in enumerate(packed)
                ]
            return [
                Chunk(doc.id, i, text[start:end], start, end, paths[k])
                for i, (k, start, end) in enumerate(packed)
            ]
    it = iter(counts[len(sections) :])
    new = tuple.__new__  # _Piece(...) without the Python frame of its __new__
    pieces = [
        [[new(_Piece, (a, b, next(it), True)) for a, b in blk] for blk in sec] for sec in plan.spans
    ]
    pieces = _cut_oversized(text, sections, pieces, budgets, count_tokens, config.max_chars)

    chunks: list[Chunk] = []
    for section, blocks, budget in zip(sections, pieces, budgets, strict=True):
        for start, end in _pack(blocks, budget, config):
            locator = _locate(plan, section, start, end, text) if plan.groups else None
            chunks.append(
                Chunk(doc.id, len(chunks), text[start:end], start, end, section.path, locator)
            )
    return chunks


def _count(count_tokens: TokenCounter, texts: list[str]) -> list[int]:
    """Count a batch, skipping empty strings (0 tokens) and checking the answer's length."""
    todo = texts if all(texts) else [t for t in texts if t]
    counts = list(count_tokens(todo)) if todo else []
    if len(counts) != len(todo):
        raise ValueError(f"token counter returned {len(counts)} counts for {len(todo)} texts")
    if todo is texts:
        return counts
    it = iter(counts)
    return [next(it) if t else 0 for t in texts]


# --- segments --------------------------------------------------------------------------


def join_chars(max_tokens: int) -> int:
    """How many characters of small ``joinable`` segments are chunked together: about
    one chunk's worth (4 characters a token)."""
    return 4 * max_tokens


def _segment_groups(doc: Document, limit: int) -> list[tuple[Segment, ...]]:
    """The document's segments in runs chunked as one (small joinable neighbours),
    with any text between or around them as segments without a locator."""
    text = doc.text
    covered: list[Segment] = []
    at = 0
    for seg in doc.segments:
        if not (at <= seg.start <= seg.end <= len(text)):
            raise ValueError(
                f"{doc.path or doc.id}: segment [{seg.start}, {seg.end}) overlaps another "
                f"or lies outside the text ({len(text)} characters)"
            )
        if text[at : seg.start].strip():
            covered.append(Segment(at, seg.start, Locator()))
        covered.append(seg)
        at = seg.end
    if text[at:].strip():
        covered.append(Segment(at, len(text), Locator()))
    groups: list[list[Segment]] = []
    for seg in covered:
        last = groups[-1] if groups else None
        if (
            last is not None
            and seg.joinable
            and last[-1].joinable
            and seg.end - last[0].start <= limit
            and _joins(last[0].locator, seg.locator)
        ):
            last.append(seg)
        else:
            groups.append([seg])
    return [tuple(g) for g in groups]


def _joins(first: Locator, other: Locator) -> bool:
    """Whether a span of the two can be said: both have pages, or both line ranges,
    in one section."""
    if first.section != other.section:
        return False
    return (first.page is not None and other.page is not None) or (
        first.line_start is not None and other.line_start is not None
    )


def _section_path(locator: Locator) -> tuple[str, ...]:
    if not locator.section:  # a code symbol (module.Class.method) heads its chunks
        return (locator.symbol,) if locator.symbol else ()
    return tuple(p for p in (x.strip() for x in locator.section.split(HEADING_SEPARATOR)) if p)


def _segmented_plan(doc: Document, config: ChunkerConfig) -> _Plan | None:
    """Sections of each run of segments (none crossing a run's edge), each headed by
    its first segment's section path."""
    text = doc.text
    groups = _segment_groups(doc, join_chars(config.max_tokens))
    sections: list[_Section] = []
    levels: list[tuple[int, str]] = []  # Markdown headings open from segment to segment
    for k, group in enumerate(groups):
        start, end = group[0].start, group[-1].end
        part = text[start:end]
        if not part.strip():
            continue
        prefix = _section_path(group[0].locator)
        if prefix:  # the reader's section path heads the segment instead
            levels = []
        if doc.kind in MARKDOWN_KINDS:
            inner = _markdown_sections(part, levels)
        else:
            inner = _plain_sections(part)
        if not any(s.blocks for s in inner):
            inner = _plain_sections(part)
        for sec in inner:
            if not sec.blocks:
                continue
            blocks = tuple(
                _Block(b.start + start, b.end + start, b.kind, b.closed) for b in sec.blocks
            )
            sections.append(_Section(prefix + sec.path, blocks, k))
    if not sections:
        return None
    heading_lines = [heading_line(s.path, doc.title) for s in sections]
    spans = [[_piece_spans(text, block) for block in s.blocks] for s in sections]
    pieces = [span for sec in spans for blk in sec for span in blk]
    return _Plan(sections, heading_lines, spans, pieces, tuple(groups))


def _locate(plan: _Plan, section: _Section, start: int, end: int, text: str) -> Locator | None:
    """The locator of a chunk ``[start, end)`` of ``section``: its segment's, or one
    spanning the segments it covers; None where the reader located nothing. A chunk of
    part of a line-located segment (a long function) gets its own lines."""
    segs = [s for s in plan.groups[section.group] if s.start < end and start < s.end]
    if not segs:
        segs = [plan.groups[section.group][0]]
    first, last = segs[0].locator, segs[-1].locator
    if len(segs) == 1 and first.line_start is not None and first.line_end is not None:
        seg = segs[0]
        body = text[start:end]
        lead = len(body) - len(body.lstrip())
        tail = max(len(body.rstrip()), lead + 1)
        line = first.line_start + text.count("\n", seg.start, start + lead)
        line_end = first.line_start + text.count("\n", seg.start, start + tail - 1)
        line = min(max(line, first.line_start), first.line_end)
        return replace(first, line_start=line, line_end=min(max(line, line_end), first.line_end))
    if len(segs) > 1:
        if first.page is not None and last.page is not None:
            page_end = last.page_end or last.page
            first = replace(first, page_end=page_end if page_end != first.page else None)
        if first.line_start is not None and last.line_start is not None:
            first = replace(first, line_end=last.line_end or last.line_start)
    return first or None


# --- blocks and sections ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Block:
    start: int
    end: int
    kind: str  # "prose", "list", "lines" (table, front matter), "code"
    closed: bool = True  # code: the closing fence is present


@dataclass(frozen=True, slots=True)
class _Section:
    path: tuple[str, ...]
    blocks: tuple[_Block, ...]
    group: int = -1  # which run of segments it lies in (_Plan.groups), -1 without segments


_FENCE_CLOSE = re.compile(r"[ \t]*(`{3,}|~{3,})[ \t]*")
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line, without its newline (``\\r\\n`` aware)."""
    out = []
    pos = 0
    for raw in text.split("\n"):
        end = pos + len(raw)
        out.append((pos, end - 1 if raw.endswith("\r") else end))
        pos = end + 1
    return out


def _plain_sections(text: str) -> list[_Section]:
    """One untitled section of blank-line-separated paragraphs."""
    if "\n" not in text:  # one line: one paragraph, or none
        start, end = trim_span(text, 0, len(text))
        return [_Section((), (_Block(start, end, "prose"),) if start < end else ())]
    lines = _lines(text)
    blocks = []
    first = -1
    for i, (s, e) in enumerate([*lines, (0, 0)]):
        if text[s:e].strip():
            first = i if first < 0 else first
        elif first >= 0:
            blocks.append(_Block(*trim_span(text, lines[first][0], lines[i - 1][1]), "prose"))
            first = -1
    return [_Section((), tuple(blocks))]


def _markdown_sections(text: str, levels: list[tuple[int, str]] | None = None) -> list[_Section]:
    """Blocks grouped into sections by headings, as markdown-it (CommonMark, with
    tables) reads them; heading lines belong to no block.

    Each top-level block of markdown-it's token stream is a block of the lines its map
    names: a paragraph or block quote is prose, a list one list run, a fenced code block
    code (closed when its closing fence is there), a table, an HTML block or an indented
    code block lines; a thematic break is nothing. YAML front matter (``---`` ...
    ``---`` first) is a block of lines, read before markdown-it sees the rest.
    ``levels`` (the open headings, (level, title), updated in place) carries headings
    from one segment of a document to the next (notebook cells)."""
    lines = _lines(text)
    strs = [text[s:e] for s, e in lines]
    sections: list[_Section] = []
    levels = [] if levels is None else levels
    blocks: list[_Block] = []

    def block(first: int, last: int, kind: str, closed: bool = True) -> None:
        start, end = trim_span(text, lines[first][0], lines[last][1])
        if start < end:
            blocks.append(_Block(start, end, kind, closed))

    def heading(level: int, title: str) -> None:
        nonlocal blocks
        if blocks:
            sections.append(_Section(tuple(t for _, t in levels), tuple(blocks)))
            blocks = []
        levels[:] = [(lv, t) for lv, t in levels if lv < level]
        title = " ".join(title.split())
        if title:
            levels.append((level, title))

    parsed = strs
    close = -1
    if strs[0].rstrip() == "---":  # YAML front matter
        end = next(
            (k for k in range(1, min(len(strs), 200)) if strs[k].rstrip() in ("---", "...")), 0
        )
        if end:
            close = end
            block(0, close, "lines")
            parsed = [""] * (close + 1) + strs[close + 1 :]
    source = "\n".join(parsed)  # without \r\n, and a lone \r is no line end: lines are ours
    if "\r" in source:
        source = source.replace("\r", " ")
    tokens = _block_parser().parse(source)
    done = close + 1  # lines read so far
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        first, stop = token.map
        if first > done and any(strs[k].strip() for k in range(done, first)):
            block(done, first - 1, "prose")  # what no token holds (link definitions)
        done = max(done, stop)
        kind = _BLOCK_KINDS.get(token.type)
        if token.type == "heading_open":
            heading(int(token.tag[1]), tokens[i + 1].content)
        elif token.type == "fence":
            fence = _FENCE_CLOSE.fullmatch(strs[stop - 1]) if stop - 1 > first else None
            closed = bool(fence and fence.group(1).startswith(token.markup))
            block(first, stop - 1, "code", closed)
        elif kind is not None:
            block(first, stop - 1, kind)
    if done < len(strs) and any(strs[k].strip() for k in range(done, len(strs))):
        block(done, len(strs) - 1, "prose")
    if blocks:  # the last section (its headings stay open in ``levels``)
        sections.append(_Section(tuple(t for _, t in levels), tuple(blocks)))
    return sections


#: the chunker's block kind of each top-level markdown-it token that opens a block
_BLOCK_KINDS = {
    "paragraph_open": "prose",
    "blockquote_open": "prose",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "lines",
    "html_block": "lines",
    "code_block": "lines",
}


@cache
def _block_parser() -> MarkdownIt:
    """markdown-it (CommonMark and tables) reading blocks only: inline markup is not
    parsed (an inline token's content is its raw text)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])


# --- pieces: sentences, lines, words ---------------------------------------------------


class _Piece(NamedTuple):  # a tuple: made tens of millions of times at scale
    start: int
    end: int
    tokens: int
    whole: bool  # a whole sentence or line, so it may be repeated as overlap


_NON_SPACE = re.compile(r"\S+")
_LINE = re.compile(r"[^\n]+")


def _piece_spans(text: str, block: _Block) -> list[tuple[int, int]]:
    """The block's pieces: sentences (prose, list items), lines (tables, code)."""
    if block.kind == "prose":
        return sentence_spans(text, block.start, block.end)
    lines = [
        trim_span(text, block.start + m.start(), block.start + m.end())
        for m in _LINE.finditer(text[block.start : block.end])
    ]
    lines = [(a, b) for a, b in lines if a < b]
    if block.kind == "list":
        starts = [k for k, (a, b) in enumerate(lines) if k == 0 or _LIST_ITEM.match(text[a:b])]
        items = [
            (lines[k][0], lines[nxt - 1][1])
            for k, nxt in zip(starts, [*starts[1:], len(lines)], strict=True)
        ]
        return [s for a, b in items for s in sentence_spans(text, a, b)]
    if block.kind == "code" and len(lines) >= 2:
        # keep the fences attached to a code line, so no piece is a bare fence
        lines[0:2] = [(lines[0][0], lines[1][1])]
        if block.closed and len(lines) >= 2:
            lines[-2:] = [(lines[-2][0], lines[-1][1])]
    return lines


def _cut_oversized(
    text: str,
    sections: list[_Section],
    pieces: list[list[list[_Piece]]],
    budgets: list[int],
    count_tokens: TokenCounter,
    max_chars: int,
) -> list[list[list[_Piece]]]:
    """Replace each sentence or row bigger than its section's budget by its words, and
    each word bigger than the budget (or than ``max_chars``) by slices that fit.

    Code lines are cut only when longer than ``max_chars`` (a minified file, a 2 MB
    line). All the words of a document are counted in one call, the slices in another.
    """
    words = {
        (p.start, p.end): [(m.start(), m.end()) for m in _NON_SPACE.finditer(text, p.start, p.end)]
        for section, blocks, budget in zip(sections, pieces, budgets, strict=True)
        for block, block_pieces in zip(section.blocks, blocks, strict=True)
        for p in block_pieces
        if (p.tokens > budget and block.kind != "code") or p.end - p.start > max_chars
    }
    if not words:
        return pieces
    spans = [span for cut in words.values() for span in cut]
    counts = dict(zip(spans, _count(count_tokens, [text[a:b] for a, b in spans]), strict=True))
    budget_of = {
        span: budget
        for section, blocks, budget in zip(sections, pieces, budgets, strict=True)
        for block_pieces in blocks
        for p in block_pieces
        for span in words.get((p.start, p.end), ())
    }
    slices = {
        (a, b): _slices(a, b, counts[a, b], budget_of[a, b], max_chars)
        for a, b in spans
        if counts[a, b] > budget_of[a, b] or b - a > max_chars
    }
    if slices:
        parts = [span for cut in slices.values() for span in cut]
        counts.update(zip(parts, _count(count_tokens, [text[a:b] for a, b in parts]), strict=True))

    def cut(p: _Piece) -> list[_Piece]:
        if (p.start, p.end) not in words:
            return [p]
        return [
            _Piece(a, b, counts[a, b], False)
            for word in words[p.start, p.end]
            for a, b in slices.get(word, [word])
        ]

    return [[[w for p in block for w in cut(p)] for block in blocks] for blocks in pieces]


def _slices(
    start: int, end: int, tokens: int, budget: int, max_chars: int
) -> list[tuple[int, int]]:
    """Equal slices of a word too big for a chunk: each about ``budget`` tokens or fewer,
    and at most ``max_chars`` characters."""
    n = max(-(-tokens // budget), -(-(end - start) // max_chars), 1)
    size = -(-(end - start) // n)
    return [(a, min(a + size, end)) for a in range(start, end, size)]


# --- packing ---------------------------------------------------------------------------


def _pack(blocks: list[list[_Piece]], budget: int, config: ChunkerConfig) -> list[tuple[int, int]]:
    """Greedily pack one section's blocks of pieces into chunk spans of <= ``budget`` tokens."""
    packer = _Packer(budget, config)
    for block in blocks:
        packer.add_block(block)
    return packer.finish()


class _Packer:
    """The open chunk of a section: its pieces, their token total and how many are new."""

    def __init__(self, budget: int, config: ChunkerConfig) -> None:
        self.budget = budget
        self.config = config
        self.spans: list[tuple[int, int]] = []
        self.pieces: list[_Piece] = []
        self.tokens = 0
        self.fresh_pieces = 0  # pieces not repeated from the previous chunk
        self.fresh_tokens = 0

    def add_block(self, pieces: list[_Piece]) -> None:
        tokens = sum(p.tokens for p in pieces)
        chars = pieces[-1].end - pieces[0].start
        if self._fits(tokens, pieces[-1].end):
            self._extend(pieces)
        elif tokens <= self.budget and chars <= self.config.max_chars:  # a chunk of its own
            self._close(tokens)
            if not self._fits(tokens, pieces[-1].end):
                self._drop_overlap()
            self._extend(pieces)
        else:  # cut it, merging its start into a tiny open chunk
            if self.fresh_tokens >= self.config.min_tokens:
                self._close(pieces[0].tokens)
            # piece by piece: _fits and _extend written out (a call each per sentence),
            # the open chunk's state in locals, written back before each _close
            budget, max_chars = self.budget, self.config.max_chars
            open_pieces, total, fresh_pieces, fresh_tokens = (
                self.pieces,
                self.tokens,
                self.fresh_pieces,
                self.fresh_tokens,
            )
            for piece in pieces:
                _, end, tokens, _ = piece
                if open_pieces and (
                    total + tokens > budget or end - open_pieces[0].start > max_chars
                ):
                    self.pieces, self.tokens = open_pieces, total
                    self.fresh_pieces, self.fresh_tokens = fresh_pieces, fresh_tokens
                    self._close(tokens)
                    if not self._fits(tokens, end):
                        self._drop_overlap()
                    open_pieces, total = self.pieces, self.tokens
                    fresh_pieces, fresh_tokens = self.fresh_pieces, self.fresh_tokens
                open_pieces.append(piece)
                fresh_pieces += 1
                total += tokens
                fresh_tokens += tokens
            self.pieces, self.tokens = open_pieces, total
            self.fresh_pieces, self.fresh_tokens = fresh_pieces, fresh_tokens

    def _fits(self, tokens: int, end: int) -> bool:
        """Whether the open chunk can take pieces of ``tokens`` ending at ``end``."""
        if self.tokens + tokens > self.budget:
            return False
        return not self.pieces or end - self.pieces[0].start <= self.config.max_chars

    def _drop_overlap(self) -> None:
        """Open the next chunk without the repeated sentences (they leave no room)."""
        if not self.fresh_pieces:
            self.pieces = []
            self.tokens = 0

    def finish(self) -> list[tuple[int, int]]:
        self._close(self.budget)
        return self.spans

    def _extend(self, pieces: list[_Piece]) -> None:
        self.pieces.extend(pieces)
        self.fresh_pieces += len(pieces)
        added = sum(p.tokens for p in pieces)
        self.tokens += added
        self.fresh_tokens += added

    def _close(self, next_tokens: int) -> None:
        """Emit the open chunk; reopen it with an overlap that leaves room for ``next_tokens``."""
        if not self.fresh_pieces:
            return
        self.spans.append((self.pieces[0].start, self.pieces[-1].end))
        limit = min(self.config.overlap_tokens, self.budget - next_tokens)
        keep = 0
        total = 0
        # whole trailing sentences/lines only, and never the entire previous chunk
        while limit > 0 and keep < len(self.pieces) - 1:
            p = self.pieces[-1 - keep]
            if not p.whole or total + p.tokens > limit:
                break
            keep += 1
            total += p.tokens
        self.pieces = self.pieces[len(self.pieces) - keep :]
        self.tokens = total
        self.fresh_pieces = 0
        self.fresh_tokens = 0
