"""Fit the answer confidence (:mod:`twokeys.rag.confidence`) and report its risk-coverage.

``python -m benchmarks.train_confidence OUT [--write]`` reads the collections of
``python -m benchmarks.answer_corpora OUT`` and every question of the blind answer sets
(``benchmarks/answers/``), retrieves each once (hybrid, top 40), packs the default
sentence windows at 2,000 context tokens, and reads its retrieval evidence
(:func:`twokeys.rag.evidence.gather`). A question is *good to answer* when it is
answerable and a gold fact is in that context; unanswerable questions and questions
whose gold passage retrieval missed are not.

* The logistic regression is fitted on the ``train`` splits only;
* the operating point (the probability under which ``ask`` abstains) is chosen on the
  ``dev`` splits: the threshold with the best share of right decisions (answer a good
  question, abstain on the others);
* the ``test`` splits are only reported: the risk-coverage curve (risk: the share of
  answered questions without a gold passage in their context), the chosen point, and
  per collection the share of unanswerable questions abstained on.

``--write`` stores the model in ``src/twokeys/rag/confidence_weights.json``. Retrieval
and evidence are cached in ``OUT/<collection>/evidence.pkl``.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.answers_context import (
    DEPTH,
    Scorers,
    index_of,
    questions,
    window_pieces,
)
from twokeys import open_index
from twokeys.evaluation.answers import QAItem, context_recall
from twokeys.rag import confidence
from twokeys.rag.evidence import NAMES, Evidence, gather
from twokeys.rag.grounding import retrieval_confidence
from twokeys.rag.windows import WindowOptions

BUDGET = 2000
# the context a label reads: windows as first set (the caches were built with these);
# ask's defaults were then chosen on train by benchmarks.answers_context --grid
LABEL_WINDOWS = WindowOptions(depth=30, before=1, after=1)


@dataclass(frozen=True)
class Row:
    collection: str
    item: QAItem
    evidence: Evidence
    recall: float  # of the windows context at BUDGET
    rules: bool  # the rule-based verdict (twokeys.rag.grounding) says answerable

    @property
    def good(self) -> bool:
        return self.item.answerable and self.recall > 0


def rows_of(out: Path, name: str) -> list[Row]:
    cache = out / name / "evidence.pkl"
    items = questions(name, None)
    if cache.is_file():
        with open(cache, "rb") as fh:
            stored: dict[str, Row] = pickle.load(fh)
        if all(i.id in stored for i in items):
            return [stored[i.id] for i in items]
    rows = []
    with open_index(index_of(out / name)) as index:
        scorers = Scorers(index, {})
        for n, item in enumerate(items, 1):
            q = item.question
            hits = index.search(q, mode="hybrid", k=DEPTH)
            cosines = scorers.cosines(q)
            held = scorers.held(q)
            pieces = window_pieces(hits, BUDGET, held, cosines, LABEL_WINDOWS)
            evidence = gather(index, q, hits, cosines=cosines)
            verdict = retrieval_confidence(index, q, [h.text for h in hits[:6]]).answerable
            rows.append(Row(name, item, evidence, context_recall(item.gold, pieces), verdict))
            if n % 20 == 0:
                print(f"{name}: {n}/{len(items)}", file=sys.stderr, flush=True)
    with open(cache, "wb") as fh:
        pickle.dump({r.item.id: r for r in rows}, fh)
    return rows


def choose_threshold(model: confidence.Model, rows: Sequence[Row]) -> float:
    scores = [model.probability(r.evidence.as_features()) for r in rows]
    best, best_right = 0.5, -1
    for t in sorted(set(scores)):
        right = sum((s >= t) == r.good for s, r in zip(scores, rows, strict=True))
        if right > best_right:
            best, best_right = t, right
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.train_confidence", description=__doc__
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--only", action="append", help="collection (repeatable) [default: all]")
    args = parser.parse_args(argv)
    names = args.only or sorted(p.name for p in args.out.iterdir() if (p / "pages").is_dir())
    rows = [row for name in names for row in rows_of(args.out, name)]
    split = {s: [r for r in rows if r.item.split == s] for s in ("train", "dev", "test")}
    model = confidence.fit(
        [r.evidence.as_features() for r in split["train"]],
        [r.good for r in split["train"]],
        NAMES,
        l2=args.l2,
    )
    threshold = choose_threshold(model, split["dev"])
    model = confidence.Model(
        model.names,
        model.means,
        model.scales,
        model.weights,
        model.bias,
        threshold,
        f"train splits of benchmarks/answers ({len(split['train'])} questions, "
        f"{', '.join(names)}); threshold on dev ({len(split['dev'])})",
    )
    print("| feature | weight (per sd) |\n|---|---|")
    for n, w in zip(model.names, model.weights, strict=True):
        print(f"| {n} | {w:+.2f} |")
    print(f"\noperating point (dev): p >= {threshold:.3f}\n")
    report(model, split["test"], names)
    if args.write:
        import json

        confidence.WEIGHTS.write_text(
            json.dumps(model.to_dict(), indent=2) + "\n", encoding="utf-8"
        )
        print(f"wrote {confidence.WEIGHTS}", file=sys.stderr)
    return 0


def report(model: confidence.Model, rows: Sequence[Row], names: Sequence[str]) -> None:
    scores = [model.probability(r.evidence.as_features()) for r in rows]
    good = [r.good for r in rows]
    curve = confidence.risk_coverage(scores, good)
    print("risk-coverage on test (all collections):\n")
    print("| coverage | risk | answered with gold passage |\n|---|---|---|")
    for target in (0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        point = min(curve, key=lambda p: abs(p.coverage - target))
        print(f"| {point.coverage:.2f} | {point.risk:.3f} | {1 - point.risk:.3f} |")
    rules = [r for r in rows if r.rules]
    print(
        f"\nthe rule-based abstention (grounding) on the same questions: coverage "
        f"{len(rules) / len(rows):.2f}, answered with gold passage "
        f"{sum(r.good for r in rules) / max(1, len(rules)):.3f}, unanswerable abstained "
        f"{sum(not r.rules for r in rows if not r.item.answerable)}/"
        f"{sum(not r.item.answerable for r in rows)}"
    )
    print("\nat the operating point, per collection (test):\n")
    print(
        "| collection | questions | coverage | answered with gold passage "
        "| unanswerable abstained | good questions answered |"
    )
    print("|---|---|---|---|---|---|")
    for name in [*names, "all"]:
        chosen = [
            (s, r) for s, r in zip(scores, rows, strict=True) if name in ("all", r.collection)
        ]
        answered = [r for s, r in chosen if s >= model.threshold]
        unanswerable = [(s, r) for s, r in chosen if not r.item.answerable]
        good_rows = [(s, r) for s, r in chosen if r.good]
        precision = sum(r.good for r in answered) / len(answered) if answered else 0.0
        abstained = sum(s < model.threshold for s, _ in unanswerable)
        kept = sum(s >= model.threshold for s, _ in good_rows)
        print(
            f"| {name} | {len(chosen)} | {len(answered) / len(chosen):.2f} | {precision:.3f} "
            f"| {abstained}/{len(unanswerable)} | {kept}/{len(good_rows)} |"
        )


if __name__ == "__main__":
    sys.exit(main())
