"""Context packing: ranked hits for one or more sub-queries + a token budget -> the context.

The prompt has four *sections*, each with its own budget (:class:`Budget`):
``instructions`` (the template's fixed text), ``question`` (the user's words), ``answer``
(tokens kept free for the reply) and ``context`` (the retrieved passages), which gets
everything the other three do not use. The first two are capped, so no section can
starve the retrieval results: the context always has at least
``total - answer - instructions - question`` tokens; a question over its cap is an error.

Within the context budget, :func:`pack` builds numbered *blocks*:

* **Fair across sub-queries.** Candidates are taken in rounds: round r offers each
  sub-query its r-th best hit, in sub-query order, so every sub-query gets its best
  evidence before any gets its second. In the first round a sub-query may use at most an
  equal share of what is left, so one long passage cannot crowd out the others' best.
* **Deferred sub-queries last.** Sub-queries named in ``deferred`` (those the sources
  were judged not to answer) take part only once every other sub-query has had all its
  hits offered, in rounds of their own: their closest passages fill what room is left
  and never take it from an answered part.
* **Judged evidence first.** With ``first``, the above runs twice: over each
  sub-query's first ``first`` hits (the ones it was judged on), then over the hits
  retrieved to fill a large budget, so those never crowd out a deferred part's closest
  passages.
* **De-duplicated.** A chunk already in the context is not added twice, and neither is a
  chunk whose word trigrams are at least 80% contained in a block already chosen
  (near-duplicate text, such as a page copied into two folders).
* **Merged.** A chunk next to one already chosen from the same document (positions
  differ by one) extends that block in reading order; the chunker's sentence overlap is
  removed using the chunks' character offsets, and a heading change inside the block is
  written as a Markdown heading line.
* **Labelled.** Each block starts with ``[n] path | heading path``; n is its citation
  number, and blocks are numbered in the order they were chosen, so the highest-ranked
  evidence comes first.
* **Excerpts once the budget runs low** (with ``excerpt_tokens``; ``ask`` passes
  :data:`EXCERPT_TOKENS` with its learned order). Once less than :data:`EXCERPT_SHARE` of
  the context budget is left, each further hit is offered at most :data:`EXCERPT_TOKENS`
  tokens: a chunk longer than that is cut as below (with ``focus``, to the run around the
  sentence holding most of its query), so the last part of the budget holds several
  sources' most query-bearing sentences instead of one or two whole chunks: past the
  first few hits, the chunk holding the answer is spread over more ranks, and most of a
  lower-ranked chunk's sentences are not about the question.
* **Never cut mid-sentence.** A block that does not fit is cut after its last whole
  sentence (or line, for lists and tables; a fenced code block is one piece) that fits,
  and is skipped when not even its first sentence does.
* **Cut where the query is.** With ``focus`` (a rating of how much of a sub-query a text
  holds), a new block that does not fit keeps its first sentences as before when they
  hold the sentence rated highest (the earliest of equals), and otherwise the run that
  holds that sentence and starts as early as fits: a long passage whose answer sits in
  its second half still brings it, with what leads up to it (in a manual page, the
  example an explanation follows). A block cut at its head is not extended backwards
  (there would be a gap), as one cut at its tail is not extended forwards.

Token accounting: a block costs the tokens of its rendered text (label line + text);
blocks are joined by :data:`SEPARATOR`, whose tokens count too. After packing, the whole
context is counted once more and the last block shortened until it fits, so the budget
holds even for a subword tokenizer that merges across block boundaries.
:func:`~twokeys.text.tokens.approx_token_counter` (``ceil(len/6)`` per word, 1 per
punctuation run) is the documented estimate used when the generator's tokenizer is unknown.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from twokeys.errors import ConfigError
from twokeys.text.passages import heading_text
from twokeys.text.sentences import split_sentences
from twokeys.text.tokens import TokenCounter
from twokeys.types import Chunk, Hit, Locator, cite

SEPARATOR = "\n\n"
FIXED_SECTIONS = ("instructions", "question")
DUPLICATE_CONTAINMENT = 0.8
MIN_BLOCK_TOKENS = 8  # stop offering candidates when less than this is left
MIN_TOTAL = 512
EXCERPT_SHARE = 0.4  # below this share of the context budget left, hits become excerpts
EXCERPT_TOKENS = 100  # the most an excerpt may cost


@dataclass(frozen=True)
class Budget:
    """Token budgets of the prompt's sections (see the module docstring)."""

    total: int = 2048
    answer: int = 384
    instructions: int = 256
    question: int = 256
    min_context: int = 128

    def __post_init__(self) -> None:
        for name in ("total", "answer", "instructions", "question", "min_context"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"budget.{name}: expected an integer >= 0, got {value!r}")
        if self.answer < 1:
            raise ConfigError(f"budget.answer: must be >= 1, got {self.answer}")
        if self.context_floor < self.min_context:
            raise ConfigError(
                f"budget.total: {self.total} tokens leave {self.context_floor} for retrieved "
                f"context after answer ({self.answer}), instructions ({self.instructions}) and "
                f"question ({self.question}); need at least {self.min_context}"
            )

    @property
    def context_floor(self) -> int:
        """The least the context section can get."""
        return self.total - self.answer - self.instructions - self.question

    @classmethod
    def for_total(cls, total: int) -> Budget:
        """Section caps scaled to ``total``: answer 1/4 (at most 384), instructions 1/8
        (at least 192, at most 256), question 1/8 (at most 256); the context gets the rest."""
        if total < MIN_TOTAL:
            raise ConfigError(f"budget: must be at least {MIN_TOTAL} tokens, got {total}")
        return cls(
            total=total,
            answer=min(384, total // 4),
            instructions=min(256, max(192, total // 8)),
            question=min(256, total // 8),
        )


@dataclass(frozen=True, slots=True)
class SubQueryHits:
    """One sub-query and its ranked hits (best first)."""

    query: str
    hits: tuple[Hit, ...]


@dataclass(frozen=True, slots=True)
class Block:
    """One numbered passage of the context: one chunk, or adjacent chunks merged."""

    number: int
    path: str
    title: str
    heading_path: tuple[str, ...]
    text: str
    chunk_ids: tuple[str, ...]  # in reading order
    queries: tuple[int, ...]  # indices of the sub-queries whose hits it holds
    tokens: int  # of the rendered block (label line + text)
    trimmed: bool  # cut after a whole sentence to fit
    # where each chunk starts in ``text`` and its heading path, in reading order
    parts: tuple[tuple[int, tuple[str, ...]], ...] = ()
    #: the citation a person reads (``manual.pdf pp. 12-13``, a JSONL record's id and
    #: title; the path if nothing more)
    cite: str = ""
    #: where the label in the context says the block is from: the path and its chunks'
    #: locator (``manual.pdf pp. 12-13``), or the path
    where: str = ""

    @property
    def heading(self) -> str:
        return heading_text(self.heading_path)

    def heading_at(self, offset: int) -> str:
        """The heading of the chunk that holds character ``offset`` of ``text``."""
        part = self._part_at(offset)
        return heading_text(self.parts[part][1] if part >= 0 else self.heading_path)

    def chunk_at(self, offset: int) -> str:
        """The id of the chunk that holds character ``offset`` of ``text``."""
        part = max(self._part_at(offset), 0)
        return self.chunk_ids[part] if part < len(self.chunk_ids) else ""

    def _part_at(self, offset: int) -> int:
        """The index of the last of :attr:`parts` to start at or before ``offset`` (-1:
        none, or no parts recorded)."""
        found = -1
        for i, (start, _) in enumerate(self.parts):
            if start > offset:
                break
            found = i
        return found

    @property
    def label(self) -> str:
        return render_label(self.number, self.where or self.path, self.heading_path)

    def render(self) -> str:
        return f"{self.label}\n{self.text}"


@dataclass(frozen=True, slots=True)
class SectionUsage:
    """A section's budget and the tokens it used."""

    name: str
    budget: int
    used: int


@dataclass(frozen=True, slots=True)
class QueryUsage:
    """What one sub-query added to the context."""

    query: str
    tokens: int
    blocks: tuple[int, ...]  # citation numbers of the blocks it created or extended


@dataclass(frozen=True, slots=True)
class Skipped:
    """A candidate chunk left out, and why."""

    chunk_id: str
    query: int
    reason: str
    block: int = 0  # the block that holds its text (already in it, a near-duplicate of it)


@dataclass(frozen=True)
class PackedContext:
    """The context a model sees, with its accounting."""

    blocks: tuple[Block, ...]
    sections: tuple[SectionUsage, ...]
    queries: tuple[QueryUsage, ...]
    skipped: tuple[Skipped, ...] = field(default=())
    total: int = 0  # the whole budget: prompt + answer

    @property
    def used(self) -> int:
        """Tokens of the prompt's sections (the answer's reserve not included)."""
        return sum(s.used for s in self.sections)

    @property
    def text(self) -> str:
        return SEPARATOR.join(b.render() for b in self.blocks)

    def section(self, name: str) -> SectionUsage:
        for s in self.sections:
            if s.name == name:
                return s
        raise KeyError(name)

    def block(self, number: int) -> Block:
        return self.blocks[number - 1]


def render_label(number: int, path: str, heading_path: Sequence[str]) -> str:
    heading = heading_text(heading_path)
    return f"[{number}] {path} | {heading}" if heading else f"[{number}] {path}"


def pack(
    runs: Sequence[SubQueryHits],
    budget: Budget,
    count_tokens: TokenCounter,
    *,
    fixed: Mapping[str, str] | None = None,
    deferred: Collection[int] = (),
    first: int | None = None,
    focus: Focus | None = None,
    excerpt_tokens: int | None = None,
) -> PackedContext:
    """Pack the hits of ``runs`` into the context section of ``budget`` (module docstring).

    ``fixed`` holds the text of the capped sections (``instructions``, ``question``),
    counted against their own budgets; whatever they leave goes to the context.
    ``deferred``: indices of ``runs`` packed last; ``first``: the hits each run was
    judged on; ``focus(i, text)``: how much of ``runs[i]``'s query a text holds;
    ``excerpt_tokens``: the cap on each hit once the budget runs low (None: no cap).
    """
    counter = _CachedCounter(count_tokens)
    sections: list[SectionUsage] = []
    fixed_used = 0
    for name, text in (fixed or {}).items():
        if name not in FIXED_SECTIONS:
            raise ConfigError(
                f"fixed: unknown section {name!r} (known: {', '.join(FIXED_SECTIONS)})"
            )
        cap = getattr(budget, name)
        used = counter.one(text)
        if used > cap:
            raise ConfigError(
                f"{name}: {used} tokens, over its budget of {cap}; shorten it or raise --budget"
            )
        sections.append(SectionUsage(name, cap, used))
        fixed_used += used
    context_budget = budget.total - budget.answer - fixed_used
    for i in deferred:
        if not 0 <= i < len(runs):
            raise ConfigError(f"deferred: no sub-query {i} (there are {len(runs)})")
    if first is not None and first < 1:
        raise ConfigError(f"first: must be >= 1, got {first}")
    if excerpt_tokens is not None and excerpt_tokens < MIN_BLOCK_TOKENS:
        raise ConfigError(
            f"excerpt_tokens: must be >= {MIN_BLOCK_TOKENS} or None, got {excerpt_tokens}"
        )
    packer = _Packer(context_budget, counter, len(runs), focus, excerpt_tokens)
    answered = [i for i in range(len(runs)) if i not in deferred]
    depth = max((len(run.hits) for run in runs), default=0)
    bounds = [0, depth] if first is None else [0, first, depth]
    for start, stop in itertools.pairwise(bounds):
        packer.run(answered, runs, start, stop)
        packer.run(sorted(set(deferred)), runs, start, stop)
    blocks = packer.fit_total()
    used = counter.one(SEPARATOR.join(b.render() for b in blocks)) if blocks else 0
    sections.append(SectionUsage("context", context_budget, used))
    sections.append(SectionUsage("answer", budget.answer, 0))
    queries = tuple(
        QueryUsage(run.query, packer.query_tokens[i], tuple(sorted(packer.query_blocks[i])))
        for i, run in enumerate(runs)
    )
    return PackedContext(
        tuple(blocks), tuple(sections), queries, tuple(packer.skipped), budget.total
    )


# --- near-duplicates ---------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def shingles(text: str) -> frozenset[tuple[str, ...]]:
    """Word trigrams of ``text`` (lowercased); the whole word tuple when shorter."""
    words = _WORD.findall(text.lower())
    if len(words) < 3:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def containment(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """The share of ``a``'s shingles that are in ``b``."""
    return len(a & b) / len(a) if a else 1.0


# --- the packer --------------------------------------------------------------------------


class _CachedCounter:
    def __init__(self, count_tokens: TokenCounter) -> None:
        self._count = count_tokens
        self._cache: dict[str, int] = {}

    def one(self, text: str) -> int:
        if not text:
            return 0
        if text not in self._cache:
            counts = list(self._count([text]))
            if len(counts) != 1:
                raise ValueError(f"token counter returned {len(counts)} counts for 1 text")
            self._cache[text] = int(counts[0])
        return self._cache[text]


@dataclass
class _Open:
    """A block being built."""

    number: int
    path: str
    title: str
    doc_id: str
    parts: list[Chunk]
    text: str
    tokens: int
    queries: set[int]
    trimmed: bool = False
    head_cut: bool = False  # its text starts past its first chunk's start
    shingles: frozenset[tuple[str, ...]] = frozenset()
    starts: list[int] = field(default_factory=lambda: [0])  # of each part in ``text``

    @property
    def heading_path(self) -> tuple[str, ...]:
        return self.parts[0].heading_path

    @property
    def span(self) -> Locator | None:
        """Its chunks' locators spanned (pages, lines), if they have any."""
        return _span([c.locator for c in self.parts if c.locator])

    @property
    def where(self) -> str:
        """The path, with the chunks' locators spanned where they have one."""
        span = self.span
        return span.label(self.path) if span else self.path

    def render(self, text: str | None = None, heading_path: tuple[str, ...] | None = None) -> str:
        label = render_label(self.number, self.where, heading_path or self.heading_path)
        return f"{label}\n{self.text if text is None else text}"

    def freeze(self) -> Block:
        return Block(
            number=self.number,
            path=self.path,
            title=self.title,
            heading_path=self.heading_path,
            text=self.text,
            chunk_ids=tuple(c.id for c in self.parts),
            queries=tuple(sorted(self.queries)),
            tokens=self.tokens,
            trimmed=self.trimmed,
            parts=tuple(
                (start, c.heading_path) for start, c in zip(self.starts, self.parts, strict=True)
            ),
            cite=cite(self.path, self.span, self.doc_id, self.title),
            where=self.where,
        )


def _span(locators: list[Locator]) -> Locator | None:
    """One locator over several chunks' (in reading order): the first, its pages or
    lines reaching to the last's; its section if they share one."""
    if not locators:
        return None
    first, last = locators[0], locators[-1]
    if any(loc.section != first.section for loc in locators):  # spans sections: none
        first = replace(first, section=None)
    if first.page is not None and last.page is not None:
        end = last.page_end or last.page
        first = replace(first, page_end=end if end != first.page else None)
    if first.line_start is not None and last.line_start is not None:
        first = replace(first, line_end=last.line_end or last.line_start)
    return first


class _Packer:
    def __init__(
        self,
        budget: int,
        counter: _CachedCounter,
        n_queries: int,
        focus: Focus | None = None,
        excerpt_tokens: int | None = None,
    ) -> None:
        self.focus = focus
        self.excerpt_tokens = excerpt_tokens
        self.budget = budget
        self.remaining = budget
        self.count = counter
        self.separator = counter.one(SEPARATOR)
        self.blocks: list[_Open] = []
        self.chunks: dict[str, _Open] = {}
        self.skipped: list[Skipped] = []
        self.query_tokens = [0] * n_queries
        self.query_blocks: list[set[int]] = [set() for _ in range(n_queries)]

    def run(
        self, which: Sequence[int], runs: Sequence[SubQueryHits], start: int, stop: int
    ) -> None:
        """Offer the hits ranked ``start`` to ``stop`` (excluded) of ``runs[i]`` for each i
        in ``which``, in rounds."""
        for rank in range(start, stop):
            offered = [i for i in which if rank < len(runs[i].hits)]
            for turn, i in enumerate(offered):
                if self.remaining < MIN_BLOCK_TOKENS:
                    return
                share = self.remaining
                if rank == 0:  # a fair share of what is left for each sub-query's best
                    share = self.remaining // (len(offered) - turn)
                if self.excerpt_tokens is not None and self.remaining < EXCERPT_SHARE * self.budget:
                    share = min(share, self.excerpt_tokens)
                self.offer(runs[i].hits[rank], i, share)

    def offer(self, hit: Hit, query: int, limit: int) -> None:
        chunk = hit.chunk
        if chunk.id in self.chunks:
            block = self.chunks[chunk.id]
            block.queries.add(query)
            self.query_blocks[query].add(block.number)
            self.skipped.append(
                Skipped(chunk.id, query, f"already in [{block.number}]", block.number)
            )
            return
        if self.extend(hit, query, limit):
            return
        own = shingles(chunk.text)
        for block in self.blocks:
            if containment(own, block.shingles) >= DUPLICATE_CONTAINMENT:
                block.queries.add(query)
                self.query_blocks[query].add(block.number)
                reason = f"near-duplicate of [{block.number}]"
                self.skipped.append(Skipped(chunk.id, query, reason, block.number))
                return
        self.add(hit, query, limit, own)

    def extend(self, hit: Hit, query: int, limit: int) -> bool:
        """Merge ``hit`` into a block holding its neighbour; False when there is none."""
        chunk = hit.chunk
        for block in self.blocks:
            if block.doc_id != chunk.doc_id:
                continue
            first, last = block.parts[0], block.parts[-1]
            if chunk.position == last.position + 1 and not block.trimmed:
                tail = _join_after(last, chunk)
                return self._grow(block, chunk, query, limit, append=tail)
            if chunk.position == first.position - 1 and not block.head_cut:
                head = _join_before(chunk, first)
                return self._grow(block, chunk, query, limit, prepend=head)
        return False

    def _grow(
        self,
        block: _Open,
        chunk: Chunk,
        query: int,
        limit: int,
        *,
        append: str = "",
        prepend: str = "",
    ) -> bool:
        if prepend:
            text = prepend + block.text
            tokens = self.count.one(block.render(text, chunk.heading_path))
        else:
            text = block.text + append
            tokens = self.count.one(block.render(text))
        cost = tokens - block.tokens
        trimmed = False
        if cost > min(limit, self.remaining):
            if prepend:  # cutting the head would leave a gap before the block
                self.skipped.append(Skipped(chunk.id, query, "over budget"))
                return True
            best = self._window(
                append,
                lambda piece: self.count.one(block.render(block.text + piece)) - block.tokens,
                min(limit, self.remaining),
            )
            if best is None:
                self.skipped.append(Skipped(chunk.id, query, "over budget"))
                return True
            text = block.text + best
            tokens = self.count.one(block.render(text))
            cost = tokens - block.tokens
            trimmed = True
        if prepend:
            block.parts.insert(0, chunk)
            block.starts = [0, *(start + len(prepend) for start in block.starts)]
        else:
            block.parts.append(chunk)
            block.starts.append(len(block.text))
        block.text = text
        block.tokens = tokens
        block.trimmed = block.trimmed or trimmed
        block.queries.add(query)
        block.shingles = shingles(text)
        self.chunks[chunk.id] = block
        self._charge(query, block.number, cost)
        return True

    def add(self, hit: Hit, query: int, limit: int, own: frozenset[tuple[str, ...]]) -> None:
        chunk = hit.chunk
        number = len(self.blocks) + 1
        block = _Open(number, hit.path, hit.title, chunk.doc_id, [chunk], chunk.text, 0, {query})
        joint = self.separator if self.blocks else 0
        available = min(limit, self.remaining)
        tokens = self.count.one(block.render())
        if tokens + joint > available:
            focus = self.focus
            best = self._window(
                chunk.text,
                lambda piece: self.count.one(block.render(piece)) + joint,
                available,
                None if focus is None else lambda piece: focus(query, piece),
            )
            if best is None:
                self.skipped.append(Skipped(chunk.id, query, "over budget"))
                return
            block.head_cut = not chunk.text.startswith(best)
            block.text = best
            block.trimmed = True
            tokens = self.count.one(block.render())
            own = shingles(best)
        block.tokens = tokens
        block.shingles = own
        self.blocks.append(block)
        self.chunks[chunk.id] = block
        self._charge(query, number, tokens + joint)

    def _charge(self, query: int, number: int, cost: int) -> None:
        self.remaining -= cost
        self.query_tokens[query] += cost
        self.query_blocks[query].add(number)

    @staticmethod
    def _window(
        text: str, cost: _Cost, limit: int, score: Callable[[str], float] | None = None
    ) -> str | None:
        """The longest run of whole sentences from the start of ``text`` whose cost fits;
        with ``score``, when the sentence it rates highest (the earliest of equals) lies
        past that, the run that holds it and starts as early as fits, so that what leads
        up to it (the example an explanation follows) is kept too. A run does not end
        right after a heading line."""
        spans = split_sentences(text)
        ends = [i for i, (a, b) in enumerate(spans) if not text[a:b].startswith("#")]

        def longest(first: int, through: int) -> str | None:
            """The longest run from sentence ``first`` (the text's start for the first)
            through at least sentence ``through`` that fits."""
            start = 0 if first == 0 else spans[first][0]
            usable = [j for j in ends if j >= through]
            lo, hi, found = 0, len(usable) - 1, None
            while lo <= hi:  # cost grows with the run: binary search
                mid = (lo + hi) // 2
                piece = text[start : spans[usable[mid]][1]]
                if cost(piece) <= limit:
                    found, lo = piece, mid + 1
                else:
                    hi = mid - 1
            return found

        if score is None or not spans:
            return longest(0, 0)
        rated = [score(text[a:b]) for a, b in spans]
        top = max(range(len(spans)), key=lambda i: (rated[i], -i))
        for first in range(top + 1):
            found = longest(first, top)
            if found is not None:
                return found
        return longest(0, 0)

    def fit_total(self) -> list[Block]:
        """Freeze the blocks, shortening the last until the joined context fits."""
        blocks = [b.freeze() for b in self.blocks]
        while blocks and self.count.one(SEPARATOR.join(b.render() for b in blocks)) > self.budget:
            last = blocks.pop()
            ends = [end for _, end in split_sentences(last.text)]
            if len(ends) > 1:
                shorter = replace(last, text=last.text[: ends[-2]], trimmed=True)
                blocks.append(replace(shorter, tokens=self.count.one(shorter.render())))
        return blocks


_Cost = Callable[[str], int]
Focus = Callable[[int, str], float]  # sub-query index, text -> how much of the query it holds


def _heading_line(path: tuple[str, ...]) -> str:
    return f"{'#' * min(max(len(path), 1), 6)} {path[-1]}" if path else ""


def _join_after(prev: Chunk, nxt: Chunk) -> str:
    """The text that follows ``prev`` to the end of ``nxt`` (overlap removed)."""
    if nxt.start < prev.end:
        return nxt.text[min(prev.end - nxt.start, len(nxt.text)) :]
    if nxt.heading_path != prev.heading_path and nxt.heading_path:
        return f"{SEPARATOR}{_heading_line(nxt.heading_path)}{SEPARATOR}{nxt.text}"
    return SEPARATOR + nxt.text


def _join_before(prev: Chunk, nxt: Chunk) -> str:
    """The text of ``prev`` up to where ``nxt`` starts (overlap removed)."""
    if prev.end > nxt.start:
        return prev.text[: max(nxt.start - prev.start, 0)]
    if nxt.heading_path != prev.heading_path and nxt.heading_path:
        return f"{prev.text}{SEPARATOR}{_heading_line(nxt.heading_path)}{SEPARATOR}"
    return prev.text + SEPARATOR
