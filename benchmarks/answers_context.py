"""Context recall by budget on the blind answer sets: is the gold passage in the context?

``python -m benchmarks.answers_context OUT [--split test] [--budget 1000 ...]`` reads the
collections ``python -m benchmarks.answer_corpora OUT`` writes (indexing each into
``OUT/<name>/pages.twokeys`` once, default MiniLM encoder) and the questions of
``benchmarks/answers/<name>-qa*.jsonl`` of one split, retrieves each question once
(hybrid, fused top 40) and packs the same hits two ways at each context budget:

* ``top-k``: whole chunks in rank order while they fit (the naive baseline);
* ``pack``: :func:`twokeys.rag.packing.pack` (fair rounds, merging neighbours,
  near-duplicate removal, a cut that keeps the query's best sentence), as ``ask``
  calls it with the fused order.

Context recall: the share of an answerable question's gold facts found verbatim in a
block from the gold page (:func:`twokeys.evaluation.answers.context_recall`); budgets
are context tokens (:func:`~twokeys.text.tokens.approx_token_counter`).
Query-aware sentence windows from many chunks (``twokeys.rag.windows``, once ``ask
--context windows``) measured below ``pack`` on the train, dev and test splits (README
"Answers") and were removed; the README keeps their figures.

``--diagnose`` says where the misses come from: each sensor's recall ceiling by depth
(the share of gold facts inside a retrieved chunk of their page, bm25 / dense / the
default hybrid and three other fusions at 5 to 100), the page ceiling (a chunk of the
gold page at all), how often the gold fact sits in the chunk's sentence that holds
most of the question (the cue any query-aware trimming relies on), and, for ``pack`` at
each budget, whether a missed fact was not retrieved in the top 100, retrieved below
the fused top 40, or retrieved in the top 40 but not packed.

``--units 125,250,500`` asks which retrieval unit holds the answer in a budget: it indexes
each collection again at each chunk size (``OUT/<name>/units/``; BM25 only unless
``--units-mode hybrid``, which embeds every chunk again: slow on a small CPU) and prints
naive top-k's context recall at each budget and the gold-chunk recall at 10 / 40 / 100.

``--pages`` tries the page-level signal (hybrid top 100; ``--split train`` to choose,
``dev`` to confirm): pages ranked by their best fused chunk, then *two-stage*: every
chunk of the top P pages scored again by the same hybrid restricted to those pages
(BM25 over their chunks, dense cosines from the stored vectors, fused: a search with an
``id`` filter), packed as top-k, optionally each chunk with its next neighbour; and *page
prior*: the fused order with each chunk pushed down by lambda ranks per page above its
own; and the fused order re-ranked by the share of the question's idf mass a chunk
(with its heading path) holds. It runs on the default index and, where ``--units``
built it, the 125-token hybrid index, and prints the milliseconds the restricted search
adds per question.

``--granularity`` scores at one chunk size and packs at another (needs the 125-token
hybrid index of ``--units``): 250-token chunks in the order their 125-token units rank
(each unit mapped to the chunk holding its middle), that order fused by RRF with the
250-token ranking, and 125-token units fused by RRF with the rank of the 250-token chunk
around them (units of the top 250-token chunks added as candidates).

``--variants`` compares packings of the same fused top 40 (``--split train`` to choose,
``dev`` to confirm): whole chunks in rank order stopping at the first that does not fit
(``top-k``) or skipping it (``top-k skip``), :func:`pack`, every chunk trimmed to
its best sentence and two neighbours either side, one more chunk of an already chosen
page counted as half a rank lower (diversity across pages), k cut at the first fused
score gap over 30%, and chunks chosen by an expected-recall-per-token prior
(``rank^-1.3 / tokens``, the exponent fitted to the train splits' gold ranks). The
chunk variants count tokens as ``top-k`` does (texts and separators, no labels);
``pack`` pays for its labels.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.answer_corpora import HELD_OUT
from twokeys import IndexOptions, build_index, open_index
from twokeys.chunking import ChunkerConfig
from twokeys.engine import Index
from twokeys.evaluation.answers import (
    Piece,
    QAItem,
    context_recall,
    holds,
    load_qa,
    pieces_of,
)
from twokeys.filters import Filter
from twokeys.rag.evidence import idf_held
from twokeys.rag.packing import (
    EXCERPT_TOKENS,
    SEPARATOR,
    Budget,
    PackedContext,
    SubQueryHits,
    pack,
)
from twokeys.text.sentences import split_sentences
from twokeys.text.tokens import approx_token_counter
from twokeys.types import Chunk, Hit

ANSWERS = Path(__file__).resolve().parent / "answers"
BUDGETS = (1000, 2000, 4000)
DEPTH = 40


def index_of(root: Path) -> Path:
    path = root / "pages.twokeys"
    if not path.exists():
        print(f"indexing {root / 'pages'} (once) ...", file=sys.stderr, flush=True)
        build_index(root / "pages", path, IndexOptions())
    return path


def questions(name: str, split: str | None) -> list[QAItem]:
    items: list[QAItem] = []
    for qa in sorted(ANSWERS.glob(f"{name}-qa*.jsonl")):
        items += [
            replace(i, id=f"{qa.stem}:{i.id}") for i in load_qa(qa) if split in (None, i.split)
        ]
    return items


def collections(out: Path, held_out: bool = False) -> list[str]:
    """The collections under ``out`` that have pages and questions here: those the
    methods are fitted and chosen on, or with ``held_out`` those held out from every fit
    (:data:`benchmarks.answer_corpora.HELD_OUT`)."""
    return sorted(
        p.name
        for p in out.iterdir()
        if (p / "pages").is_dir()
        and any(ANSWERS.glob(f"{p.name}-qa*.jsonl"))
        and (p.name in HELD_OUT) == held_out
    )


@dataclass
class Scorers:
    """The query's idf weights and the dense model, for one index."""

    index: Index
    cache: dict[str, np.ndarray]

    def held(self, query: str) -> Callable[[str], float]:
        return idf_held(self.index, query)

    def cosines(self, query: str) -> Callable[[Sequence[str]], Sequence[float]] | None:
        if self.index.manifest.encoder is None:
            return None
        encoder = self.index.encoder
        q = encoder.encode_query(query)

        def cosines(texts: Sequence[str]) -> Sequence[float]:
            missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
            if missing:
                for text, vec in zip(missing, encoder.encode(missing, "document"), strict=True):
                    self.cache[text] = vec
            return [float(self.cache[t] @ q) for t in texts]

        return cosines


