"""Ablation of the abstention rules, on the blind test splits.

``python -m benchmarks.answers_ablation [--kb INDEX] [--split test]`` runs ``ask`` (the
default options: rules confidence, extractive answer, a 2,048-token budget) on the
questions of one split of every ``benchmarks/answers/*-qa*.jsonl`` file, on the indexes
``python -m benchmarks.answers_context`` builds (``$TWOKEYS_CORPORA``, default
``/work/cache/corpora/<collection>/pages.twokeys``), once with every rule and once with
each rule switched off, and prints one table:

* ``U abst``: unanswerable questions abstained on (want high);
* ``A answ``: answerable questions answered (want high);
* ``gold cited``: answerable questions answered with a cited block holding a gold fact;
* ``correct``: unanswerable abstained plus answerable answered with gold cited, over all;
* ``facts``: fact containment (the share of an item's gold facts the answer's text
  holds) summed over the answerable questions answered.

With ``--kb`` (an index of ``examples/support-kb/docs``) the support KB's
``examples/support-kb/qa.jsonl`` (same split) is run too, in its own column: the
collection the rules were first written on, shown for reference.

A rule is switched off by replacing the function (or constant) through which it acts
with one that finds nothing (:data:`MODULES`): grounding's unseen names and phrases and
dotted names held by parts, the rule-based decomposition and three of its steps, the
extractive answer's neighbours, table rows, heading reading and heading words. The six
modules fitted to the support KB (``commands``, ``menus``, ``kinds``, ``elements``,
``existence``, ``answer_types``) were ablated by this script at commit 6ea7c84, and a
second round of rules (names written otherwise, identifiers written inside others,
quantities written apart, identifier lists, fragments, procedure steps, prose after
code, lists after a lead-in, code lines and comments, one row per table, page-about
sentences) on the code of commit 69789ce; each was removed after it showed no gain
(README, "Fewer, general parts"). ``git show 69789ce:benchmarks/answers_ablation.py``
has most of their switches; identifier lists, fragments and code comments were switched
off the same way, by ``decompose._split_identifier_list``, ``_merge_fragments`` and
``units._comments``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from unittest import mock

from twokeys import open_index
from twokeys.evaluation.answers import QAItem, load_qa, run_twokeys
from twokeys.rag import extractive, grounding, units
from twokeys.rag.ask import AskOptions

ANSWERS = Path(__file__).resolve().parent / "answers"
REPO = ANSWERS.parent.parent
CORPORA = Path(os.environ.get("TWOKEYS_CORPORA", "/work/cache/corpora"))
SUPPORT_QA = REPO / "examples" / "support-kb" / "qa.jsonl"


# the modules: ``twokeys.rag.ask`` and ``twokeys.rag.decompose`` name functions too
ask = importlib.import_module("twokeys.rag.ask")
decompose = importlib.import_module("twokeys.rag.decompose")
Patch = tuple[object, str, Any]
MODULES: dict[str, tuple[Patch, ...]] = {
    "names": ((grounding, "_names", lambda *_: []),),
    "phrases": ((grounding, "_name_runs", lambda *_: []),),
    "by parts": ((grounding, "_held_by_parts", lambda *_: False),),
    "decompose": ((ask, "decompose", lambda q, **_: [q.strip()]),),
    "statements": ((decompose, "_attach_statements", lambda s: [x for x in s if x.strip()]),),
    "conditions": ((decompose, "_attach_conditions", list),),
    "back refs": ((decompose, "_with_back_references", list),),
    "neighbours": ((extractive, "neighbours", lambda *_: []),),
    "rows": ((units, "_row", lambda *_: ""),),
    "framed": ((units.Unit, "framed", property(lambda u: u.read)),),
    "heading share": ((extractive, "HEADING_SHARE", 0.0),),
}
VARIANTS: dict[str, tuple[str, ...]] = {
    "all rules": (),
    **{f"- {name}": (name,) for name in MODULES},
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
    facts: float = 0.0  # fact containment summed over the answerable questions answered

    def __add__(self, other: Tally) -> Tally:
        return Tally(*(a + b for a, b in zip(self.cells(), other.cells(), strict=True)))

    def cells(self) -> tuple[int, ...]:
        return (
            self.unanswerable,
            self.abstained,
            self.answerable,
            self.answered,
            self.gold_cited,
            self.facts,
        )

    def row(self) -> list[str]:
        total = self.unanswerable + self.answerable
        correct = self.abstained + self.gold_cited
        return [
            f"{self.abstained}/{self.unanswerable}",
            f"{self.answered}/{self.answerable}",
            f"{self.gold_cited}/{self.answerable}",
            f"{correct}/{total} ({correct / total:.3f})" if total else "-",
            f"{self.facts:.2f}",
        ]


def remember_encodings(index: Any) -> None:
    """Encode each text once per run: the variants read the same sentences and queries."""
    if index.manifest.encoder is None:
        return
    encoder = index.encoder
    encode, encode_query = encoder.encode, encoder.encode_query
    texts: dict[tuple[tuple[str, ...], str], Any] = {}
    queries: dict[str, Any] = {}

    def cached_encode(batch: Sequence[str], kind: str = "document", **more: Any) -> Any:
        key = (tuple(batch), kind)
        if key not in texts:
            texts[key] = encode(list(batch), kind, **more)
        return texts[key].copy()

    def cached_query(query: str) -> Any:
        if query not in queries:
            queries[query] = encode_query(query)
        return queries[query].copy()

    encoder.encode = cached_encode
    encoder.encode_query = cached_query


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
            facts=t.facts + (0.0 if o.abstained else o.fact_containment or 0.0),
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
    parser.add_argument(
        "--save", type=Path, default=None, help="a JSON file of finished runs (resumed from)"
    )
    parser.add_argument("--only", action="append", default=[], help="run only this variant")
    args = parser.parse_args(argv)
    variants = {v: off for v, off in VARIANTS.items() if not args.only or v in args.only}
    options = AskOptions()
    sets = blind_sets(args.split)
    todo: dict[str, tuple[Path, list[QAItem]]] = {
        c: (CORPORA / c / "pages.twokeys", items) for c, items in sets.items()
    }
    if args.kb is not None:
        todo["support KB"] = (args.kb, load_qa(SUPPORT_QA, split=args.split))
    saved: dict[str, list[int]] = {}
    if args.save is not None and args.save.exists():
        saved = json.loads(args.save.read_text())
    results: dict[str, dict[str, Tally]] = {v: {} for v in variants}
    for collection, (path, items) in todo.items():
        with open_index(path) as index:
            remember_encodings(index)
            for variant, off in variants.items():
                key = f"{collection} | {variant}"
                if key not in saved:
                    with switched_off(off):
                        saved[key] = list(tally(index, items, options).cells())
                    if args.save is not None:
                        args.save.write_text(json.dumps(saved, indent=1))
                results[variant][collection] = Tally(*saved[key])
                print(f"{key}: done", file=sys.stderr, flush=True)
    header = "| variant | U abst | A answ | gold cited | correct | facts |"
    lines = [f"Blind test splits ({', '.join(sets)}), all together:", "", header]
    lines.append("|---|---|---|---|---|---|")
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
