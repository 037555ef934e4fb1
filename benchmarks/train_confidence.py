"""Fit the answer confidence (:mod:`twokeys.rag.confidence`) and report its risk-coverage.

``python -m benchmarks.train_confidence OUT [--write]`` reads the collections of
``python -m benchmarks.answer_corpora OUT`` and every question of the blind answer sets
(``benchmarks/answers/``), retrieves each once (hybrid, top 40), packs it as ``ask``
does (:func:`twokeys.rag.packing.pack`) at 2,000 context tokens, and reads its retrieval
evidence (:func:`twokeys.rag.evidence.gather`). A question is *good to answer* when it is
answerable and a gold fact is in that context; unanswerable questions and questions
whose gold passage retrieval missed are not.

* The logistic regression is fitted on the ``train`` splits only;
* the operating point (the probability under which ``ask`` abstains) is chosen on the
  ``dev`` splits: the threshold with the best share of right decisions (answer a good
  question, abstain on the others);
* the ``test`` splits are only reported: the risk-coverage curve (risk: the share of
  answered questions without a gold passage in their context), the chosen point, and
  per collection the share of unanswerable questions abstained on.

Two kinds of collection are read, so that one threshold is not fitted to one kind:
the documentation collections above and the example support KB
(``examples/support-kb``: short product pages, questions in customers' words; indexed
into ``OUT/support-kb/``). The support KB has no ``train`` split of its own: its
``heldout2`` to ``heldout24`` files (questions written blind over earlier sessions to judge
the grounding *rules*, never the learned model) are its train split here, its ``dev`` is
dev, and its ``test`` and ``heldout`` (the ones ``tests/`` check) are test.

``--lexical`` fits the model an index without a dense model uses (BM25-only indexes of
the same collections, ``bm25`` retrieval; the dense features read 0 there, so the
hybrid model cannot be used) and writes ``confidence_weights_lexical.json``.

``--calibrated`` reads each collection's features relative to questions made from its
own passages (:mod:`benchmarks.confidence_calibration`; kept in
``OUT/<collection>/calibration.json``) in several ways and compares them with the raw
features (``calibrated``).

``--compare`` cross-validates the model with and without the page features
(``page_share``, ``page_margin``) on the train and dev questions (:func:`cross_validated`;
:mod:`benchmarks.confidence_candidates` measures other candidates the same way): the
BM25-only model reads them, the hybrid one does not (:func:`features_of`).

``--write`` stores the model in ``src/twokeys/rag/confidence_weights.json``. Retrieval,
evidence and labels are cached in ``OUT/<collection>/evidence-pack.pkl``
(``evidence-pack-bm25.pkl``; :func:`evidence_cache`), named by the context the labels
read, so the rows of ``evidence.pkl``, labelled from sentence windows, are not reused.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from benchmarks import confidence_calibration as calibration
from benchmarks.answers_context import (
    DEPTH,
    Scorers,
    collections,
    index_of,
    pack_pieces,
    questions,
)
from twokeys import IndexOptions, build_index, open_index
from twokeys.evaluation.answers import QAItem, context_recall, load_qa
from twokeys.rag import confidence
from twokeys.rag.evidence import NAMES, Evidence, gather
from twokeys.rag.grounding import retrieval_confidence

BUDGET = 2000
#: the context a cached row's label read (``pack``; sentence windows before, whose rows were
#: cached without a name): part of the cache's file name
LABELS = "pack"


@dataclass(frozen=True)
class Row:
    collection: str
    item: QAItem
    evidence: Evidence
    recall: float  # of the packed context at BUDGET
    rules: bool  # the rule-based verdict (twokeys.rag.grounding) says answerable

    @property
    def good(self) -> bool:
        return self.item.answerable and self.recall > 0


SUPPORT_KB = Path(__file__).resolve().parents[1] / "examples" / "support-kb"
KB = "support-kb"


def kb_split(split: str) -> str:
    """The support KB's split as this benchmark uses it (module docstring)."""
    if split in ("dev", "test"):
        return split
    return "test" if split == "heldout" else "train"


def items_of(name: str) -> list[QAItem]:
    if name != KB:
        return questions(name, None)
    return [replace(i, split=kb_split(i.split)) for i in load_qa(SUPPORT_KB / "qa.jsonl")]


