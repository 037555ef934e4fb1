"""The passage reader of :mod:`benchmarks.train_reader`, measured on the train and dev splits.

``python -m benchmarks.reader_measure OUT [--json FILE]`` reads the reader's logits that
``train_reader score`` cached (each question's fused top 40, hybrid) and the confidence's
cached rows (:func:`benchmarks.train_confidence.rows_of`: labels and the shipped
evidence), and prints, per split (train, dev; the test splits are not read):

1. separation: the AUROC of the reader's best logit over the fused top N (5, 10, 40) and
   over the chunks ``pack`` puts in the 2,000-token context, for good-to-answer against
   not (all questions, and answerable only) and for answerable against unanswerable,
   beside the AUROC of each shipped evidence feature and of the shipped confidence;
2. re-ranking: context recall at 1,000 / 2,000 / 4,000 tokens (top-k and ``pack``) of the
   fused top 40 re-ordered by the reader alone and mixed with the fused rank (reciprocal
   ranks, ``mix`` the reader's share), answerable questions;
3. cost: CPU ms of the reader per question (tokenising and the int8 graph) per passage
   window read.

``--cv`` cross-validates the confidence with the reader as a feature (train and dev
pooled; only for a reader that read no blind question); ``--dev-point`` fits it on
train, chooses its threshold on dev and reads dev (``--split test``: the same models read
on test, once, after a choice). ``--tag=-<folder>`` reads another reader's cached logits.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import train_confidence as tc
from benchmarks.answers_context import (
    BUDGETS,
    DEPTH,
    collections,
    index_of,
    pack_context,
    questions,
    topk_pieces,
)
from twokeys import open_index
from twokeys.evaluation.answers import context_recall, pieces_of
from twokeys.rag import confidence
from twokeys.rag.evidence import idf_held
from twokeys.types import Hit

TOPS = (5, 10, 40)
MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)  # the reader's share in the mixed order (1: reader alone)
RRF_K = 10
EVIDENCE = (
    "lexical",
    "dense_peak",
    "agreement",
    "held_passage",
    "held_sentence",
    "cosine_sentence",
    "margin",
)


def scores_of(out: Path, split: str, tag: str = "") -> dict[str, dict[str, Any]]:
    """The reader's cached logits of ``split`` (``tag``: ``-<folder>`` of another reader)."""
    found: dict[str, dict[str, Any]] = {}
    for name in collections(out):
        found.update(pickle.loads((out / name / f"reader{tag}-{split}.pkl").read_bytes()))
    return found


def mixed(hits: Sequence[Hit], logits: Sequence[float], mix: float) -> list[Hit]:
    """The hits by ``mix`` x the reader's reciprocal rank + (1 - mix) x the fused one."""
    by_reader = sorted(range(len(hits)), key=lambda i: (-logits[i], i))
    rank = {i: r for r, i in enumerate(by_reader)}
    score = [mix / (RRF_K + rank[i] + 1) + (1 - mix) / (RRF_K + i + 1) for i in range(len(hits))]
    return [hits[i] for i in sorted(range(len(hits)), key=lambda i: (-score[i], i))]


