"""Sentence windows: the context that holds the answer in a small budget.

Retrieval ranks chunks of a few hundred tokens, but the fact a question asks for sits in
one or two of their sentences, and the right chunk is often not the first. Whole chunks
in rank order spend a 1,000-token budget on three or four chunks; windows spend it on the
sentences that carry the query, taken from many more of the retrieved chunks:

1. **Candidates.** Every sentence (list item, line, code block:
   :func:`~twokeys.text.sentences.split_sentences`) of the first ``depth`` hits.
2. **Score.** ``lexical * held(s) + dense * cosine(s) + prior / sqrt(rank)``: the share
   of the query's idf mass the sentence holds, the dense model's cosine between query
   and sentence (when the index has one and ``dense`` is not 0: off by default, since
   encoding every candidate sentence costs seconds per question on a small CPU), and the
   rank its chunk had in the fused run, so retrieval's judgement of the whole passage
   still counts.
3. **Windows.** From the best sentence down, each chosen sentence brings ``before`` and
   ``after`` neighbours of its chunk (none by default: single sentences did best on the
   train splits, though a fact that runs into the next sentence is then cut); windows
   of one chunk that touch are merged, and gaps are written
   as ``…``. A sentence whose normalised text is already in the context is skipped
   (near-duplicates: the same paragraph in two pages, or a chunk's overlap).
4. **Blocks.** One block per chunk, numbered in the order their first window was chosen,
   labelled as :func:`~twokeys.rag.packing.pack` labels blocks; a window that does not
   fit the budget is dropped and smaller ones are still tried.

The weights and window sizes are chosen on the train splits of the blind answer sets
(``python -m benchmarks.answers_context --grid``), never on the reported test splits;
there, windows did not beat whole chunks (README "Answers"), so ``ask`` packs chunks
unless told ``--context windows``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from twokeys.errors import ConfigError
from twokeys.rag.packing import (
    FIXED_SECTIONS,
    SEPARATOR,
    Block,
    Budget,
    PackedContext,
    QueryUsage,
    SectionUsage,
    SubQueryHits,
    render_label,
)
from twokeys.text.sentences import split_sentences
from twokeys.text.tokens import TokenCounter
from twokeys.types import Hit

GAP = " … "

Held = Callable[[str], float]  # share of the query's idf mass a text holds, in [0, 1]
Cosines = Callable[[Sequence[str]], Sequence[float]]  # query-sentence cosines


@dataclass(frozen=True)
class WindowOptions:
    """How windows are scored and sized (module docstring); defaults chosen on train."""

    depth: int = 20
    before: int = 0
    after: int = 0
    lexical: float = 1.0
    dense: float = 0.0  # encoding every candidate sentence costs more than it was shown to gain
    prior: float = 0.5

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ConfigError(f"windows.depth: must be >= 1, got {self.depth}")
        if self.before < 0 or self.after < 0:
            raise ConfigError("windows.before/after: must be >= 0")


@dataclass(frozen=True, slots=True)
class _Sentence:
    hit: int  # index into the hits
    index: int  # position within its chunk
    start: int
    end: int
    score: float


def score_sentences(
    hits: Sequence[Hit], held: Held, cosines: Cosines | None, options: WindowOptions
) -> list[list[_Sentence]]:
    """Every sentence of the first ``options.depth`` hits with its score, per hit."""
    spans = [split_sentences(hit.text) for hit in hits[: options.depth]]
    texts = [h.text[s:e] for h, row in zip(hits, spans, strict=False) for s, e in row]
    dense = list(cosines(texts)) if cosines is not None and texts and options.dense else []
    out: list[list[_Sentence]] = []
    n = 0
    for i, hit_spans in enumerate(spans):
        prior = options.prior / math.sqrt(i + 1)
        row = []
        for j, (s, e) in enumerate(hit_spans):
            score = options.lexical * held(texts[n]) + prior
            if dense:
                score += options.dense * dense[n]
            row.append(_Sentence(i, j, s, e, score))
            n += 1
        out.append(row)
    return out


_SPACE = re.compile(r"\s+")


def _key(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def pack_windows(
    hits: Sequence[Hit],
    budget: int,
    count_tokens: TokenCounter,
    *,
    held: Held,
    cosines: Cosines | None = None,
    options: WindowOptions | None = None,
    query: int = 0,
) -> list[Block]:
    """The blocks of sentence windows from ``hits`` that fit ``budget`` tokens (module
    docstring); ``query`` is the sub-query the blocks are recorded for."""
    options = options or WindowOptions()
    scored = score_sentences(hits, held, cosines, options)
    order = sorted((s for row in scored for s in row), key=lambda s: (-s.score, s.hit, s.index))
    chosen: dict[int, set[int]] = {}  # hit -> sentence indices kept
    first_pick: list[int] = []
    seen: set[str] = set()
    used = 0

    def render(hit_index: int, keep: set[int], number: int) -> str:
        hit = hits[hit_index]
        row = scored[hit_index]
        pieces: list[str] = []
        prev = -2
        for j in sorted(keep):
            text = hit.text[row[j].start : row[j].end].strip()
            if pieces and j != prev + 1:
                pieces.append(GAP.strip())
            pieces.append(text)
            prev = j
        body = _join(pieces)
        return f"{render_label(number, hit.path, hit.chunk.heading_path)}\n{body}"

    def cost(hit_index: int, keep: set[int]) -> int:
        number = first_pick.index(hit_index) + 1 if hit_index in first_pick else 1
        return count_tokens([render(hit_index, keep, number)])[0]

    sep = count_tokens([SEPARATOR])[0]
    for sentence in order:
        if budget - used < 8:
            break
        i = sentence.hit
        row = scored[i]
        lo, hi = (
            max(0, sentence.index - options.before),
            min(len(row), sentence.index + options.after + 1),
        )
        current = chosen.get(i, set())
        center = _key(hits[i].text[sentence.start : sentence.end])
        if sentence.index in current or not center or center in seen:
            continue
        window = {
            j
            for j in range(lo, hi)
            if j not in current
            and (j == sentence.index or _key(hits[i].text[row[j].start : row[j].end]) not in seen)
        }
        keep = current | window
        old = cost(i, current) + sep if current else 0
        new = cost(i, keep) + sep
        if used - old + new > budget:
            continue
        used += new - old
        chosen[i] = keep
        if i not in first_pick:
            first_pick.append(i)
        for j in window:
            seen.add(_key(hits[i].text[row[j].start : row[j].end]))
    blocks = []
    for number, i in enumerate(first_pick, 1):
        hit = hits[i]
        keep = chosen[i]
        text = render(i, keep, number).split("\n", 1)[1]
        blocks.append(
            Block(
                number=number,
                path=hit.path,
                title=hit.title,
                heading_path=hit.chunk.heading_path,
                text=text,
                chunk_ids=(hit.chunk_id,),
                queries=(query,),
                tokens=cost(i, keep),
                trimmed=len(keep) < len(scored[i]),
                parts=((0, hit.chunk.heading_path),),
            )
        )
    return blocks


def _join(pieces: Sequence[str]) -> str:
    out = ""
    for piece in pieces:
        if not out:
            out = piece
        elif piece == GAP.strip() or out.endswith(GAP.strip()):
            out = f"{out} {piece}"
        elif "\n" in piece or piece.startswith(("-", "*", "|", "```")):
            out = f"{out}\n{piece}"
        else:
            out = f"{out} {piece}"
    return out


def pack_context(
    runs: Sequence[SubQueryHits],
    budget: Budget,
    count_tokens: TokenCounter,
    *,
    held: Sequence[Held],
    cosines: Sequence[Cosines | None],
    fixed: Mapping[str, str] | None = None,
    deferred: Collection[int] = (),
    options: WindowOptions | None = None,
) -> PackedContext:
    """The context of windows for every sub-query of ``runs`` (``held[i]`` and
    ``cosines[i]`` score ``runs[i]``'s sentences): the sections are accounted as
    :func:`~twokeys.rag.packing.pack` accounts them; the answered sub-queries share the
    context equally, in order, each taking what the one before left unused, and the
    ``deferred`` ones (judged unanswered) fill what room is left after them."""
    sections: list[SectionUsage] = []
    fixed_used = 0
    for name, text in (fixed or {}).items():
        if name not in FIXED_SECTIONS:
            raise ConfigError(f"fixed: unknown section {name!r}")
        cap = getattr(budget, name)
        used = count_tokens([text])[0]
        if used > cap:
            raise ConfigError(
                f"{name}: {used} tokens, over its budget of {cap}; shorten it or raise --budget"
            )
        sections.append(SectionUsage(name, cap, used))
        fixed_used += used
    room = budget.total - budget.answer - fixed_used
    order = [i for i in range(len(runs)) if i not in deferred] + sorted(set(deferred))
    blocks: list[Block] = []
    spent: dict[int, int] = {}
    sep = count_tokens([SEPARATOR])[0]
    seen_chunks: set[str] = set()
    for position, i in enumerate(order):
        left = room - sum(b.tokens + sep for b in blocks)
        share = left // (len(order) - position) if i not in deferred else left
        hits = [h for h in runs[i].hits if h.chunk_id not in seen_chunks]
        mine = pack_windows(
            hits, share, count_tokens, held=held[i], cosines=cosines[i], options=options, query=i
        )
        for block in mine:
            number = len(blocks) + 1
            label = render_label(number, block.path, block.heading_path)
            tokens = count_tokens([f"{label}\n{block.text}"])[0]
            blocks.append(replace(block, number=number, tokens=tokens))
            seen_chunks.update(block.chunk_ids)
            spent[i] = spent.get(i, 0) + tokens
    while blocks and count_tokens([SEPARATOR.join(b.render() for b in blocks)])[0] > room:
        blocks.pop()
    used = count_tokens([SEPARATOR.join(b.render() for b in blocks)])[0] if blocks else 0
    sections.append(SectionUsage("context", room, used))
    sections.append(SectionUsage("answer", budget.answer, 0))
    queries = tuple(
        QueryUsage(run.query, spent.get(i, 0), tuple(b.number for b in blocks if i in b.queries))
        for i, run in enumerate(runs)
    )
    return PackedContext(tuple(blocks), tuple(sections), queries, (), budget.total)
