"""Candidate evidence for the answer confidence that ``ask`` does not gather, measured.

``python -m benchmarks.confidence_candidates OUT [--lexical]`` reads the collections and
questions of :mod:`benchmarks.train_confidence` (its cached rows: labels and the shipped
evidence) and, per question, evidence that the *context* holds the answer rather than
that retrieval found something (cached in ``OUT/<collection>/candidates[-bm25].pkl``):

* ``rr_top`` / ``rr_margin`` / ``rr_top_held``: the learned context re-ranker's
  (:mod:`twokeys.rag.rerank_context`, shipped weights, static sentence reader) best score
  over the fused top 100 (``explain`` evidence), its margin over the best chunk of another
  page, and the share of the question's idf mass that chunk holds;
* ``static_best`` / ``static_gap``: the static sentence reader's
  (:mod:`twokeys.rag.sentence_reader`) best sentence cosine among the fused top 10, and its
  gap to the best one of another page;
* ``sentence_gap`` / ``held_gap``: the same gap for the index's own dense model's sentence
  cosine and for the share of the question's idf mass a sentence holds (the sentences
  :func:`twokeys.rag.evidence.gather` reads: those of the first five fused hits);
* ``pages5``: the share of distinct pages among the first five fused hits.

Each is added alone to the model the confidence ships (without the page features, which
``train_confidence --compare`` measures) and cross-validated on the train and dev
questions (:func:`benchmarks.train_confidence.cross_validated`); the test splits are not
read.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import train_confidence as tc
from benchmarks.answers_context import DEPTH, Scorers, collections
from twokeys import open_index
from twokeys.rag.evidence import READ
from twokeys.rag.rerank_context import NAMES as RERANK_NAMES
from twokeys.rag.rerank_context import features as rerank_features
from twokeys.rag.rerank_context import shipped_model
from twokeys.rag.sentence_reader import static_reader
from twokeys.text.sentences import split_sentences

RERANK_DEPTH = 100  # as ask re-ranks (twokeys.rag.ask.RERANK_DEPTH)
STATIC_TOP = 10
CANDIDATES = (
    "rr_top",
    "rr_margin",
    "rr_top_held",
    "static_best",
    "static_gap",
    "sentence_gap",
    "held_gap",
    "pages5",
)
VERSION = 1


def gap(values: Sequence[float], pages: Sequence[str]) -> float:
    """The best value minus the best value of another page (minus the lowest when every
    value is of one page); 0 without values."""
    if not len(values):
        return 0.0
    best = int(np.argmax(values))
    others = [v for v, p in zip(values, pages, strict=True) if p != pages[best]]
    return float(values[best] - (max(others) if others else min(values)))


def measure(out: Path, name: str, lexical: bool) -> dict[str, dict[str, float]]:
    """The candidate features of each question of ``name`` (cached)."""
    cache = out / name / f"candidates{'-bm25' if lexical else ''}.pkl"
    items = tc.items_of(name)
    if cache.is_file():
        stored = pickle.loads(cache.read_bytes())
        if stored.get("version") == VERSION and all(i.id in stored["rows"] for i in items):
            return {i.id: stored["rows"][i.id] for i in items}
    rows: dict[str, dict[str, float]] = {}
    mode = "bm25" if lexical else "hybrid"
    with open_index(tc.index_path(out, name, lexical)) as index:
        scorers = Scorers(index, {})
        for n, item in enumerate(items, 1):
            q = item.question
            held = scorers.held(q)
            deep = index.search(q, mode=mode, k=RERANK_DEPTH, explain=True)
            read = static_reader(q)
            table = rerank_features(deep, held, read)
            scores = shipped_model().scores(table)
            pages = [h.chunk.doc_id for h in deep]
            row: dict[str, float] = {}
            if len(deep):
                best = int(np.argmax(scores))
                row["rr_top"] = float(scores[best])
                row["rr_margin"] = gap(list(scores), pages)
                row["rr_top_held"] = float(table[best, RERANK_NAMES.index("held")])
            else:
                row.update(rr_top=0.0, rr_margin=0.0, rr_top_held=0.0)
            static = list(read([h.text for h in deep[:STATIC_TOP]]))
            row["static_best"] = max(static, default=0.0)
            row["static_gap"] = gap(static, pages[:STATIC_TOP])
            hits = index.search(q, mode=mode, k=DEPTH)
            sentences = [
                (h.chunk.doc_id, h.text[s:e])
                for h in hits[:READ]
                for s, e in split_sentences(h.text)
            ]
            cosines = scorers.cosines(q)
            texts = [t for _, t in sentences]
            owners = [p for p, _ in sentences]
            row["sentence_gap"] = gap(list(cosines(texts)), owners) if cosines and texts else 0.0
            row["held_gap"] = gap([held(t) for t in texts], owners)
            first = [h.chunk.doc_id for h in hits[:5]]
            row["pages5"] = len(set(first)) / len(first) if first else 0.0
            rows[item.id] = row
            if n % 50 == 0:
                print(f"{name}: {n}/{len(items)}", file=sys.stderr, flush=True)
    cache.write_bytes(pickle.dumps({"version": VERSION, "rows": rows}))
    return rows


@dataclass(frozen=True)
class _Reader:
    extra: dict[str, dict[str, float]]

    def __call__(self, row: tc.Row) -> dict[str, float]:
        return {**row.evidence.as_features(), **self.extra[row.item.id]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.confidence_candidates", description=__doc__
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--lexical", action="store_true", help="BM25-only indexes")
    args = parser.parse_args(argv)
    names = [*collections(args.out), tc.KB]
    rows = [row for name in names for row in tc.rows_of(args.out, name, args.lexical)]
    extra = {k: v for name in names for k, v in measure(args.out, name, args.lexical).items()}
    read = _Reader(extra)
    base = [n for n in tc.features_of(args.lexical) if n not in tc.PAGE_FEATURES]
    print(f"| features | {' | '.join(tc.CV_COLUMNS)} |")
    print("|---|" + "---|" * len(tc.CV_COLUMNS))
    sets = {"shipped features less the page features": base}
    for name in CANDIDATES:
        if not (args.lexical and name == "sentence_gap"):  # no dense model
            sets[f"+ {name}"] = [*base, name]
    for label, features in sets.items():
        values = tc.cross_validated(rows, features, read=read)
        print(f"| {label} | {' | '.join(f'{v:.3f}' for v in values)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