def measure(out: Path, split: str, tag: str = "") -> dict[str, Any]:
    scored = scores_of(out, split, tag)
    rows = {
        r.item.id: r
        for name in collections(out)
        for r in tc.rows_of(out, name)
        if r.item.split == split
    }
    model = confidence.shipped()
    feats: dict[str, list[float]] = {}
    good, answerable = [], []
    recall: dict[str, list[list[float]]] = {}
    ms, nwin = [], []
    for name in collections(out):
        with open_index(index_of(out / name)) as index:
            for item in questions(name, split):
                row, got = rows[item.id], scored[item.id]
                logits = got["logits"]
                hits = index.search(item.question, mode="hybrid", k=DEPTH)
                assert [f"{h.chunk.doc_id}#{h.chunk.position}" for h in hits] == got["chunks"]
                held = idf_held(index, item.question)
                context = pack_context(item.question, hits, tc.BUDGET, held)
                packed = {c for b in context.blocks for c in b.chunk_ids}
                for n in TOPS:
                    feats.setdefault(f"reader top {n}", []).append(max(logits[:n], default=-20.0))
                in_pack = [v for v, c in zip(logits, got["chunks"], strict=True) if c in packed]
                feats.setdefault("reader over pack 2,000", []).append(max(in_pack, default=-20.0))
                ev = row.evidence.as_features()
                for e in EVIDENCE:
                    feats.setdefault(e, []).append(ev[e])
                feats.setdefault("shipped confidence", []).append(model.probability(ev))
                good.append(row.good)
                answerable.append(item.answerable)
                ms.append(got["ms"])
                nwin.append(got["windows"])
                if not item.answerable:
                    continue
                for mix in MIXES:
                    order = mixed(hits, logits, mix)
                    for packer in ("top-k", "pack"):
                        key = f"mix {mix:g} {packer}"
                        recall.setdefault(key, [[] for _ in BUDGETS])
                        for b, budget in enumerate(BUDGETS):
                            if packer == "top-k":
                                pieces = topk_pieces(order, budget)
                            else:
                                pieces = pieces_of(pack_context(item.question, order, budget, held))
                            recall[key][b].append(context_recall(item.gold, pieces))
    ans = np.array(answerable)
    result: dict[str, Any] = {
        "split": split,
        "questions": len(good),
        "answerable": int(ans.sum()),
        "good": int(sum(good)),
        "auroc": {},
    }
    for key, values in feats.items():
        v = np.array(values)
        result["auroc"][key] = {
            "good vs not": tc.auroc(list(v), good),
            "good vs not, answerable": tc.auroc(
                list(v[ans]), [g for g, a in zip(good, answerable, strict=True) if a]
            ),
            "answerable vs unanswerable": tc.auroc(list(v), answerable),
        }
    result["recall"] = {k: [round(float(np.mean(x)), 3) for x in v] for k, v in recall.items()}
    result["reader ms per question (40 chunks)"] = float(np.median(ms))
    result["windows per question (40 chunks)"] = float(np.median(nwin))
    result["ms per window"] = float(np.sum(ms) / np.sum(nwin))
    return result


def cross_validated(out: Path, tag: str = "") -> dict[str, list[float]]:
    """The confidence's features with and without ``reader`` (the reader's best logit over
    the fused top 5, the passages :func:`twokeys.rag.evidence.gather` reads), repeated
    five-fold cross-validation on the documentation's train and dev questions pooled
    (:func:`benchmarks.train_confidence.cross_validated`; the support KB's questions are
    not scored by the reader here, so its columns read 0). Only for a reader trained
    without the blind sets' questions: otherwise its train scores are in sample."""
    rows = [r for name in collections(out) for r in tc.rows_of(out, name)]
    rows = [r for r in rows if r.item.split in ("train", "dev")]
    top = {
        k: max(v["logits"][:5], default=-20.0)
        for split in ("train", "dev")
        for k, v in scores_of(out, split, tag).items()
    }

    def read(row: tc.Row) -> dict[str, float]:
        return {**row.evidence.as_features(), "reader": top[row.item.id]}

    base = tc.features_of(False)
    return {
        "shipped features": tc.cross_validated(rows, base, read=read),
        "+ reader": tc.cross_validated(rows, [*base, "reader"], read=read),
        "+ reader - held_sentence - cosine_sentence": tc.cross_validated(
            rows,
            [*(n for n in base if n not in ("held_sentence", "cosine_sentence")), "reader"],
            read=read,
        ),
    }


#: the confidence's two refits: the shipped features, and those plus ``reader``
REFITS = (("shipped features", False), ("+ reader", True))


def refitted(
    out: Path, top: dict[str, float]
) -> tuple[list[tc.Row], dict[str, tuple[confidence.Model, float]]]:
    """The documentation's evidence rows, and the confidence fitted on their train
    questions with and without ``reader`` (``top``: each question's best reader logit
    over the fused top 5), each with its threshold chosen on dev (most right decisions)."""
    rows = [r for name in collections(out) for r in tc.rows_of(out, name)]
    train = [r for r in rows if r.item.split == "train"]
    dev = [r for r in rows if r.item.split == "dev"]
    read = partial(with_reader, top=top)
    base = tc.features_of(False)
    models = {}
    for label, reader in REFITS:
        names = [*base, "reader"] if reader else base
        model = confidence.fit([read(r) for r in train], [r.good for r in train], names)
        models[label] = (model, tc.choose_threshold(model, dev, read=read))
    return rows, models


def best_logits(out: Path, splits: Sequence[str], tag: str = "") -> dict[str, float]:
    """Each question's best cached reader logit over its fused top 5, for ``splits``."""
    return {
        k: max(v["logits"][:5], default=-20.0)
        for split in splits
        for k, v in scores_of(out, split, tag).items()
    }


