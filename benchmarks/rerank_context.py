"""The learned context re-ranker (:mod:`twokeys.rag.rerank_context`): fit and measure.

``python -m benchmarks.rerank_context train OUT [--write]`` reads the collections
``python -m benchmarks.answer_corpora OUT`` writes (their default hybrid indexes, built by
``python -m benchmarks.answers_context OUT`` once), retrieves every answerable *train*
question's fused top :data:`DEPTH` with ``explain`` evidence, labels each hit (relevant:
from a gold page and holding a gold fact), and fits a linear model over
:data:`twokeys.rag.rerank_context.NAMES` two ways: a listwise softmax (each question's
relevant hits against its others) and a pointwise logistic regression, each with an L2
penalty. The loss and the penalty are chosen by leave-one-collection-out on the train
splits (context recall of the re-ranked order packed by ``pack`` and by top-k at
1,000 / 2,000 / 4,000 tokens, mean over budgets and questions); the chosen one is then
refitted on all the train splits and, with ``--write``, written to the weights file the
module ships (``--save FILE`` writes it elsewhere). Nothing of the dev or test splits is
read.

``--with-kb`` adds a second kind of collection, the example support KB
(``examples/support-kb``: short product pages), with the split mapping
:func:`benchmarks.train_confidence.kb_split` (``heldout2`` .. ``heldout24`` are its train
split). The two kinds then weigh the same in the fit (each question's loss is weighted so
that each kind's weights sum to one half), the KB is one more held-out fold, and the
setting is chosen by the mean of the two kinds' held-out scores.

``python -m benchmarks.rerank_context eval OUT --split dev`` packs each answerable
question's hits four ways at each budget: the fused top 40 by top-k and by ``pack``
(today's), and the shipped model's order of the fused top :data:`DEPTH` by top-k and by
``pack`` (its first 40, with the excerpts ``ask`` packs the learned order with), per
collection and over all; it prints the gold-chunk recall at
5 / 10 / 20 / 40 before and after, and the CPU milliseconds the re-ranking adds per
question (features and scores; the ``explain`` search's extra cost measured separately
against the plain search). ``--json FILE`` writes the figures; ``--weights FILE`` measures
a model ``train --save FILE`` wrote instead of the shipped one; ``--with-kb`` adds the
support KB's questions of the split.

``python -m benchmarks.rerank_context misses OUT --split train`` says where the learned
order's misses are at each budget (``pack`` with the excerpts ``ask`` uses): each gold
fact not in the context is counted once, as outside the fused top :data:`DEPTH`, ranked
past the :data:`PACK_DEPTH` hits ``pack`` reads, never offered (the budget was spent
before its rank), skipped as over budget or as a near-duplicate of a block, or packed
with the fact cut out (:func:`miss_reason`). On train the order is the one fitted with
each collection held out (``--loss``/``--penalty``, the shipped setting by default); on
another split, the shipped model's.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize  # type: ignore[import-untyped, unused-ignore]  # no stubs

from benchmarks.answers_context import (
    BUDGETS,
    collections,
    index_of,
    pack_context,
    pack_pieces,
    questions,
    topk_pieces,
)
from benchmarks.train_confidence import KB, index_path, items_of
from twokeys import open_index
from twokeys.engine import Index
from twokeys.evaluation.answers import GoldFact, QAItem, context_recall, holds, pieces_of
from twokeys.rag.evidence import idf_held
from twokeys.rag.packing import PackedContext
from twokeys.rag.rerank_context import NAMES, WEIGHTS, Model, features, shipped_model
from twokeys.rag.sentence_reader import static_reader
from twokeys.types import Hit

DEPTH = 100  # hits re-ranked (the fused top 100 holds 0.96 of the gold chunks on test)
PACK_DEPTH = 40  # hits ``pack`` reads, as in benchmarks.answers_context
PENALTIES = (0.001, 0.01, 0.1, 1.0)
LOSSES = ("listwise", "logistic")
SHIPPED = ("listwise", 0.1)  # the loss and penalty ``train`` chose for the shipped weights
#: why a gold fact is not in the packed context (:func:`miss_reason`), in pipeline order
MISS_REASONS = (
    f"outside the fused top {DEPTH}",
    f"ranked {PACK_DEPTH + 1}-{DEPTH}",
    "never offered (budget spent)",
    "skipped: over budget",
    "skipped: near-duplicate",
    "packed, fact cut out",
)
Array = npt.NDArray[np.float64]


@dataclass
class Run:
    """One answerable question's fused hits, their features and labels."""

    name: str
    item: QAItem
    hits: list[Hit]
    x: Array
    y: Array
    ms: float  # CPU ms of features (idf weights and sentence cosines included)