def index_path(out: Path, name: str, lexical: bool) -> Path:
    root = out / name
    if name == KB and not (root / "pages").exists():
        root.mkdir(parents=True, exist_ok=True)
        (root / "pages").symlink_to(SUPPORT_KB / "docs")
    if not lexical:
        return index_of(root)
    path = root / "pages-bm25.twokeys"
    if not path.exists():
        build_index(root / "pages", path, IndexOptions(encoder=None))
    return path


def evidence_cache(out: Path, name: str, lexical: bool = False) -> Path:
    """Where :func:`rows_of` keeps a collection's rows, named by :data:`LABELS`."""
    return out / name / f"evidence-{LABELS}{'-bm25' if lexical else ''}.pkl"


def rows_of(out: Path, name: str, lexical: bool = False) -> list[Row]:
    cache = evidence_cache(out, name, lexical)
    items = items_of(name)
    if cache.is_file():
        with open(cache, "rb") as fh:
            stored: dict[str, Row] = pickle.load(fh)
        if all(i.id in stored and _complete(stored[i.id].evidence) for i in items):
            return [replace(stored[i.id], item=i) for i in items]
    rows = []
    with open_index(index_path(out, name, lexical)) as index:
        scorers = Scorers(index, {})
        for n, item in enumerate(items, 1):
            q = item.question
            hits = index.search(q, mode="bm25" if lexical else "hybrid", k=DEPTH)
            cosines = scorers.cosines(q)
            held = scorers.held(q)
            pieces = pack_pieces(q, hits, BUDGET, held)
            evidence = gather(index, q, hits, cosines=cosines)
            verdict = retrieval_confidence(index, q).answerable
            rows.append(Row(name, item, evidence, context_recall(item.gold, pieces), verdict))
            if n % 20 == 0:
                print(f"{name}: {n}/{len(items)}", file=sys.stderr, flush=True)
    with open(cache, "wb") as fh:
        pickle.dump({r.item.id: r for r in rows}, fh)
    return rows


def _complete(evidence: Evidence) -> bool:
    """Whether a cached row holds every feature :data:`NAMES` names (rows cached before a
    feature was added are gathered again)."""
    return all(hasattr(evidence, n) for n in NAMES)


DENSE_FEATURES = ("dense_peak", "dense_height", "agreement", "cosine_sentence")
#: the features between pages (``page_share``, ``page_margin``): measured with repeated
#: five-fold cross-validation on the train and dev questions, they lift the BM25-only model
#: on every count and not the hybrid one (README "Confidence."), which does not read them
PAGE_FEATURES = ("page_share", "page_margin")


def features_of(lexical: bool) -> list[str]:
    """The features the hybrid model (``lexical`` False) or the BM25-only one reads."""
    if lexical:
        return [n for n in NAMES if n not in DENSE_FEATURES]
    return [n for n in NAMES if n not in PAGE_FEATURES]


