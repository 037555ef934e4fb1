"""Answers on a collection the answer rules were never read against: the Git manual pages.

``python -m benchmarks.answers_foreign GIT_DOCS [--budget N ...]`` runs ``twokeys
eval-answers`` (:func:`twokeys.evaluation.answers.evaluate_answers`) with the questions of
``benchmarks/answers/git-docs-qa.jsonl`` over the ``git-docs`` collection that
``python -m benchmarks.techdocs build OUT`` writes (``GIT_DOCS`` is ``OUT/git-docs``):
each page becomes ``<id>.md`` in ``GIT_DOCS/pages/`` (the gold documents are named so),
indexed with the default MiniLM encoder into ``GIT_DOCS/pages.twokeys`` (kept, so a
second run only reads it).

The 60 questions (12 identifier, 18 paraphrase, 10 multi-part, 20 unanswerable: options,
settings and features the pages do not have, values they never state, hosting-service
questions) were written by an engineer who read only the pages, none of twokeys' rules,
code or figures; every fact is checked verbatim against its page. The support KB's
rules and thresholds were set on ``examples/support-kb``: this is the check on data
they have not seen. One table row per budget, twokeys against plain top-k at the same
budget.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from twokeys import IndexOptions, build_index, open_index
from twokeys.evaluation.answers import evaluate_answers, load_qa

QA = Path(__file__).resolve().parent / "answers" / "git-docs-qa.jsonl"
BUDGETS = (1000, 2000, 4000)


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
    parser.add_argument("collection", type=Path, help="the git-docs folder of benchmarks.techdocs")
    parser.add_argument("--budget", type=int, action="append", help="token budget (repeatable)")
    args = parser.parse_args(argv)
    if not (args.collection / "corpus.jsonl").is_file():
        print(
            f"{args.collection}: no corpus.jsonl; run 'python -m benchmarks.techdocs build OUT'",
            file=sys.stderr,
        )
        return 2
    docs = pages(args.collection)
    path = args.collection / "pages.twokeys"
    if not path.exists():
        build_index(docs, path, IndexOptions())
    items = load_qa(QA)
    print(
        "| budget | system | context recall | citation precision | fact containment "
        "| abstention | false abstention | context tokens |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with open_index(path) as index:
        for budget in args.budget or BUDGETS:
            result = evaluate_answers(index, items, budget=budget, naive_chars=(), docs=docs)
            for name in ("twokeys", "top-k"):
                s = result.system(name)
                print(
                    f"| {budget:,} | {name} | {_f(s.context_recall)} | {_f(s.citation_precision)} "
                    f"| {_f(s.fact_containment)} | {_f(s.abstention)} | {_f(s.false_abstention)} "
                    f"| {s.tokens:.0f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