def collect(
    out: Path, split: str, names: Sequence[str] | None = None, mode: str = "hybrid"
) -> list[Run]:
    """Every answerable question of ``split``: its fused top DEPTH (explained), features,
    labels. Cached per collection in ``OUT/<name>/rerank-<split>.pickle`` (delete it after
    re-indexing or changing the features)."""
    runs: list[Run] = []
    for name in names or collections(out):
        suffix = "" if mode == "hybrid" else f"-{mode}"
        cached = out / name / f"rerank-{split}{suffix}.pickle"
        if cached.exists():
            rows = pickle.loads(cached.read_bytes())  # plain tuples: loadable from any entry point
            if all(isinstance(t, tuple) and t[3].shape[1] == len(NAMES) for t in rows):
                runs += [Run(*t) for t in rows]
                continue
        got: list[Run] = []
        with open_index(_index(out, name)) as index:
            for item in (i for i in _questions(name, split) if i.answerable):
                hits = index.search(item.question, mode=mode, k=DEPTH, explain=True)
                start = time.process_time()
                held = idf_held(index, item.question)
                x = features(hits, held, static_reader(item.question))
                ms = 1000 * (time.process_time() - start)
                y = np.array(
                    [
                        float(any(h.path == g.doc and holds(h.text, g.fact) for g in item.gold))
                        for h in hits
                    ]
                )
                got.append(Run(name, item, list(hits), x, y, ms))
        cached.write_bytes(pickle.dumps([(r.name, r.item, r.hits, r.x, r.y, r.ms) for r in got]))
        print(f"{name}: {split} collected", file=sys.stderr, flush=True)
        runs += got
    return runs


def _index(out: Path, name: str) -> Path:
    """The hybrid index of collection ``name`` under ``out`` (the KB's built once there)."""
    return index_path(out, name, lexical=False) if name == KB else index_of(out / name)


def _questions(name: str, split: str) -> list[QAItem]:
    if name == KB:
        return [i for i in items_of(KB) if i.split == split]
    return questions(name, split)


def kind_weights(runs: Sequence[Run]) -> Array:
    """One weight per run: each kind (the support KB, the documentation) sums to the same
    share, the questions of a kind weighing alike; all ones with a single kind."""
    kb = np.array([r.name == KB for r in runs])
    if kb.all() or not kb.any():
        return np.ones(len(runs))
    n = len(runs)
    return np.asarray(np.where(kb, n / (2 * kb.sum()), n / (2 * (~kb).sum())), dtype=np.float64)