def pseudo_features(
    out: Path, name: str, lexical: bool
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """The features of the collection's pseudo- and mixed questions
    (:func:`benchmarks.confidence_calibration.asked`), measured once and kept in
    ``OUT/<collection>/pseudo-features[-bm25].json``."""
    stored = _pseudo(out, name, lexical)
    return stored["answered"], stored["mixed"]


def heading_levels(out: Path, name: str, lexical: bool) -> dict[str, float]:
    """The median of each calibrated feature over the collection's heading questions."""
    headings = _pseudo(out, name, lexical)["headings"]
    return {n: float(np.median([f[n] for f in headings])) for n in calibration.CALIBRATED}


def _pseudo(out: Path, name: str, lexical: bool) -> dict[str, list[dict[str, float]]]:
    path = out / name / ("pseudo-features-bm25.json" if lexical else "pseudo-features.json")
    if path.is_file():
        stored = json.loads(path.read_text(encoding="utf-8"))
        complete = "headings" in stored and all(
            n in f for k in ("answered", "mixed", "headings") for f in stored[k] for n in NAMES
        )
        if stored.get("samples") == calibration.SAMPLES and complete:
            return {k: stored[k] for k in ("answered", "mixed", "headings")}
    with open_index(index_path(out, name, lexical)) as index:
        answered, mixed = calibration.asked(index)
        mode = "bm25" if lexical else "hybrid"
        headings = [
            gather(index, q, index.search(q, mode=mode, k=DEPTH)).as_features()
            for q in calibration.heading_questions(index)
        ]
    data = {"answered": answered, "mixed": mixed, "headings": headings}
    path.write_text(json.dumps({"samples": calibration.SAMPLES, **data}) + "\n", encoding="utf-8")
    return data


def calibration_of(out: Path, name: str, lexical: bool) -> calibration.Calibration:
    """The collection's calibration (:mod:`benchmarks.confidence_calibration`)."""
    return calibration.from_features(*pseudo_features(out, name, lexical))


READINGS = (
    "raw",
    "minus answered",
    "minus mixed",
    "minus midpoint",
    "mixed 0, answered 1",
    "minus headings",
)


def reading(
    name: str, level: calibration.Level, value: float, headings: Mapping[str, float]
) -> float:
    """``value`` of one feature read the ``name`` way (:data:`READINGS`)."""
    if name == "minus answered":
        return value - level.answered
    if name == "minus mixed":
        return value - level.mixed
    if name == "minus midpoint":
        return value - (level.answered + level.mixed) / 2
    if name == "mixed 0, answered 1":
        return level.read(value)
    if name == "minus headings":
        return value - headings[level.name]
    return value


def auroc(scores: Sequence[float], good: Sequence[bool]) -> float:
    """The chance that a good question scores above one that is not (ties half)."""
    pos = [s for s, g in zip(scores, good, strict=True) if g]
    neg = [s for s, g in zip(scores, good, strict=True) if not g]
    if not pos or not neg:
        return 0.0
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))


def _abstained(
    rows: Sequence[Row],
    scores: Sequence[float],
    chosen: Sequence[int],
    answerable: bool,
    cut: float,
) -> str:
    own = [i for i in chosen if rows[i].item.answerable == answerable]
    return f"{sum(scores[i] < cut for i in own)}/{len(own)}"


def _area(rows: Sequence[Row], scores: Sequence[float], chosen: Sequence[int]) -> str:
    return f"{auroc([scores[i] for i in chosen], [rows[i].good for i in chosen]):.3f}"


def calibrated(out: Path, names: Sequence[str], rows: Sequence[Row], lexical: bool) -> None:
    """The ``--calibrated`` table: each reading of the features relative to the
    collection's own pseudo-questions (:mod:`benchmarks.confidence_calibration`), the
    model refitted on train and its threshold chosen on dev for each, then on test: the
    ranking of all questions pooled (AUROC: does one scale now serve both kinds?), and
    the abstentions at the chosen point."""
    levels = {name: calibration_of(out, name, lexical) for name in names}
    heads = {name: heading_levels(out, name, lexical) for name in names}
    for name, known in levels.items():
        cells = ", ".join(f"{x.name} {x.answered:.2f}/{x.mixed:.2f}" for x in known.levels)
        print(f"{name} (answered/mixed medians): {cells}")
    print(
        "\n| reading | threshold (dev) | AUROC test, all | documentation | support KB "
        "| KB answerable abstained | KB unanswerable abstained "
        "| docs answerable abstained | docs unanswerable abstained | docs: gold at 80% |"
    )
    print("|---|" + "---|" * 9)
    features = features_of(lexical)
    for name in READINGS:
        read = [
            replace(
                r,
                evidence=Evidence(
                    **{
                        **r.evidence.as_features(),
                        **{
                            x.name: reading(
                                name, x, getattr(r.evidence, x.name), heads[r.collection]
                            )
                            for x in levels[r.collection].levels
                        },
                    }
                ),
            )
            for r in rows
        ]
        split, model = fit_on_train(read, features)
        threshold = choose_threshold(model, split["dev"])
        test = split["test"]
        scores = [model.probability(r.evidence.as_features()) for r in test]
        kb = [i for i, r in enumerate(test) if r.collection == KB]
        docs = [i for i, r in enumerate(test) if r.collection != KB]

        curve = confidence.risk_coverage([scores[i] for i in docs], [test[i].good for i in docs])
        at80 = min(curve, key=lambda p: abs(p.coverage - 0.8))
        print(
            f"| {name} | {threshold:.3f} | {_area(test, scores, range(len(test)))} "
            f"| {_area(test, scores, docs)} | {_area(test, scores, kb)} "
            f"| {_abstained(test, scores, kb, True, threshold)} "
            f"| {_abstained(test, scores, kb, False, threshold)} "
            f"| {_abstained(test, scores, docs, True, threshold)} "
            f"| {_abstained(test, scores, docs, False, threshold)} | {1 - at80.risk:.3f} |",
            flush=True,
        )
    per_collection_threshold(out, names, rows, lexical, features)


