"""Answers on collections the answer rules were never read against: the Git manual pages
and the Python library reference.

``python -m benchmarks.answers_foreign DIR [DIR ...] [--budget N ...]`` runs ``twokeys
eval-answers`` (:func:`twokeys.evaluation.answers.evaluate_answers`) over each ``DIR``, a
collection that ``python -m benchmarks.techdocs build OUT`` writes (``OUT/git-docs``,
``OUT/python-docs``), with the questions of ``benchmarks/answers/<name>-qa*.jsonl``: each
page becomes ``<id>.md`` in ``DIR/pages/`` (the gold documents are named so), indexed
with the default MiniLM encoder into ``DIR/pages.twokeys`` (kept, so a second run only
reads it).

Each file (two for Git, two for Python) holds 60 questions (12 identifier, 18
paraphrase, 10 multi-part, 20 unanswerable: names, options and features the pages do
not have, values they never state, questions about other tools), written by an engineer
who read only the pages, none of twokeys' rules, code or figures; every fact is checked
verbatim against its page (``tests/integration/test_techdocs.py``). The rules and
thresholds of ``ask`` were set on ``examples/support-kb``: this is the check on data
they have not seen. One table row per question file, budget and system: twokeys
against plain top-k at the same budget.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from twokeys import IndexOptions, build_index, open_index
from twokeys.evaluation.answers import evaluate_answers, load_qa

HERE = Path(__file__).resolve().parent / "answers"
BUDGETS = (1000, 2000, 4000)


def questions(collection: str) -> list[Path]:
    """The question files of the collection named ``collection`` (``git-docs``):
    ``<name>-qa.jsonl``, ``<name>-qa2.jsonl`` ..., each written on its own."""
    return sorted(HERE.glob(f"{collection}-qa*.jsonl"))


def pages(collection: Path) -> Path:
    """``collection``'s corpus written as one Markdown file per page (once)."""
    out = collection / "pages"
    if out.is_dir():
        return out
    tmp = collection / "pages.partial"
    tmp.mkdir(parents=True, exist_ok=True)
    with open(collection / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            (tmp / f"{doc['_id']}.md").write_text(doc["text"], encoding="utf-8")
    tmp.rename(out)
    return out


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.answers_foreign", description=__doc__
    )
    parser.add_argument("collections", nargs="+", type=Path, help="folders of benchmarks.techdocs")
    parser.add_argument("--budget", type=int, action="append", help="token budget (repeatable)")
    args = parser.parse_args(argv)
    for root in args.collections:
        if not (root / "corpus.jsonl").is_file() or not questions(root.name):
            print(
                f"{root}: no corpus.jsonl, or no questions for {root.name} in {HERE}; "
                "run 'python -m benchmarks.techdocs build OUT' and pass OUT/git-docs",
                file=sys.stderr,
            )
            return 2
    print(
        "| questions | budget | system | context recall | citation precision "
        "| fact containment | abstention | false abstention | context tokens |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for root in args.collections:
        docs = pages(root)
        path = root / "pages.twokeys"
        if not path.exists():
            print(f"indexing {docs} into {path} (once) ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            build_index(docs, path, IndexOptions())
            print(f"indexed in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        with open_index(path) as index:
            for qa, budget in itertools.product(questions(root.name), args.budget or BUDGETS):
                items = load_qa(qa)
                result = evaluate_answers(index, items, budget=budget, naive_chars=(), docs=docs)
                for name in ("twokeys", "top-k"):
                    s = result.system(name)
                    print(
                        f"| {qa.stem} | {budget:,} | {name} | {_f(s.context_recall)} "
                        f"| {_f(s.citation_precision)} | {_f(s.fact_containment)} "
                        f"| {_f(s.abstention)} | {_f(s.false_abstention)} | {s.tokens:.0f} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
