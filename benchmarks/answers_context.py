"""Context recall by budget on the blind answer sets: is the gold passage in the context?

``python -m benchmarks.answers_context OUT [--split test] [--budget 1000 ...]`` reads the
collections ``python -m benchmarks.answer_corpora OUT`` writes (indexing each into
``OUT/<name>/pages.twokeys`` once, default MiniLM encoder) and the questions of
``benchmarks/answers/<name>-qa*.jsonl`` of one split, retrieves each question once
(hybrid, fused top 40) and packs the same hits three ways at each context budget:

* ``top-k``: whole chunks in rank order while they fit (the naive baseline);
* ``pack``: :func:`twokeys.rag.packing.pack` (fair rounds, merging neighbours,
  near-duplicate removal, a cut that keeps the query's best sentence);
* ``windows``: :func:`twokeys.rag.windows.pack_windows` (query-aware sentence windows
  from many chunks).

Context recall: the share of an answerable question's gold facts found verbatim in a
block from the gold page (:func:`twokeys.evaluation.answers.context_recall`); budgets
are context tokens (:func:`~twokeys.text.tokens.approx_token_counter`).
``--grid`` tries window settings on the chosen split (use ``--split train``) and prints
each one's mean recall over the budgets.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from twokeys import IndexOptions, build_index, open_index
from twokeys.engine import Index
from twokeys.evaluation.answers import Piece, QAItem, context_recall, load_qa
from twokeys.rag.packing import SEPARATOR, Budget, SubQueryHits, pack
from twokeys.rag.windows import WindowOptions, pack_windows
from twokeys.text.tokens import approx_token_counter
from twokeys.types import Hit

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


@dataclass
class Scorers:
    """The query's idf weights and the dense model, for one index."""

    index: Index
    cache: dict[str, np.ndarray]

    def held(self, query: str) -> Callable[[str], float]:
        analyzer, lexical = self.index.analyzer, self.index.backend.lexical
        terms = [t for t in dict.fromkeys(analyzer.query_terms(query)) if lexical.has_term(t)]
        weights = dict(zip(terms, lexical.idf(terms), strict=True))
        total = sum(weights.values()) or 1.0

        def held(text: str) -> float:
            words = set(analyzer.index_terms(text))
            return sum(w for t, w in weights.items() if t in words) / total

        return held

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


def pack_pieces(
    question: str, hits: Sequence[Hit], budget: int, held: Callable[[str], float]
) -> list[Piece]:
    frame = Budget(total=budget + 1, answer=1, instructions=0, question=0, min_context=0)
    context = pack(
        [SubQueryHits(question, tuple(hits))],
        frame,
        approx_token_counter,
        first=6,
        focus=lambda _q, text: held(text),
    )
    return [Piece(b.path, b.render()) for b in context.blocks]


def window_pieces(
    hits: Sequence[Hit],
    budget: int,
    held: Callable[[str], float],
    cosines: Callable[[Sequence[str]], Sequence[float]] | None,
    options: WindowOptions,
) -> list[Piece]:
    blocks = pack_windows(
        hits, budget, approx_token_counter, held=held, cosines=cosines, options=options
    )
    return [Piece(b.path, b.render()) for b in blocks]


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
    parser.add_argument("--grid", action="store_true")
    args = parser.parse_args(argv)
    budgets = tuple(args.budget or BUDGETS)
    names = args.only or sorted(p.name for p in args.out.iterdir() if (p / "pages").is_dir())
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
    if args.grid:
        grid = itertools.product((20, 30), (0, 1), (0, 1), (0.5, 1.0))
        for depth, before, after, prior in grid:
            options = WindowOptions(depth=depth, before=before, after=after, prior=prior)
            recalls = [
                context_recall(
                    r.item.gold,
                    window_pieces(
                        r.hits, b, s.held(r.item.question), s.cosines(r.item.question), options
                    ),
                )
                for _, s, rs in runs
                for r in rs
                for b in budgets
            ]
            print(f"{options}: {_mean(recalls):.3f}", flush=True)
        return 0
    print("| collection | questions | budget | top-k | pack | windows |")
    print("|---|---|---|---|---|---|")
    totals: dict[tuple[int, str], list[float]] = {}
    for name, scorers, retrieved in runs:
        for budget in budgets:
            row: dict[str, list[float]] = {"top-k": [], "pack": [], "windows": []}
            for r in retrieved:
                q = r.item.question
                held = scorers.held(q)
                row["top-k"].append(context_recall(r.item.gold, topk_pieces(r.hits, budget)))
                row["pack"].append(
                    context_recall(r.item.gold, pack_pieces(q, r.hits, budget, held))
                )
                pieces = window_pieces(r.hits, budget, held, scorers.cosines(q), WindowOptions())
                row["windows"].append(context_recall(r.item.gold, pieces))
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
            + " | ".join(f"{_mean(totals[(budget, s)]):.2f}" for s in ("top-k", "pack", "windows"))
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