PERCENTILES = tuple(range(50, 100, 5))


def per_collection_threshold(
    out: Path, names: Sequence[str], rows: Sequence[Row], lexical: bool, features: list[str]
) -> None:
    """The raw model with a threshold of each collection's own: the q-th percentile of
    the model's probability on the collection's mixed questions (q chosen on dev)."""
    split, model = fit_on_train(rows, features)
    mixed = {
        name: [model.probability(f) for f in pseudo_features(out, name, lexical)[1]]
        for name in names
    }

    def right(q: int, chosen: Sequence[Row]) -> int:
        cuts = {n: float(np.percentile(mixed[n], q)) for n in names}
        return sum(
            (model.probability(r.evidence.as_features()) >= cuts[r.collection]) == r.good
            for r in chosen
        )

    q = max(PERCENTILES, key=lambda p: (right(p, split["dev"]), -p))
    cuts = {n: float(np.percentile(mixed[n], q)) for n in names}
    test = split["test"]
    scores = [model.probability(r.evidence.as_features()) for r in test]
    kb = [i for i, r in enumerate(test) if r.collection == KB]
    docs = [i for i, r in enumerate(test) if r.collection != KB]

    def abstained(chosen: list[int], answerable: bool) -> str:
        own = [i for i in chosen if test[i].item.answerable == answerable]
        return f"{sum(scores[i] < cuts[test[i].collection] for i in own)}/{len(own)}"

    print(
        f"| raw, each collection's threshold at the {q}th percentile of its mixed "
        f"questions (q on dev; {', '.join(f'{n} {c:.2f}' for n, c in cuts.items())}) "
        f"| - | - | - | - | {abstained(kb, True)} | {abstained(kb, False)} "
        f"| {abstained(docs, True)} | {abstained(docs, False)} | - |"
    )


def choose_threshold(
    model: confidence.Model,
    rows: Sequence[Row],
    read: Callable[[Row], Mapping[str, float]] | None = None,
) -> float:
    """The probability threshold with the most right decisions on ``rows`` (the lowest
    such one); ``read(row)``: the row's features (default: its evidence's)."""
    read = read or _evidence_features
    scores = [model.probability(read(r)) for r in rows]
    best, best_right = 0.5, -1
    for t in sorted(set(scores)):
        right = sum((s >= t) == r.good for s, r in zip(scores, rows, strict=True))
        if right > best_right:
            best, best_right = t, right
    return best


def fit_on_train(
    rows: Sequence[Row], features: Sequence[str], l2: float = 1.0
) -> tuple[dict[str, list[Row]], confidence.Model]:
    """``rows`` by split, and the model fitted on the train split's (the support KB and
    the documentation collections weighed alike: :func:`balanced`)."""
    split = {s: [r for r in rows if r.item.split == s] for s in ("train", "dev", "test")}
    model = confidence.fit(
        [r.evidence.as_features() for r in split["train"]],
        [r.good for r in split["train"]],
        features,
        l2=l2,
        weights=balanced(split["train"]),
    )
    return split, model


def balanced(rows: Sequence[Row]) -> list[float]:
    """Sample weights under which the support KB and the documentation collections weigh
    the same in the fit (the KB's train split is several times larger)."""
    kb = sum(r.collection == KB for r in rows)
    docs = len(rows) - kb
    if not kb or not docs:
        return [1.0] * len(rows)
    return [len(rows) / 2 / (kb if r.collection == KB else docs) for r in rows]


#: what :func:`cross_validated` reports, in order
CV_COLUMNS = (
    "docs AUROC",
    "docs answerable AUROC",
    "KB AUROC",
    "KB answerable AUROC",
    "docs answerable: gold at 80%",
)