def with_reader(row: tc.Row, top: dict[str, float]) -> dict[str, float]:
    """The row's evidence features and its ``reader`` logit from ``top``."""
    return {**row.evidence.as_features(), "reader": top[row.item.id]}


def on_dev(out: Path, tag: str = "", read_on: str = "dev") -> dict[str, dict[str, float]]:
    """The confidence fitted on the documentation's train questions with and without
    ``reader`` (best logit over the fused top 5), its threshold chosen on dev (most right
    decisions), read on dev: right decisions, unanswerable and answerable abstained, and
    the share answered with the gold passage at 80% of all and of answerable questions.
    A reader trained on the train splits scores them in sample (its weight is then too
    high); dev is out of sample either way. ``read_on="test"``: the same models and
    thresholds read on the test splits (once, after a choice)."""
    top = best_logits(out, ("train", "dev", *((read_on,) if read_on != "dev" else ())), tag)
    read = partial(with_reader, top=top)
    rows, models = refitted(out, top)
    final = [r for r in rows if r.item.split == read_on]
    dev = [r for r in rows if r.item.split == "dev"]
    result = {}
    for label, (model, t) in models.items():
        dev_right = sum((model.probability(read(r)) >= t) == r.good for r in dev)
        p = [model.probability(read(r)) for r in final]
        good = [r.good for r in final]
        right_final = sum((q >= t) == g for q, g in zip(p, good, strict=True))
        ans = [r.item.answerable for r in final]
        answerable_p = [q for q, a in zip(p, ans, strict=True) if a]
        answerable_good = [g for g, a in zip(good, ans, strict=True) if a]
        curve = confidence.risk_coverage(p, good)
        curve_a = confidence.risk_coverage(answerable_p, answerable_good)
        result[label] = {
            "threshold": t,
            "right decisions on dev": dev_right,
            "right decisions": right_final,
            "questions": len(final),
            "unanswerable abstained": sum(q < t for q, a in zip(p, ans, strict=True) if not a),
            "unanswerable": sum(not a for a in ans),
            "answerable abstained": sum(q < t for q in answerable_p),
            "answerable": len(answerable_p),
            "AUROC good": tc.auroc(p, good),
            "AUROC answerable vs not": tc.auroc(p, ans),
            "gold at 80% of all": 1 - min(curve, key=lambda x: abs(x.coverage - 0.8)).risk,
            "gold at 80% of answerable": 1 - min(curve_a, key=lambda x: abs(x.coverage - 0.8)).risk,
        }
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reader_measure", description=__doc__
    )
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--split",
        action="append",
        choices=("train", "dev", "test"),
        help="test: once, after a choice",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dev-point", action="store_true", help="fit on train, choose on dev")
    parser.add_argument("--cv", action="store_true", help="cross-validate the confidence with it")
    parser.add_argument("--tag", default="", help="another reader's cached logits: -<its folder>")
    args = parser.parse_args(argv)
    if args.dev_point:
        for label, values in on_dev(args.out, args.tag, (args.split or ["dev"])[0]).items():
            print(label, json.dumps({k: round(v, 3) for k, v in values.items()}))
        return 0
    if args.cv:
        print(f"| features | {' | '.join(tc.CV_COLUMNS)} |")
        for label, values in cross_validated(args.out, args.tag).items():
            print(f"| {label} | {' | '.join(f'{v:.3f}' for v in values)} |")
        return 0
    report = [measure(args.out, s, args.tag) for s in args.split or ("train", "dev")]
    for r in report:
        print(
            f"\n{r['split']}: {r['questions']} questions, {r['answerable']} answerable, "
            f"{r['good']} good"
        )
        print("| feature | good vs not | good vs not, answerable | answerable vs unanswerable |")
        print("|---|---|---|---|")
        for key, v in r["auroc"].items():
            print(f"| {key} | " + " | ".join(f"{x:.3f}" for x in v.values()) + " |")
        print("| order | " + " | ".join(f"{b:,}" for b in BUDGETS) + " |")
        for key, v in r["recall"].items():
            print(f"| {key} | " + " | ".join(f"{x:.3f}" for x in v) + " |")
        print(
            f"reader: {r['reader ms per question (40 chunks)']:.0f} ms CPU per question "
            f"({r['windows per question (40 chunks)']:.0f} windows), "
            f"{r['ms per window']:.1f} ms a window"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
