"""Ablation of the answer rules fitted to the support KB, on the blind test splits.

``python -m benchmarks.answers_ablation [--kb INDEX] [--split test]`` runs ``ask`` (the
default options: rules confidence, extractive answer, a 2,048-token budget) on the
questions of one split of every ``benchmarks/answers/*-qa*.jsonl`` file, on the indexes
``python -m benchmarks.answers_context`` builds (``$TWOKEYS_CORPORA``, default
``/work/cache/corpora/<collection>/pages.twokeys``), once with every rule and once with
each rule module switched off, and prints one table:

* ``U abst``: unanswerable questions abstained on (want high);
* ``A answ``: answerable questions answered (want high);
* ``gold cited``: answerable questions answered with a cited block holding a gold fact;
* ``correct``: unanswerable abstained plus answerable answered with gold cited, over all.

With ``--kb`` the support KB's ``examples/support-kb/qa.jsonl`` (same split) is run too,
in its own column group: the collection the rules were written on, shown for reference.

A module is switched off by replacing the functions through which it acts with ones that
find nothing (each rule of :mod:`twokeys.rag.grounding` then reports no unseen command,
menu step, kind, element, thing or unstated value; the extractive answer orders its
quotes without a value type or a numbered row).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from unittest import mock

from twokeys import open_index
from twokeys.evaluation.answers import QAItem, load_qa, run_twokeys
from twokeys.rag import extractive, grounding
from twokeys.rag.ask import AskOptions

ANSWERS = Path(__file__).resolve().parent / "answers"
REPO = ANSWERS.parent.parent
CORPORA = Path(os.environ.get("TWOKEYS_CORPORA", "/work/cache/corpora"))
SUPPORT_QA = REPO / "examples" / "support-kb" / "qa.jsonl"


def _none(*_: Any, **__: Any) -> tuple[str, ...]:
    return ()


def _keep(ranked: Sequence[Any], *_: Any) -> list[Any]:
    return list(ranked)


Patch = tuple[object, str, Callable[..., Any]]
MODULES: dict[str, tuple[Patch, ...]] = {
    "commands": ((grounding, "_unseen_commands", _none),),
    "menus": ((grounding, "_unseen_menu_steps", _none),),
    "kinds": (
        (grounding, "_unseen_kinds", _none),
        (extractive, "_numbered_rows_first", _keep),
    ),
    "elements": ((grounding, "_unseen_elements", _none),),
    "existence": ((grounding, "_unseen_things", _none),),
    "answer_types": (
        (grounding, "expected_type", lambda *_: None),
        (extractive, "value_type", lambda *_: None),
    ),
}
VARIANTS: dict[str, tuple[str, ...]] = {
    "all rules": (),
    **{f"- {name}": (name,) for name in MODULES},
    "- all six": tuple(MODULES),
}


@contextlib.contextmanager
def switched_off(modules: Sequence[str]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for name in modules:
            for owner, attribute, stand_in in MODULES[name]:
                stack.enter_context(mock.patch.object(owner, attribute, stand_in))
        yield


@dataclass(frozen=True)
class Tally:
    unanswerable: int = 0
    abstained: int = 0
    answerable: int = 0
    answered: int = 0
    gold_cited: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(*(a + b for a, b in zip(self.cells(), other.cells(), strict=True)))

    def cells(self) -> tuple[int, ...]:
        return (self.unanswerable, self.abstained, self.answerable, self.answered, self.gold_cited)

    def row(self) -> list[str]:
        total = self.unanswerable + self.answerable
        correct = self.abstained + self.gold_cited
        return [
            f"{self.abstained}/{self.unanswerable}",
            f"{self.answered}/{self.answerable}",
            f"{self.gold_cited}/{self.answerable}",
            f"{correct}/{total} ({correct / total:.3f})" if total else "-",
        ]


def tally(index: Any, items: Sequence[QAItem], options: AskOptions) -> Tally:
    t = Tally()
    for item in items:
        o = run_twokeys(index, item, options)
        if not item.answerable:
            t = replace(t, unanswerable=t.unanswerable + 1, abstained=t.abstained + o.abstained)
            continue
        cited = not o.abstained and bool(o.citation_precision)
        t = replace(
            t,
            answerable=t.answerable + 1,
            answered=t.answered + (not o.abstained),
            gold_cited=t.gold_cited + cited,
        )
    return t


def blind_sets(split: str) -> dict[str, list[QAItem]]:
    sets: dict[str, list[QAItem]] = {}
    for qa in sorted(ANSWERS.glob("*-qa*.jsonl")):
        collection = qa.stem.removesuffix("2").removesuffix("-qa")
        sets.setdefault(collection, []).extend(load_qa(qa, split=split))
    return sets


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.answers_ablation")
    parser.add_argument("--kb", type=Path, default=None, help="an index of the support KB")
    parser.add_argument("--split", default="test")
    args = parser.parse_args(argv)
    options = AskOptions()
    sets = blind_sets(args.split)
    results: dict[str, dict[str, Tally]] = {v: {} for v in VARIANTS}
    for collection, items in sets.items():
        with open_index(CORPORA / collection / "pages.twokeys") as index:
            for variant, off in VARIANTS.items():
                with switched_off(off):
                    results[variant][collection] = tally(index, items, options)
                print(f"{collection} {variant}: done", file=sys.stderr, flush=True)
    if args.kb is not None:
        support = load_qa(SUPPORT_QA, split=args.split)
        with open_index(args.kb) as kb:
            for variant, off in VARIANTS.items():
                with switched_off(off):
                    results[variant]["support KB"] = tally(kb, support, options)
    header = "| variant | U abst | A answ | gold cited | correct |"
    lines = [f"Blind test splits ({', '.join(sets)}), all together:", "", header]
    lines.append("|---|---|---|---|---|")
    for variant, by in results.items():
        total = sum((by[c] for c in sets), Tally())
        lines.append(f"| {variant} | " + " | ".join(total.row()) + " |")
    lines += ["", "Per collection (correct):", ""]
    names = list(next(iter(results.values())))
    lines.append("| variant | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for variant, by in results.items():
        lines.append(f"| {variant} | " + " | ".join(by[n].row()[3] for n in names) + " |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
