"""The answer stages on a collection no model or threshold was fitted on.

``python -m benchmarks.heldout_answers OUT [--only NAME] [--json FILE]`` reads collections
``python -m benchmarks.answer_corpora OUT`` wrote that were held out from every fit
(:data:`benchmarks.answer_corpora.HELD_OUT`: the PostgreSQL, Apache, GNU Octave, Postfix
and libvirt manuals, whose questions were written after the methods of :mod:`twokeys.rag`
were chosen on the other four) and measures, with the *shipped* models only and nothing refitted:

* context recall at 1,000 / 2,000 / 4,000 tokens of naive top-k and of ``pack``, in the
  fused order (``ask``'s default) and in the learned order (``ask --order learned``:
  :mod:`twokeys.rag.rerank_context`, packed with excerpts), as
  :func:`benchmarks.rerank_context.recalls` counts it;
* the learned confidence (:mod:`twokeys.rag.confidence`, the shipped weights and operating
  point) as :func:`benchmarks.train_confidence.report` reports it: the risk-coverage curve
  over all questions (the issue's definition) and over the answerable ones, abstention at
  the operating point, and the rules' abstention on the same questions.

Every question of the collection is read (its ``train``, ``dev`` and ``test`` splits alike,
since none was fitted on), and its ``test`` split is shown on its own beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.answers_context import BUDGETS, collections
from benchmarks.rerank_context import Run, collect, recalls
from benchmarks.train_confidence import rows_of
from twokeys.rag import confidence
from twokeys.rag.rerank_context import shipped_model

SPLITS = ("train", "dev", "test")
COVERAGES = (0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def context_table(out: Path, name: str, runs: Sequence[Run]) -> dict[str, object]:
    """Print and return context recall by packing and budget, all questions and test."""
    figures: dict[str, object] = {}
    model = shipped_model()
    print(f"\ncontext recall, {name} (gold fact in a block of its page):\n")
    print("| questions | packing | " + " | ".join(f"{b:,}" for b in BUDGETS) + " |")
    print("|---|---|" + "---|" * len(BUDGETS))
    for label, part in (("all", runs), ("test", [r for r in runs if r.item.split == "test"])):
        by_packing = recalls(part, model, out)
        figures[label] = {
            "questions": len(part),
            **{k: [round(_mean(v), 3) for v in vs] for k, vs in by_packing.items()},
        }
        for key, values in by_packing.items():
            cells = " | ".join(f"{_mean(v):.3f}" for v in values)
            print(f"| {label} ({len(part)}) | {key} | {cells} |", flush=True)
    return figures


def _curve(scores: Sequence[float], good: Sequence[bool]) -> list[tuple[float, float, float]]:
    """(coverage, answered with gold passage, best possible) near each coverage target."""
    curve = confidence.risk_coverage(scores, good)
    points = []
    for target in COVERAGES:
        point = min(curve, key=lambda p: abs(p.coverage - target))
        bound = min(1.0, sum(good) / (point.coverage * len(good)))
        points.append((round(point.coverage, 3), round(1 - point.risk, 3), round(bound, 3)))
    return points


def confidence_table(
    out: Path, name: str, lexical: bool = False, weights: Path | None = None
) -> dict[str, object]:
    """The shipped confidence (or the model at ``weights``) on every question of ``name``
    and on its test split; ``lexical``: a BM25-only index and the model for it."""
    model = confidence.load(weights) if weights is not None else confidence.shipped(lexical)
    figures: dict[str, object] = {"threshold": model.threshold, "lexical": lexical}
    everything = rows_of(out, name, lexical)
    for label, rows in (
        ("all", everything),
        ("test", [r for r in everything if r.item.split == "test"]),
    ):
        scores = [model.probability(r.evidence.as_features()) for r in rows]
        answerable = [i for i, r in enumerate(rows) if r.item.answerable]
        curves = {
            "all questions": _curve(scores, [r.good for r in rows]),
            "answerable only": _curve(
                [scores[i] for i in answerable], [rows[i].good for i in answerable]
            ),
        }
        print(
            f"\nlearned confidence ({'BM25-only index, ' if lexical else ''}"
            f"p >= {model.threshold:.3f}), {name}, {label}: "
            f"{len(rows)} questions\n"
        )
        print(
            "| coverage | all: answered with gold | best | answerable only: coverage "
            "| answered with gold | best |"
        )
        print("|---|---|---|---|---|---|")
        for a, b in zip(curves["all questions"], curves["answerable only"], strict=True):
            print(
                f"| {a[0]:.2f} | {a[1]:.3f} | {a[2]:.3f} | {b[0]:.2f} | {b[1]:.3f} | {b[2]:.3f} |"
            )
        kept = [s >= model.threshold for s in scores]
        decisions = {
            "learned": kept,
            "rules": [r.rules for r in rows],
        }
        summary = {}
        for who, answers in decisions.items():
            pairs = list(zip(answers, rows, strict=True))
            answered = [r for a, r in pairs if a]
            summary[who] = {
                "coverage": round(len(answered) / len(rows), 3),
                "answered with gold": round(
                    sum(r.good for r in answered) / max(1, len(answered)), 3
                ),
                "unanswerable abstained": f"{sum(not (a or r.item.answerable) for a, r in pairs)}"
                f"/{len(rows) - len(answerable)}",
                "answerable abstained": f"{sum(not a and r.item.answerable for a, r in pairs)}"
                f"/{len(answerable)}",
                "right decisions": sum(r.good if a else not r.item.answerable for a, r in pairs),
            }
            print(f"{who}: {summary[who]}")
        figures[label] = {"curves": curves, "operating point": summary}
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.heldout_answers", description=__doc__
    )
    parser.add_argument("out", type=Path, help="folder of benchmarks.answer_corpora")
    parser.add_argument("--only", action="append", help="collection (default: all under OUT)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--lexical", action="store_true", help="the confidence on BM25-only indexes, no recall"
    )
    parser.add_argument("--weights", type=Path, help="a confidence model file (default: shipped)")
    args = parser.parse_args(argv)
    result: dict[str, object] = {}
    for name in args.only or collections(args.out, held_out=True):
        if args.lexical:
            result[name] = {"confidence": confidence_table(args.out, name, True, args.weights)}
            continue
        runs = [r for split in SPLITS for r in collect(args.out, split, [name])]
        result[name] = {
            "context_recall": context_table(args.out, name, runs),
            "budgets": list(BUDGETS),
            "confidence": confidence_table(args.out, name, weights=args.weights),
        }
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