def topk_pieces(hits: Sequence[Hit], budget: int) -> list[Piece]:
    pieces: list[Piece] = []
    for hit in hits:
        candidate = [*pieces, Piece(hit.path, hit.text)]
        if approx_token_counter([SEPARATOR.join(p.text for p in candidate)])[0] > budget:
            break
        pieces = candidate
    return pieces


def pack_context(
    question: str,
    hits: Sequence[Hit],
    budget: int,
    held: Callable[[str], float],
    excerpts: bool = False,
) -> PackedContext:
    """``pack`` as ``ask`` calls it, ``budget`` context tokens; ``excerpts``: as with the
    learned order."""
    frame = Budget(total=budget + 1, answer=1, instructions=0, question=0, min_context=0)
    return pack(
        [SubQueryHits(question, tuple(hits))],
        frame,
        approx_token_counter,
        first=6,
        focus=lambda _q, text: held(text),
        excerpt_tokens=EXCERPT_TOKENS if excerpts else None,
    )


def pack_pieces(
    question: str,
    hits: Sequence[Hit],
    budget: int,
    held: Callable[[str], float],
    excerpts: bool = False,
) -> list[Piece]:
    """:func:`pack_context`'s blocks as pieces."""
    return list(pieces_of(pack_context(question, hits, budget, held, excerpts)))