def fit(
    runs: Sequence[Run],
    loss: str,
    penalty: float,
    trained_on: str = "",
    weights: Array | None = None,
) -> Model:
    """A linear model on ``runs``' standardised features (``loss``: listwise softmax per
    question, or pointwise logistic), L2 ``penalty`` on the weights; ``weights`` (one per
    run, default equal) scale each question's share of the loss."""
    rows = np.vstack([r.x for r in runs])
    means = rows.mean(axis=0)
    scales = rows.std(axis=0)
    scales[scales < 1e-9] = 1.0
    per_run = np.ones(len(runs)) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = [n for n, r in enumerate(runs) if r.y.any()]
    xs = [(runs[n].x - means) / scales for n in keep]
    ys = [runs[n].y for n in keep]
    qw = per_run[keep] / per_run[keep].mean()
    allx, ally = np.vstack(xs), np.concatenate(ys)
    roww = np.concatenate([np.full(len(y), w) for y, w in zip(ys, qw, strict=True)])
    f = len(NAMES)

    def listwise(w: Array) -> tuple[float, Array]:
        total, grad = 0.0, np.zeros(f)
        for x, y, qweight in zip(xs, ys, qw, strict=True):
            s = x @ w
            s -= s.max()
            p = np.exp(s)
            p /= p.sum()
            pos = float((p * y).sum())
            total -= qweight * np.log(pos)
            # d/dw of -log(sum_pos p) = E_p[x] - E_{p|pos}[x]
            grad += qweight * (p @ x - ((p * y) / pos) @ x)
        n = len(xs)
        return total / n + penalty * float(w @ w), grad / n + 2 * penalty * w

    def logistic(wb: Array) -> tuple[float, Array]:
        w, b = wb[:f], wb[f]
        z = allx @ w + b
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))
        eps = 1e-12
        losses = ally * np.log(p + eps) + (1 - ally) * np.log(1 - p + eps)
        total = -float((roww * losses).sum() / roww.sum())
        g = roww * (p - ally) / roww.sum()
        grad = np.concatenate([allx.T @ g, [g.sum()]])
        grad[:f] += 2 * penalty * w
        return total + penalty * float(w @ w), grad

    if loss == "listwise":
        result = minimize(listwise, np.zeros(f), jac=True, method="L-BFGS-B")
        weights, bias = result.x, 0.0
    else:
        result = minimize(logistic, np.zeros(f + 1), jac=True, method="L-BFGS-B")
        weights, bias = result.x[:f], float(result.x[f])
    return Model(
        NAMES,
        tuple(float(m) for m in means),
        tuple(float(s) for s in scales),
        tuple(float(w) for w in weights),
        bias,
        trained_on,
    )


def reordered(run: Run, model: Model) -> list[Hit]:
    scores = model.scores(run.x)
    order = sorted(range(len(run.hits)), key=lambda i: (-float(scores[i]), i))
    return [run.hits[i] for i in order]


def recalls(
    runs: Sequence[Run], model: Model | None, out: Path, budgets: Sequence[int] = BUDGETS
) -> dict[str, list[list[float]]]:
    """Per packing, per budget, each question's context recall."""
    result: dict[str, list[list[float]]] = {}
    indexes = {}
    for run in runs:
        if run.name not in indexes:
            indexes[run.name] = open_index(_index(out, run.name))
        held = idf_held(indexes[run.name], run.item.question)
        orders = {"fused": run.hits}
        if model is not None:
            orders["re-ranked"] = reordered(run, model)
        for label, hits in orders.items():
            for packer in ("top-k", "pack"):
                key = f"{label} {packer}"
                result.setdefault(key, [[] for _ in budgets])
                for n, budget in enumerate(budgets):
                    if packer == "top-k":
                        pieces = topk_pieces(hits, budget)
                    else:
                        pieces = pack_pieces(
                            run.item.question,
                            hits[:PACK_DEPTH],
                            budget,
                            held,
                            excerpts=label == "re-ranked",  # as ask packs the learned order
                        )
                    result[key][n].append(context_recall(run.item.gold, pieces))
    for index in indexes.values():
        index.close()
    return result


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def gold_at(runs: Sequence[Run], model: Model | None, depths: Sequence[int]) -> list[float]:
    """Share of gold facts in a hit of their page holding them within each depth."""
    found = {d: 0 for d in depths}
    facts = 0
    for run in runs:
        hits = reordered(run, model) if model is not None else run.hits
        for g in run.item.gold:
            facts += 1
            rank = next(
                (n for n, h in enumerate(hits) if h.path == g.doc and holds(h.text, g.fact)), None
            )
            for d in depths:
                found[d] += rank is not None and rank < d
    return [found[d] / facts for d in depths]


