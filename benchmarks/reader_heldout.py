"""A passage reader of :mod:`benchmarks.train_reader` on collections held out from every fit.

``python -m benchmarks.reader_heldout OUT FOLDER HELD [HELD ...] [--json FILE]`` reads the
reader ``OUT/FOLDER/reader-int8.onnx`` on each held-out collection folder ``HELD`` (as
``python -m benchmarks.answer_corpora`` writes it, e.g. ``H/postfix-docs``), every
question (nothing is fitted on them), and prints:

* the AUROC of answerable against unanswerable and of good to answer against not, for the
  reader's best logit over the fused top 5, the shipped confidence, ``cosine_sentence``,
  ``lexical``, and the confidence refitted on the documentation's train questions with
  and without the reader (its logits cached by ``train_reader score`` for ``train`` and
  ``dev``; the threshold chosen on dev, as :func:`benchmarks.reader_measure.on_dev` does);
* the decisions of those two refits and of the shipped model at their thresholds: right
  (answered where the context holds a gold passage, abstained where it does not),
  unanswerable and answerable questions abstained.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import train_confidence as tc
from benchmarks.answers_context import index_of
from benchmarks.reader_measure import best_logits, refitted, with_reader
from benchmarks.train_reader import Reader
from twokeys import open_index
from twokeys.rag import confidence
from twokeys.text.passages import heading_line


def measure(out: Path, folder: str, held: Sequence[Path]) -> dict[str, Any]:
    reader = Reader(out / folder / "reader-int8.onnx")
    shipped = confidence.shipped()
    top = best_logits(out, ("train", "dev"), f"-{folder}")
    models: dict[str, tuple[Any, float]] = dict(refitted(out, top)[1])
    models["shipped"] = (shipped, shipped.threshold)
    result: dict[str, Any] = {}
    for path in held:
        name = path.name
        hrows = tc.rows_of(path.parent, name)
        logits: dict[str, float] = {}
        with open_index(index_of(path)) as index:
            for row in hrows:
                q = row.item.question
                hits = index.search(q, mode="hybrid", k=5)
                found = reader.scores(
                    q, [(heading_line(h.chunk.heading_path, h.title), h.text) for h in hits]
                )
                logits[row.item.id] = max(found, default=-20.0)
        answerable = [r.item.answerable for r in hrows]
        good = [r.good for r in hrows]
        features = [r.evidence.as_features() for r in hrows]
        scores = {
            "reader top 5": [logits[r.item.id] for r in hrows],
            "shipped confidence": [shipped.probability(f) for f in features],
            "cosine_sentence": [f["cosine_sentence"] for f in features],
            "lexical": [f["lexical"] for f in features],
        }
        decisions = {}
        for label, (model, t) in models.items():
            p = [model.probability(with_reader(r, logits)) for r in hrows]
            if label != "shipped":
                scores[label] = p
            decisions[label] = {
                "threshold": round(t, 3),
                "right": sum((q >= t) == g for q, g in zip(p, good, strict=True)),
                "unanswerable abstained": sum(
                    q < t for q, a in zip(p, answerable, strict=True) if not a
                ),
                "answerable abstained": sum(q < t for q, a in zip(p, answerable, strict=True) if a),
            }
        result[name] = {
            "questions": len(hrows),
            "unanswerable": answerable.count(False),
            "auroc answerable vs unanswerable": {
                k: round(tc.auroc(v, answerable), 3) for k, v in scores.items()
            },
            "auroc good vs not": {k: round(tc.auroc(v, good), 3) for k, v in scores.items()},
            "decisions": decisions,
        }
        print(name, json.dumps(result[name]), flush=True)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.reader_heldout", description=__doc__
    )
    parser.add_argument("out", type=Path, help="the tuned collections (train_reader's OUT)")
    parser.add_argument("folder", help="the reader's folder under OUT")
    parser.add_argument("held", type=Path, nargs="+", help="held-out collection folders")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result = measure(args.out, args.folder, args.held)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