def topk_skip_pieces(hits: Sequence[Hit], budget: int) -> list[Piece]:
    """Whole chunks in rank order, a chunk that does not fit skipped (not the end)."""
    return _fill(hits, range(len(hits)), budget)


def _cost(hit: Hit) -> int:
    # counted as top-k counts: the chunk's text and a separator, no label
    return approx_token_counter([f"{hit.text}{SEPARATOR}"])[0]


def _fill(hits: Sequence[Hit], order: Sequence[int], budget: int) -> list[Piece]:
    used, keep = 0, []
    for i in order:
        cost = _cost(hits[i])
        if used + cost <= budget:
            keep.append(i)
            used += cost
    return [Piece(hits[i].path, hits[i].text) for i in sorted(keep)]


def trimmed_pieces(
    hits: Sequence[Hit], budget: int, held: Callable[[str], float], around: int = 2
) -> list[Piece]:
    """Chunks in rank order, each cut to the sentence holding most of the query and
    ``around`` sentences either side."""
    pieces: list[Piece] = []
    used = 0
    for hit in hits:
        spans = split_sentences(hit.text)
        if not spans:
            continue
        scores = [held(hit.text[s:e]) for s, e in spans]
        best = max(range(len(spans)), key=lambda j: (scores[j], -j))
        lo, hi = max(0, best - around), min(len(spans), best + around + 1)
        text = hit.text[spans[lo][0] : spans[hi - 1][1]]
        cost = approx_token_counter([f"{text}{SEPARATOR}"])[0]
        if used + cost <= budget:
            pieces.append(Piece(hit.path, text))
            used += cost
    return pieces


def diverse_pieces(hits: Sequence[Hit], budget: int, penalty: float = 0.5) -> list[Piece]:
    """Top-k over ranks pushed down by ``penalty`` for each earlier chunk of the page."""
    seen: dict[str, int] = {}
    keys = []
    for i, hit in enumerate(hits):
        keys.append((i + penalty * seen.get(hit.doc_id, 0), i))
        seen[hit.doc_id] = seen.get(hit.doc_id, 0) + 1
    order = [i for _, i in sorted(keys)]
    return _fill(hits, order, budget)


def gap_pieces(hits: Sequence[Hit], budget: int, gap: float = 0.3) -> list[Piece]:
    """Top-k of the hits before the first fused score drop of more than ``gap``."""
    k = len(hits)
    for i in range(1, len(hits)):
        if hits[i].score < hits[i - 1].score * (1 - gap):
            k = i
            break
    return topk_skip_pieces(hits[:k], budget)


def density_pieces(hits: Sequence[Hit], budget: int, decay: float = 1.3) -> list[Piece]:
    """Chunks by expected recall per token: ``(rank + 1) ** -decay / tokens``."""
    order = sorted(range(len(hits)), key=lambda i: -((i + 1) ** -decay) / _cost(hits[i]))
    return _fill(hits, order, budget)


@dataclass(frozen=True)
class Retrieved:
    item: QAItem
    hits: tuple[Hit, ...]