def train(
    out: Path,
    write: bool,
    names: Sequence[str] | None = None,
    with_kb: bool = False,
    save: Path | None = None,
) -> int:
    runs = collect(out, "train", names)
    if with_kb:
        runs += collect(out, "train", [KB])
    names = sorted({r.name for r in runs})
    weights = kind_weights(runs)
    print(f"train: {len(runs)} answerable questions, {len(names)} collections", flush=True)
    kinds = {
        "documentation": [r.name != KB for r in runs],
        "support KB": [r.name == KB for r in runs],
    }
    kinds = {k: v for k, v in kinds.items() if any(v)}
    base = recalls(runs, None, out)
    for kind, mask in kinds.items():
        print(
            f"fused, {kind}: top-k "
            + " / ".join(f"{_mean(_pick(v, mask)):.3f}" for v in base["fused top-k"])
            + ", pack "
            + " / ".join(f"{_mean(_pick(v, mask)):.3f}" for v in base["fused pack"]),
            flush=True,
        )
    # held-out folds: one per collection (one question in five with a single collection)
    if len(names) > 1:
        folds = [{n for n, r in enumerate(runs) if r.name == name} for name in names]
    else:
        folds = [set(range(k, len(runs), 5)) for k in range(5)]
    order = [n for fold in folds for n in sorted(fold)]  # held-out figures come in this order
    best: tuple[float, str, float] | None = None
    for loss in LOSSES:
        for penalty in PENALTIES:
            held_out: dict[str, list[list[float]]] = {}
            for fold in folds:
                rest = [n for n in range(len(runs)) if n not in fold]
                model = fit([runs[n] for n in rest], loss, penalty, weights=weights[rest])
                part = recalls([runs[n] for n in sorted(fold)], model, out)
                for key, values in part.items():
                    held_out.setdefault(key, [[] for _ in BUDGETS])
                    for n, v in enumerate(values):
                        held_out[key][n] += v
            scores = []
            for kind, mask in kinds.items():
                ordered = [mask[n] for n in order]
                topk = [_mean(_pick(v, ordered)) for v in held_out["re-ranked top-k"]]
                packed = [_mean(_pick(v, ordered)) for v in held_out["re-ranked pack"]]
                scores.append(_mean([*topk, *packed]))
                print(
                    f"{loss} L2 {penalty:g}, {kind}: held out: top-k "
                    + " / ".join(f"{v:.3f}" for v in topk)
                    + ", pack "
                    + " / ".join(f"{v:.3f}" for v in packed)
                    + f" (mean {scores[-1]:.3f})",
                    flush=True,
                )
            score = _mean(scores)
            if best is None or score > best[0] + 1e-9:
                best = (score, loss, penalty)
    assert best is not None
    _, loss, penalty = best
    how = "; each kind weighted equally" if len(kinds) > 1 else ""
    model = fit(
        runs,
        loss,
        penalty,
        f"train splits of {', '.join(names)}; {loss}, L2 {penalty:g}{how}",
        weights=weights,
    )
    print(f"chosen: {loss}, L2 {penalty:g}")
    for name, w in zip(model.names, model.weights, strict=True):
        print(f"  {name:>18} {w:+.3f}")
    text = json.dumps(model.to_dict(), indent=1) + "\n"
    for path in ([WEIGHTS] if write else []) + ([save] if save is not None else []):
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


def _pick(values: Sequence[float], mask: Sequence[bool]) -> list[float]:
    return [v for v, m in zip(values, mask, strict=True) if m]


