"""Abstention across collections: which questions ``ask`` answers and which it declines.

``python -m benchmarks.abstention --kb INDEX [DIR ...]`` reads the retrieval confidence
(:func:`twokeys.rag.grounding.retrieval_confidence`) that ``ask`` reads before answering,
for:

* the support KB's ``examples/support-kb/qa.jsonl`` on ``INDEX`` (answerable and
  unanswerable questions; a question is answered when one of its parts is, as in
  ``ask``);
* every query of each BEIR-layout ``DIR`` (the technical documentation collections of
  :mod:`benchmarks.techdocs`: each query has a relevant page, so declining one is a
  false abstention) on the index ``twokeys eval DIR`` keeps in ``$TWOKEYS_CACHE`` (run
  that first);
* on every index, the general-knowledge questions of ``benchmarks/abstention/``:
  ``offtopic-tuning.txt`` (30, written by the engineer who set the dense height floor,
  and read on the support KB to set it) and ``offtopic-blind.txt`` (40, written by
  someone who had seen no rule and no figure; only ever reported). None is answered by
  any of these collections.

Each row gives the counts with the rules as they are and, for comparison, without the
dense height floor (:attr:`twokeys.rag.grounding.Confidence.above_chance`): the dense
peak and the coverage alone, as before it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from twokeys import open_index
from twokeys.engine import Index
from twokeys.evaluation.answers import load_qa
from twokeys.evaluation.experiment import default_index_path
from twokeys.rag import decompose
from twokeys.rag.grounding import Confidence, retrieval_confidence

HERE = Path(__file__).resolve().parent / "abstention"
REPO = HERE.parent.parent
PROBES = {"tuning": HERE / "offtopic-tuning.txt", "blind": HERE / "offtopic-blind.txt"}
QA = REPO / "examples" / "support-kb" / "qa.jsonl"

Decide = Callable[[Confidence], bool]
RULES: dict[str, Decide] = {
    "now": lambda c: c.answerable,
    "peak only": lambda c: replace(c, height=None).answerable,
}


def lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def answered(index: Index, questions: Sequence[str], decide: Decide) -> int:
    """How many of ``questions`` ``ask`` would answer (any part answerable)."""
    count = 0
    for question in questions:
        parts = decompose(question)
        count += any(decide(retrieval_confidence(index, part)) for part in parts)
    return count


def rows(name: str, index: Index, groups: dict[str, list[str]]) -> list[str]:
    chunks = int(index.manifest.counts.get("chunks", 0))
    out = []
    for rule, decide in RULES.items():
        cells = [f"{answered(index, qs, decide)}/{len(qs)}" for qs in groups.values()]
        out.append(f"| {name} | {chunks:,} | {rule} | " + " | ".join(cells) + " |")
        print(f"{name} {rule}: done", file=sys.stderr, flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.abstention", description=__doc__)
    parser.add_argument("--kb", type=Path, required=True, help="an index of the support KB")
    parser.add_argument("collections", nargs="*", type=Path, help="BEIR-layout folders")
    args = parser.parse_args(argv)
    probes = {name: lines(path) for name, path in PROBES.items()}
    header = "| collection | chunks | rule | answerable: answered | unanswerable: answered "
    header += "| general (tuning): answered | general (blind): answered |"
    table = [header, "|---|---|---|---|---|---|---|"]
    items = load_qa(QA)
    with open_index(args.kb) as kb:
        groups = {
            "answerable": [i.question for i in items if i.answerable],
            "unanswerable": [i.question for i in items if not i.answerable],
            **probes,
        }
        table += rows("support KB", kb, groups)
    for root in args.collections:
        path = default_index_path(root)
        if not path.exists():
            print(f"{path}: no index; run 'twokeys eval {root}' first", file=sys.stderr)
            return 2
        queries = [json.loads(line)["text"] for line in lines(root / "queries.jsonl")]
        with open_index(path) as index:
            table += rows(root.name, index, {"answerable": queries, "unanswerable": [], **probes})
    print("\n".join(table).replace("| 0/0 |", "| - |"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