def retrieve(index: Index, items: Sequence[QAItem]) -> list[Retrieved]:
    return [Retrieved(i, tuple(index.search(i.question, mode="hybrid", k=DEPTH))) for i in items]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.answers_context", description=__doc__
    )
    parser.add_argument("out", type=Path, help="folder of benchmarks.answer_corpora")
    parser.add_argument("--split", default="test")
    parser.add_argument("--budget", type=int, action="append")
    parser.add_argument("--only", action="append")
    parser.add_argument("--diagnose", action="store_true")
    parser.add_argument("--variants", action="store_true")
    parser.add_argument("--pages", action="store_true")
    parser.add_argument("--granularity", action="store_true")
    parser.add_argument("--units", help="chunk sizes in tokens, comma-separated")
    parser.add_argument("--units-mode", choices=("bm25", "hybrid"), default="bm25")
    args = parser.parse_args(argv)
    budgets = tuple(args.budget or BUDGETS)
    if args.diagnose:
        return diagnose(args.out, args.only, args.split, budgets)
    if args.pages:
        return pages(args.out, args.only, args.split, budgets)
    if args.granularity:
        return granularity(args.out, args.only, args.split, budgets)
    if args.units:
        sizes = [int(x) for x in args.units.split(",")]
        return units(args.out, args.only, args.split, budgets, sizes, args.units_mode)
    names = args.only or collections(args.out)
    runs: list[tuple[str, Scorers, list[Retrieved]]] = []
    for name in names:
        items = [i for i in questions(name, args.split) if i.answerable]
        index = open_index(index_of(args.out / name))
        start = time.perf_counter()
        runs.append((name, Scorers(index, {}), retrieve(index, items)))
        print(
            f"{name}: {len(items)} answerable {args.split} questions retrieved "
            f"in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    if args.variants:
        variants(runs, budgets)
        return 0
    print("| collection | questions | budget | top-k | pack |")
    print("|---|---|---|---|---|")
    totals: dict[tuple[int, str], list[float]] = {}
    for name, scorers, retrieved in runs:
        for budget in budgets:
            row: dict[str, list[float]] = {"top-k": [], "pack": []}
            for r in retrieved:
                q = r.item.question
                held = scorers.held(q)
                row["top-k"].append(context_recall(r.item.gold, topk_pieces(r.hits, budget)))
                row["pack"].append(
                    context_recall(r.item.gold, pack_pieces(q, r.hits, budget, held))
                )
            for system, values in row.items():
                totals.setdefault((budget, system), []).extend(values)
            print(
                f"| {name} | {len(retrieved)} | {budget:,} | "
                + " | ".join(f"{_mean(v):.2f}" for v in row.values())
                + " |",
                flush=True,
            )
    for budget in budgets:
        print(
            f"| all | {len(totals[(budget, 'top-k')])} | {budget:,} | "
            + " | ".join(f"{_mean(totals[(budget, s)]):.2f}" for s in ("top-k", "pack"))
            + " |"
        )
    return 0


def variants(runs: Sequence[tuple[str, Scorers, list[Retrieved]]], budgets: Sequence[int]) -> None:
    """The ``--variants`` table: recall of each packing at each budget, all collections."""
    Packer = Callable[[Retrieved, Callable[[str], float], int], list[Piece]]
    packers: dict[str, Packer] = {
        "top-k": lambda r, held, b: topk_pieces(r.hits, b),
        "top-k skip": lambda r, held, b: topk_skip_pieces(r.hits, b),
        "pack": lambda r, held, b: pack_pieces(r.item.question, r.hits, b, held),
        "trimmed +-2": lambda r, held, b: trimmed_pieces(r.hits, b, held),
        "page diversity": lambda r, held, b: diverse_pieces(r.hits, b),
        "k by score gap": lambda r, held, b: gap_pieces(r.hits, b),
        "expected recall/token": lambda r, held, b: density_pieces(r.hits, b),
    }
    print("| packing | " + " | ".join(f"{b:,}" for b in budgets) + " | mean |")
    print("|---|" + "---|" * (len(budgets) + 1))
    for label, packer in packers.items():
        means = []
        for budget in budgets:
            values = [
                context_recall(r.item.gold, packer(r, s.held(r.item.question), budget))
                for _, s, rs in runs
                for r in rs
            ]
            means.append(_mean(values))
        cells = " | ".join(f"{m:.3f}" for m in means)
        print(f"| {label} | {cells} | {_mean(means):.3f} |", flush=True)


PAGE_DEPTH = 100
TWO_STAGE = (3, 5)  # pages whose chunks are all scored again
PRIORS = (2.0, 5.0, 10.0)  # ranks a chunk is pushed down per page ranked above its own
HELD_WEIGHTS = (5.0, 10.0)  # ranks a chunk moves up per share of the question's idf it holds


def page_order(hits: Sequence[Hit]) -> list[str]:
    """Documents ranked by their best fused chunk."""
    best: dict[str, float] = {}
    for hit in hits:
        best[hit.chunk.doc_id] = max(best.get(hit.chunk.doc_id, float("-inf")), hit.score)
    return sorted(best, key=lambda d: -best[d])


def page_prior(hits: Sequence[Hit], weight: float) -> list[Hit]:
    """The fused order, each chunk pushed down ``weight`` ranks per page above its own."""
    rank = {d: n for n, d in enumerate(page_order(hits))}
    return sorted(hits, key=lambda h: (h.rank + weight * rank[h.chunk.doc_id], h.rank))


def with_next(index: Index, hits: Sequence[Hit], budget: int) -> list[Piece]:
    """Top-k where each chunk brings its next chunk in the page (overlap removed) when
    both fit, and comes alone when only it does."""
    pieces: list[Piece] = []
    used, taken = 0, set()
    for hit in hits:
        if hit.chunk.id in taken:
            continue
        nxt = index.passages([f"{hit.chunk.doc_id}#{hit.chunk.position + 1}"]).get(
            f"{hit.chunk.doc_id}#{hit.chunk.position + 1}"
        )
        text = hit.text
        if nxt is not None and nxt.id not in taken:
            text = hit.text + nxt.text[max(0, hit.chunk.end - nxt.start) :]
        if used + _tokens(text) > budget:
            text, nxt = hit.text, None
            if used + _tokens(text) > budget:
                break
        pieces.append(Piece(hit.path, text))
        used += _tokens(text)
        taken |= {hit.chunk.id} | ({nxt.id} if nxt is not None else set())
    return pieces


def _tokens(text: str) -> int:
    return approx_token_counter([f"{text}{SEPARATOR}"])[0]


def pages(out: Path, only: Sequence[str] | None, split: str, budgets: Sequence[int]) -> int:
    """The ``--pages`` table (module docstring)."""
    names = only or collections(out)
    for label, where in (("250 (default)", "pages.twokeys"), ("125", "units/125-hybrid.twokeys")):
        if not all((out / n / where).exists() for n in names):
            continue
        rows: dict[str, list[list[float]]] = {}
        added: list[float] = []
        for name in names:
            with open_index(out / name / where) as index:
                for item in (i for i in questions(name, split) if i.answerable):
                    hits = index.search(item.question, mode="hybrid", k=PAGE_DEPTH)
                    held = idf_held(index, item.question)
                    packers: dict[str, Callable[[int], list[Piece]]] = {
                        "top-k": partial(topk_pieces, hits),
                        "pack": partial(pack_pieces, item.question, hits[:DEPTH], held=held),
                    }
                    for p in TWO_STAGE:
                        start = time.perf_counter()
                        within = index.search(
                            item.question,
                            mode="hybrid",
                            k=PAGE_DEPTH,
                            filters=[Filter("id", "in", tuple(page_order(hits)[:p]))],
                        )
                        added.append(time.perf_counter() - start)
                        packers[f"two-stage, {p} pages"] = partial(topk_pieces, within)
                        packers[f"two-stage, {p} pages, + next chunk"] = partial(
                            with_next, index, within
                        )
                    for w in PRIORS:
                        ordered = page_prior(hits, w)
                        packers[f"page prior {w:g}"] = partial(topk_pieces, ordered)
                        packers[f"page prior {w:g}, pack"] = partial(
                            pack_pieces, item.question, ordered[:DEPTH], held=held
                        )
                    for w in HELD_WEIGHTS:
                        shares = [held(" ".join((*h.chunk.heading_path, h.text))) for h in hits]
                        order = sorted(range(len(hits)), key=lambda i: i - w * shares[i])
                        packers[f"re-ranked by idf share held (heading + text), {w:g}"] = partial(
                            topk_pieces, [hits[i] for i in order]
                        )
                    for key, packer in packers.items():
                        rows.setdefault(key, [[] for _ in budgets])
                        for n, budget in enumerate(budgets):
                            rows[key][n].append(context_recall(item.gold, packer(budget)))
        questions_n = len(rows["top-k"][0])
        print(f"\n{label}-token chunks, {split}, {questions_n} answerable questions\n")
        print("| packing | " + " | ".join(f"{b:,}" for b in budgets) + " | mean |")
        print("|---|" + "---|" * (len(budgets) + 1))
        for key, values in rows.items():
            means = [_mean(v) for v in values]
            cells = " | ".join(f"{m:.3f}" for m in means)
            print(f"| {key} | {cells} | {_mean(means):.3f} |", flush=True)
        added.sort()
        median_ms = 1000 * added[len(added) // 2]
        print(f"\nthe restricted search adds {median_ms:.1f} ms a question (median)")
    return 0


RRF_K = 60


def _doc_chunks(index: Index, doc: str, cache: dict[str, list[Chunk]]) -> list[Chunk]:
    """Every chunk of ``doc`` in position order (kept in ``cache``)."""
    if doc not in cache:
        chunks: list[Chunk] = []
        while True:
            got = index.passages([f"{doc}#{p}" for p in range(len(chunks), len(chunks) + 100)])
            chunks += sorted(got.values(), key=lambda c: c.position)
            if len(got) < 100:
                break
        cache[doc] = chunks
    return cache[doc]


def _holding(chunks: Sequence[Chunk], unit: Chunk) -> Chunk | None:
    middle = (unit.start + unit.end) // 2
    return next((c for c in chunks if c.start <= middle < c.end), None)


def _rrf(*rankings: Sequence[str]) -> list[str]:
    score: dict[str, float] = {}
    for ranking in rankings:
        for n, key in enumerate(ranking):
            score[key] = score.get(key, 0.0) + 1.0 / (RRF_K + n)
    return sorted(score, key=lambda k: -score[k])


def _chunk_pieces(chunks: Sequence[Chunk], paths: dict[str, str], budget: int) -> list[Piece]:
    pieces: list[Piece] = []
    for chunk in chunks:
        candidate = [*pieces, Piece(paths[chunk.doc_id], chunk.text)]
        if approx_token_counter([SEPARATOR.join(p.text for p in candidate)])[0] > budget:
            break
        pieces = candidate
    return pieces


def granularity(out: Path, only: Sequence[str] | None, split: str, budgets: Sequence[int]) -> int:
    """The ``--granularity`` table (module docstring)."""
    names = only or collections(out)
    rows: dict[str, list[list[float]]] = {}
    for name in names:
        big = open_index(index_of(out / name))
        small = open_index(out / name / "units" / "125-hybrid.twokeys")
        big_cache: dict[str, list[Chunk]] = {}
        small_cache: dict[str, list[Chunk]] = {}
        for item in (i for i in questions(name, split) if i.answerable):
            large = big.search(item.question, mode="hybrid", k=PAGE_DEPTH)
            units = small.search(item.question, mode="hybrid", k=2 * PAGE_DEPTH)
            paths = {h.chunk.doc_id: h.path for h in [*large, *units]}
            chunk_of: dict[str, Chunk] = {h.chunk.id: h.chunk for h in large}
            parent: dict[str, str] = {}
            unit_of: dict[str, Chunk] = {h.chunk.id: h.chunk for h in units}
            for h in units:
                holder = _holding(_doc_chunks(big, h.chunk.doc_id, big_cache), h.chunk)
                if holder is not None:
                    chunk_of[holder.id] = holder
                    parent[h.chunk.id] = holder.id
            for h in large:  # the units inside the top chunks are candidates too
                for u in _doc_chunks(small, h.chunk.doc_id, small_cache):
                    if _holding([h.chunk], u) is not None:
                        unit_of.setdefault(u.id, u)
                        parent.setdefault(u.id, h.chunk.id)
            large_ids = [h.chunk.id for h in large]
            mapped = list(dict.fromkeys(parent[h.chunk.id] for h in units if h.chunk.id in parent))
            by_parent = sorted(
                (u for u in unit_of if parent.get(u) in large_ids),
                key=lambda u: large_ids.index(parent[u]),
            )
            packers: dict[str, Callable[[int], list[Piece]]] = {
                "250 top-k": partial(topk_pieces, large),
                "125 top-k": partial(topk_pieces, units),
                "250 packed in the order of their best 125 unit": partial(
                    _chunk_pieces, [chunk_of[c] for c in mapped], paths
                ),
                "250 packed, RRF(250 rank, best-125-unit rank)": partial(
                    _chunk_pieces, [chunk_of[c] for c in _rrf(large_ids, mapped)], paths
                ),
                "125 packed, RRF(125 rank, rank of the 250 around it)": partial(
                    _chunk_pieces,
                    [unit_of[u] for u in _rrf([h.chunk.id for h in units], by_parent)],
                    paths,
                ),
            }
            for key, packer in packers.items():
                rows.setdefault(key, [[] for _ in budgets])
                for n, budget in enumerate(budgets):
                    rows[key][n].append(context_recall(item.gold, packer(budget)))
    print(f"{split}, {len(rows['250 top-k'][0])} answerable questions\n")
    print("| scored / packed | " + " | ".join(f"{b:,}" for b in budgets) + " | mean |")
    print("|---|" + "---|" * (len(budgets) + 1))
    for key, values in rows.items():
        means = [_mean(v) for v in values]
        print(f"| {key} | " + " | ".join(f"{m:.3f}" for m in means) + f" | {_mean(means):.3f} |")
    return 0


DEPTHS = (5, 10, 20, 40, 100)
SENSORS = ("bm25", "dense", "hybrid", "hybrid-rrf", "hybrid-zscore", "hybrid+proximity")


def _gold_rank(hits: Sequence[Hit], doc: str, fact: str) -> int | None:
    return next((n for n, h in enumerate(hits) if h.path == doc and holds(h.text, fact)), None)


def diagnose(out: Path, only: Sequence[str] | None, split: str, budgets: Sequence[int]) -> int:
    """The ``--diagnose`` tables (module docstring), over the answerable questions."""
    names = only or collections(out)
    ranks: dict[str, list[int | None]] = {m: [] for m in SENSORS}
    pages: list[int | None] = []
    best_sentence: list[bool] = []
    misses: dict[int, list[str]] = {b: [] for b in budgets}
    facts = 0
    for name in names:
        index = open_index(index_of(out / name))
        scorers = Scorers(index, {})
        for item in (i for i in questions(name, split) if i.answerable):
            runs = {m: index.search(item.question, mode=m, k=max(DEPTHS)) for m in ranks}
            hybrid = runs["hybrid"]
            held = scorers.held(item.question)
            packed = {b: pack_pieces(item.question, hybrid[:DEPTH], b, held) for b in budgets}
            for gold in item.gold:
                facts += 1
                for mode, hits in runs.items():
                    ranks[mode].append(_gold_rank(hits, gold.doc, gold.fact))
                pages.append(next((n for n, h in enumerate(hybrid) if h.path == gold.doc), None))
                rank = ranks["hybrid"][-1]
                if rank is not None:
                    best_sentence.append(_in_best_sentence(hybrid[rank].text, gold.fact, held))
                for budget, pieces in packed.items():
                    if context_recall((gold,), pieces):
                        continue
                    if rank is None:
                        misses[budget].append("not in top 100")
                    elif rank >= DEPTH:
                        misses[budget].append(f"rank {DEPTH + 1}-100")
                    else:
                        misses[budget].append("in top 40, not packed")
    print(f"{facts} gold facts of the answerable {split} questions ({', '.join(names)})\n")
    print("| sensor | " + " | ".join(f"@{d}" for d in DEPTHS) + " |")
    print("|---|" + "---|" * len(DEPTHS))
    for mode, found in ranks.items():
        cells = " | ".join(f"{_share(found, d):.2f}" for d in DEPTHS)
        print(f"| {mode} (gold chunk) | {cells} |")
    print("| hybrid (gold page) | " + " | ".join(f"{_share(pages, d):.2f}" for d in DEPTHS) + " |")
    share = sum(best_sentence) / len(best_sentence) if best_sentence else 0.0
    print(
        f"\nthe gold fact is in the sentence holding most of the question in "
        f"{sum(best_sentence)}/{len(best_sentence)} retrieved gold chunks ({share:.2f})\n"
    )
    print("| budget | missed by pack | not in top 100 | rank 41-100 | in top 40, not packed |")
    print("|---|---|---|---|---|")
    for budget, why in misses.items():
        counts = [why.count(k) for k in ("not in top 100", f"rank {DEPTH + 1}-100")]
        counts.append(why.count("in top 40, not packed"))
        print(f"| {budget:,} | {len(why)} | " + " | ".join(str(c) for c in counts) + " |")
    return 0


def units(
    out: Path,
    only: Sequence[str] | None,
    split: str,
    budgets: Sequence[int],
    sizes: Sequence[int],
    mode: str,
) -> int:
    """The ``--units`` table (module docstring)."""
    names = only or collections(out)
    print(f"| chunk tokens ({mode}) | " + " | ".join(f"top-k {b:,}" for b in budgets), end="")
    print(" | @10 | @40 | @100 |")
    print("|---|" + "---|" * (len(budgets) + 3))
    for size in sizes:
        chunker = ChunkerConfig(max_tokens=size, overlap_tokens=min(32, 32 * size // 250))
        options = IndexOptions(encoder="minilm" if mode == "hybrid" else None, chunker=chunker)
        recall: dict[int, list[float]] = {b: [] for b in budgets}
        ranks: list[int | None] = []
        for name in names:
            path = out / name / "units" / f"{size}-{mode}.twokeys"
            if mode == "hybrid" and options == IndexOptions():
                path = index_of(out / name)  # the default index is this one
            if not path.exists():
                print(f"indexing {name} at {size} tokens ...", file=sys.stderr, flush=True)
                build_index(out / name / "pages", path, options)
            with open_index(path) as index:
                for item in (i for i in questions(name, split) if i.answerable):
                    hits = index.search(item.question, mode=mode, k=max(DEPTHS))
                    for budget in budgets:
                        recall[budget].append(context_recall(item.gold, topk_pieces(hits, budget)))
                    ranks += [_gold_rank(hits, g.doc, g.fact) for g in item.gold]
        cells = [f"{_mean(v):.3f}" for v in recall.values()]
        cells += [f"{_share(ranks, d):.2f}" for d in (10, 40, 100)]
        print(f"| {size} | " + " | ".join(cells) + " |", flush=True)
    return 0


def _share(ranks: Sequence[int | None], depth: int) -> float:
    return sum(r is not None and r < depth for r in ranks) / len(ranks) if ranks else 0.0


def _in_best_sentence(text: str, fact: str, held: Callable[[str], float]) -> bool:
    spans = split_sentences(text)
    texts = [text[s:e] for s, e in spans]
    if not texts:
        return False
    best = max(range(len(texts)), key=lambda j: (held(texts[j]), -j))
    return holds(texts[best], fact)


if __name__ == "__main__":
    sys.exit(main())
