"""A model's verdict inside the learned confidence, measured: calibrate it on the train
splits, then count right decisions on the dev splits with and without it.

``python -m benchmarks.verdict_measure OUT --llm SPEC [--base-url URL] [--kb-train S ...]
[--json FILE]`` reads the rows :mod:`benchmarks.train_confidence` keeps under ``OUT``
(retrieval evidence and the label *good to answer*: answerable, a gold fact in ``pack``'s
2,000-token context) for the four documentation collections and the example support KB,
asks the model :func:`twokeys.rag.judge.verdict` about each question's first hybrid hits
(what ``ask --llm-stage verdict`` asks), and

* counts its replies on the train questions into a
  :class:`~twokeys.rag.verdicts.Reliability` (the KB's train split is large: ``--kb-train``
  names the ``heldoutN`` files read, by default ``heldout18`` to ``heldout24``);
* on the dev questions, reports the shipped learned confidence's right decisions (answer
  a good question, abstain on the others) at its operating point, without the verdict and
  with it weighed by that reliability, and the verdict's own agreement with the label.

Slow with a local model on a CPU: with Gemma 3 270M on two cores about 2 s a support KB
question and 5-10 s a documentation one (longer passages).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from benchmarks.answers_context import collections
from benchmarks.train_confidence import KB, SUPPORT_KB, Row, index_path, rows_of
from twokeys import open_index
from twokeys.engine import Index
from twokeys.evaluation.answers import QAItem, load_qa
from twokeys.llm.spec import from_spec
from twokeys.rag.confidence import shipped
from twokeys.rag.judge import verdict
from twokeys.rag.verdicts import Reliability

KB_TRAIN = tuple(f"heldout{n}" for n in range(18, 25))
K = 6  # the hits ask judges a part on (AskOptions.k); the verdict reads the first 5


def verdicts(out: Path, rows: Sequence[Row], llm_spec: str, base_url: str | None) -> list[float]:
    """The model's reply about each row's question (1 yes, 0 no, 0.5 neither)."""
    llm = from_spec(llm_spec, base_url=base_url)
    said: list[float] = []
    with ExitStack() as stack:
        stack.callback(llm.close)
        indexes: dict[str, Index] = {}
        for r in rows:  # in the order given
            if r.collection not in indexes:
                path = index_path(out, r.collection, False)
                indexes[r.collection] = stack.enter_context(open_index(path))
            hits = indexes[r.collection].search(r.item.question, mode="hybrid", k=K)
            said.append(verdict(llm, r.item.question, [h.text for h in hits]))
            if len(said) % 20 == 0:
                print(f"verdicts: {len(said)}/{len(rows)}", file=sys.stderr, flush=True)
    return said


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.verdict_measure")
    parser.add_argument("out", type=Path)
    parser.add_argument("--llm", required=True)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--kb-train", nargs="*", default=list(KB_TRAIN))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    names = [*collections(args.out), KB]
    rows = [r for name in names for r in rows_of(args.out, name)]
    original = {i.id: i.split for i in _kb_items()}
    train = [
        r
        for r in rows
        if r.item.split == "train" and (r.collection != KB or original[r.item.id] in args.kb_train)
    ]
    dev = [r for r in rows if r.item.split == "dev"]
    said_train = verdicts(args.out, train, args.llm, args.base_url)
    measured = Reliability.of(
        args.llm,
        [(r.good, s) for r, s in zip(train, said_train, strict=True)],
        f"train: {len(train)} questions ({', '.join(names)})",
    )
    said_dev = verdicts(args.out, dev, args.llm, args.base_url)
    model = shipped()
    result: dict[str, object] = {"model": args.llm, "reliability": measured.to_dict()}
    for label, kb in (("documentation", False), ("support KB", True)):
        chosen = [(r, s) for r, s in zip(dev, said_dev, strict=True) if (r.collection == KB) == kb]
        plain = sum(
            (model.probability(r.evidence.as_features()) >= model.threshold) == r.good
            for r, _ in chosen
        )
        weighed = sum(
            (model.probability(r.evidence.as_features(), measured.log_ratio(s)) >= model.threshold)
            == r.good
            for r, s in chosen
        )
        agrees = sum(s in (0.0, 1.0) and (s == 1.0) == r.good for r, s in chosen)
        result[label] = {
            "dev questions": len(chosen),
            "right decisions without the verdict": plain,
            "right decisions with it": weighed,
            "verdict agrees with the label": agrees,
            "verdict yes": sum(s == 1.0 for _, s in chosen),
        }
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


def _kb_items() -> list[QAItem]:
    return load_qa(SUPPORT_KB / "qa.jsonl")


if __name__ == "__main__":
    raise SystemExit(main())