def cross_validated(
    rows: Sequence[Row],
    features: Sequence[str],
    *,
    folds: int = 5,
    repeats: int = 4,
    read: Callable[[Row], Mapping[str, float]] | None = None,
) -> list[float]:
    """:data:`CV_COLUMNS` for a model of ``features``, each question of the train and dev
    splits scored by a model fitted on the other folds (weighted as :func:`balanced`),
    averaged over ``repeats`` shuffles (seeded: deterministic). The test splits are not
    read. ``read(row)``: the row's features (default: its evidence's)."""
    if read is None:
        read = _evidence_features
    pool = [r for r in rows if r.item.split in ("train", "dev")]
    kinds = (
        lambda r: r.collection != KB,
        lambda r: r.collection != KB and r.item.answerable,
        lambda r: r.collection == KB,
        lambda r: r.collection == KB and r.item.answerable,
    )
    found = []
    for repeat in range(repeats):
        fold = np.empty(len(pool), dtype=np.int64)
        fold[np.random.RandomState(repeat).permutation(len(pool))] = np.arange(len(pool)) % folds
        scores = np.zeros(len(pool))
        for f in range(folds):
            train = [r for r, g in zip(pool, fold, strict=True) if g != f]
            model = confidence.fit(
                [read(r) for r in train], [r.good for r in train], features, weights=balanced(train)
            )
            for i in np.flatnonzero(fold == f):
                scores[i] = model.probability(read(pool[i]))
        values = []
        for kind in kinds:
            chosen = [i for i, r in enumerate(pool) if kind(r)]
            values.append(auroc([scores[i] for i in chosen], [pool[i].good for i in chosen]))
        chosen = [i for i in range(len(pool)) if kinds[1](pool[i])]
        curve = confidence.risk_coverage(
            [scores[i] for i in chosen], [pool[i].good for i in chosen]
        )
        values.append(1 - min(curve, key=lambda p: abs(p.coverage - 0.8)).risk)
        found.append(values)
    return [float(v) for v in np.mean(found, axis=0)]


def _evidence_features(row: Row) -> dict[str, float]:
    return row.evidence.as_features()