def evaluate(
    out: Path,
    split: str,
    json_path: Path | None,
    mode: str = "hybrid",
    weights: Path | None = None,
    with_kb: bool = False,
) -> int:
    runs = collect(out, split, mode=mode)
    if with_kb:
        runs += collect(out, split, [KB], mode=mode)
    model = Model.load(weights) if weights is not None else shipped_model()
    names = sorted({r.name for r in runs})
    report: dict[str, object] = {"split": split, "mode": mode, "budgets": list(BUDGETS)}
    report["collections"] = {}
    print(f"{split}, {mode} search: {len(runs)} answerable questions\n")
    print("| collection | questions | packing | " + " | ".join(f"{b:,}" for b in BUDGETS) + " |")
    print("|---|---|---|" + "---|" * len(BUDGETS))
    groups = [*names, "documentation", "all"] if KB in names and len(names) > 1 else [*names, "all"]
    for group in groups:
        part = [
            r
            for r in runs
            if group in ("all", r.name) or (group == "documentation" and r.name != KB)
        ]
        figures = recalls(part, model, out)
        means = {k: [round(_mean(v), 3) for v in vs] for k, vs in figures.items()}
        report["collections"][group] = {"questions": len(part), **means}  # type: ignore[index]
        for key, values in means.items():
            cells = " | ".join(f"{v:.3f}" for v in values)
            print(f"| {group} | {len(part)} | {key} | {cells} |", flush=True)
    depths = (5, 10, 20, 40)
    before, after = gold_at(runs, None, depths), gold_at(runs, model, depths)
    print("\ngold chunk @" + " / @".join(str(d) for d in depths))
    print("fused:      " + " / ".join(f"{v:.2f}" for v in before))
    print("re-ranked:  " + " / ".join(f"{v:.2f}" for v in after))
    feature_ms = sorted(r.ms for r in runs)
    score_ms = []
    for run in runs:
        start = time.process_time()
        reordered(run, model)
        score_ms.append(1000 * (time.process_time() - start))
    score_ms.sort()
    explain_ms = _explain_cost(out, runs[:40])
    median = feature_ms[len(feature_ms) // 2] + score_ms[len(score_ms) // 2]
    print(f"\nre-ranking CPU per question: {median:.1f} ms (median: features + scores)")
    print(f"explained search of {DEPTH} minus plain search of {PACK_DEPTH}: {explain_ms:.1f} ms")
    report["gold_chunk_at"] = {"depths": list(depths), "fused": before, "re-ranked": after}
    report["cpu_ms_per_question"] = {"rerank": round(median, 2), "explain": round(explain_ms, 2)}
    if json_path is not None:
        json_path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def _explain_cost(out: Path, runs: Sequence[Run]) -> float:
    """Median CPU ms of an explained search of DEPTH minus a plain one of PACK_DEPTH."""
    diffs = []
    by_name: dict[str, list[Run]] = {}
    for run in runs:
        by_name.setdefault(run.name, []).append(run)
    for name, part in by_name.items():
        with open_index(_index(out, name)) as index:
            for run in part:
                q = run.item.question
                index.search(q, mode="hybrid", k=PACK_DEPTH)  # warm the query's caches
                start = time.process_time()
                index.search(q, mode="hybrid", k=PACK_DEPTH)
                plain = time.process_time() - start
                start = time.process_time()
                index.search(q, mode="hybrid", k=DEPTH, explain=True)
                diffs.append(1000 * (time.process_time() - start - plain))
    diffs.sort()
    return diffs[len(diffs) // 2] if diffs else 0.0


def miss_reason(
    hits: Sequence[Hit], context: PackedContext, gold: GoldFact, depth: int = PACK_DEPTH
) -> str | None:
    """Why ``gold`` is not in ``context``, packed from the first ``depth`` of ``hits`` (a
    re-ranked pool): one of :data:`MISS_REASONS`; None when a block of its page holds it.
    The gold chunk is the first of ``hits`` from its page that holds the fact."""
    if context_recall((gold,), pieces_of(context)):
        return None
    rank = next(
        (n for n, h in enumerate(hits) if h.path == gold.doc and holds(h.text, gold.fact)), None
    )
    if rank is None:
        return MISS_REASONS[0]
    if rank >= depth:
        return MISS_REASONS[1]
    chunk = hits[rank].chunk.id
    if any(chunk in block.chunk_ids for block in context.blocks):
        return MISS_REASONS[5]
    reasons = [s.reason for s in context.skipped if s.chunk_id == chunk]
    if not reasons:
        return MISS_REASONS[2]
    return MISS_REASONS[4] if reasons[0].startswith("near-duplicate") else MISS_REASONS[3]


def held_out_orders(runs: Sequence[Run], loss: str, penalty: float) -> list[list[Hit]]:
    """Each run's hits in the order of a model fitted on the other collections' runs."""
    orders: list[list[Hit]] = [[] for _ in runs]
    for name in sorted({r.name for r in runs}):
        model = fit([r for r in runs if r.name != name], loss, penalty)
        for n, run in enumerate(runs):
            if run.name == name:
                orders[n] = reordered(run, model)
    return orders


def misses(out: Path, split: str, loss: str, penalty: float) -> int:
    """The ``misses`` table (module docstring)."""
    runs = collect(out, split)
    if split == "train":
        orders = held_out_orders(runs, loss, penalty)
        how = f"fitted with each collection held out ({loss}, L2 {penalty:g})"
    else:
        model = shipped_model()
        orders = [reordered(run, model) for run in runs]
        how = "the shipped model"
    facts = sum(len(r.item.gold) for r in runs)
    print(f"{split}: {len(runs)} answerable questions, {facts} gold facts; learned order: {how}\n")
    print("| budget | recall | missed | " + " | ".join(MISS_REASONS) + " |")
    print("|---|---|---|" + "---|" * len(MISS_REASONS))
    indexes: dict[str, Index] = {}
    for budget in BUDGETS:
        counts = dict.fromkeys(MISS_REASONS, 0)
        recall = []
        for run, hits in zip(runs, orders, strict=True):
            if run.name not in indexes:
                indexes[run.name] = open_index(_index(out, run.name))
            held = idf_held(indexes[run.name], run.item.question)
            context = pack_context(run.item.question, hits[:PACK_DEPTH], budget, held, True)
            recall.append(context_recall(run.item.gold, pieces_of(context)))
            for gold in run.item.gold:
                reason = miss_reason(hits, context, gold)
                if reason is not None:
                    counts[reason] += 1
        cells = " | ".join(str(c) for c in [sum(counts.values()), *counts.values()])
        print(f"| {budget:,} | {_mean(recall):.3f} | {cells} |", flush=True)
    for index in indexes.values():
        index.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.rerank_context", description=__doc__
    )
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("out", type=Path)
    t.add_argument("--write", action="store_true")
    t.add_argument("--only", action="append", help="collections (default: all)")
    t.add_argument("--with-kb", action="store_true", help="add the support KB as a second kind")
    t.add_argument("--save", type=Path, help="also write the fitted weights to this file")
    e = sub.add_parser("eval")
    e.add_argument("out", type=Path)
    e.add_argument("--split", default="dev")
    e.add_argument("--json", type=Path)
    e.add_argument("--mode", default="hybrid", help="search mode (the model is fitted on hybrid)")
    e.add_argument("--weights", type=Path, help="a model file (default: the shipped weights)")
    e.add_argument("--with-kb", action="store_true", help="add the support KB's questions")
    m = sub.add_parser("misses")
    m.add_argument("out", type=Path)
    m.add_argument("--split", default="train")
    m.add_argument("--loss", default=SHIPPED[0], choices=LOSSES)
    m.add_argument("--penalty", type=float, default=SHIPPED[1])
    args = parser.parse_args(argv)
    if args.command == "misses":
        return misses(args.out, args.split, args.loss, args.penalty)
    if args.command == "train":
        return train(args.out, args.write, args.only, args.with_kb, args.save)
    return evaluate(args.out, args.split, args.json, args.mode, args.weights, args.with_kb)


if __name__ == "__main__":
    sys.exit(main())