def compare(rows: Sequence[Row], lexical: bool) -> None:
    """The ``--compare`` table: the model without the page features and with each of them
    (:data:`PAGE_FEATURES`), cross-validated on the train and dev splits."""
    kept = [n for n in NAMES if not (lexical and n in DENSE_FEATURES)]
    sets = {"without the page features": [n for n in kept if n not in PAGE_FEATURES]}
    for extra in (*((n,) for n in PAGE_FEATURES), PAGE_FEATURES):
        sets[f"+ {' + '.join(extra)}"] = [n for n in kept if n not in PAGE_FEATURES or n in extra]
    print(f"| features | {' | '.join(CV_COLUMNS)} |")
    print("|---|" + "---|" * len(CV_COLUMNS))
    for label, features in sets.items():
        values = cross_validated(rows, features)
        print(f"| {label} | {' | '.join(f'{v:.3f}' for v in values)} |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.train_confidence", description=__doc__
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--lexical", action="store_true", help="fit the BM25-only model")
    parser.add_argument("--no-kb", action="store_true", help="documentation collections only")
    parser.add_argument(
        "--calibrated",
        action="store_true",
        help="read each collection's features relative to its own pseudo-questions",
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="cross-validate the model with and without the page features (train and dev)",
    )
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--only", action="append", help="collection (repeatable) [default: all]")
    args = parser.parse_args(argv)
    names = args.only or collections(args.out)
    if not args.no_kb and KB not in names:
        names.append(KB)
    rows = [row for name in names for row in rows_of(args.out, name, args.lexical)]
    if args.calibrated:
        calibrated(args.out, names, rows, args.lexical)
        return 0
    if args.compare:
        compare(rows, args.lexical)
        return 0
    features = features_of(args.lexical)
    split, model = fit_on_train(rows, features, l2=args.l2)
    threshold = choose_threshold(model, split["dev"])
    kind = "BM25-only indexes, bm25 retrieval" if args.lexical else "hybrid"
    model = confidence.Model(
        model.names,
        model.means,
        model.scales,
        model.weights,
        model.bias,
        threshold=threshold,
        trained_on=f"{kind}; train splits ({len(split['train'])} questions: {', '.join(names)}; "
        f"the two kinds weighted equally); threshold on dev ({len(split['dev'])})",
    )
    print("| feature | weight (per sd) |\n|---|---|")
    for n, w in zip(model.names, model.weights, strict=True):
        print(f"| {n} | {w:+.2f} |")
    print(f"\noperating point (dev): p >= {threshold:.3f}\n")
    report(model, split["test"], names)
    if args.write:
        import json

        path = confidence.LEXICAL_WEIGHTS if args.lexical else confidence.WEIGHTS
        path.write_text(json.dumps(model.to_dict(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0


def report(model: confidence.Model, rows: Sequence[Row], names: Sequence[str]) -> None:
    scores = [model.probability(r.evidence.as_features()) for r in rows]
    docs = [i for i, r in enumerate(rows) if r.collection != KB]
    for label, chosen in (("documentation collections", docs),):
        good = [rows[i].good for i in chosen]
        curve = confidence.risk_coverage([scores[i] for i in chosen], good)
        print(f"risk-coverage on test ({label}, {len(chosen)} questions):\n")
        print("| coverage | risk | answered with gold passage | best possible |")
        print("|---|---|---|---|")
        for target in (0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
            point = min(curve, key=lambda p: abs(p.coverage - target))
            bound = min(1.0, sum(good) / (point.coverage * len(chosen)))
            print(
                f"| {point.coverage:.2f} | {point.risk:.3f} | {1 - point.risk:.3f} | {bound:.3f} |"
            )
    answerable = [i for i in docs if rows[i].item.answerable]
    good = [rows[i].good for i in answerable]
    curve = confidence.risk_coverage([scores[i] for i in answerable], good)
    print(
        f"\nrisk-coverage on test, answerable questions only (documentation collections, "
        f"{len(answerable)} questions; coverage: the share of the answerable questions "
        "answered):\n"
    )
    print("| coverage of answerable | answered with gold passage | best possible |")
    print("|---|---|---|")
    for target in (0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        point = min(curve, key=lambda p: abs(p.coverage - target))
        bound = min(1.0, sum(good) / (point.coverage * len(answerable)))
        print(f"| {point.coverage:.2f} | {1 - point.risk:.3f} | {bound:.3f} |")
    decided = [(scores[i] >= model.threshold, rows[i]) for i in docs]
    right = sum(r.good if answered else not r.item.answerable for answered, r in decided)
    print(
        f"\nright decisions at the operating point, an abstention on an unanswerable question "
        f"counted as right (documentation collections): {right}/{len(docs)} "
        f"({right / len(docs):.3f})"
    )
    rules = [r for r in rows if r.rules and r.collection != KB]
    print(
        f"\nthe rule-based abstention (grounding) on the same questions: coverage "
        f"{len(rules) / len(docs):.2f}, answered with gold passage "
        f"{sum(r.good for r in rules) / max(1, len(rules)):.3f}, unanswerable abstained "
        f"{sum(not r.rules for r in rows if not r.item.answerable and r.collection != KB)}/"
        f"{sum(not r.item.answerable for r in rows if r.collection != KB)}, right decisions "
        f"{sum(r.good if r.rules else not r.item.answerable for r in rows if r.collection != KB)}"
        f"/{len(docs)}"
    )
    print("\nat the operating point, per collection (test):\n")
    print(
        "| collection | questions | coverage | answered with gold passage "
        "| unanswerable abstained | answerable abstained | good questions answered |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in [*names, "documentation (all)"]:
        chosen_rows = [
            (s, r)
            for s, r in zip(scores, rows, strict=True)
            if name == r.collection or (name.startswith("documentation") and r.collection != KB)
        ]
        answered = [r for s, r in chosen_rows if s >= model.threshold]
        unanswerable = [(s, r) for s, r in chosen_rows if not r.item.answerable]
        answerable = [(s, r) for s, r in chosen_rows if r.item.answerable]
        good_rows = [(s, r) for s, r in chosen_rows if r.good]
        precision = sum(r.good for r in answered) / len(answered) if answered else 0.0
        abstained = sum(s < model.threshold for s, _ in unanswerable)
        over = sum(s < model.threshold for s, _ in answerable)
        kept = sum(s >= model.threshold for s, _ in good_rows)
        print(
            f"| {name} | {len(chosen_rows)} | {len(answered) / len(chosen_rows):.2f} "
            f"| {precision:.3f} | {abstained}/{len(unanswerable)} | {over}/{len(answerable)} "
            f"| {kept}/{len(good_rows)} |"
        )


if __name__ == "__main__":
    sys.exit(main())
