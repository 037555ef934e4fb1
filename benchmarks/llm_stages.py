"""The model's stages of ``ask`` measured with a real local model (``--llm local``: Gemma 3
270M, a base model, through llama.cpp in this process).

``python -m benchmarks.llm_stages [--llm SPEC]`` measures:

* **rewrite** (``--llm-stage rewrite``, follow-ups): document recall@5 of the follow-up's
  search on the hand-written conversations of ``benchmarks/followups/support-kb.jsonl``
  (see :mod:`benchmarks.followups`), for the rule alone and for
  :func:`twokeys.rag.followup.standalone_query` with the model; how many rewrites the
  model gave that were used (a rewrite that keeps none of the follow-up's own terms falls
  back to the rule), and the seconds per follow-up;
* **support** (``--llm-stage support``): on the answerable questions of the blind test
  splits with a short gold answer (``rust-book-qa``, ``sqlite-docs-qa``), the gold answer
  as a cited sentence against (a) the chunk of its gold page that holds the gold fact
  (supported) and (b) the gold chunk of another question of the same collection
  (unsupported): the share of pairs each check gets right, the word-overlap check of
  :func:`twokeys.rag.support.check_sentences` and the model's verdict
  (:func:`twokeys.rag.judge.support_verdicts`), and the seconds per verdict;
* **rerank** (``--llm-stage rerank``): on the answerable dev questions of the four tuned
  documentation collections, whether ``ask``'s packed context (2,048 tokens in all, the
  model's own token count, the question as one part) holds a gold fact, in the fused
  order and with the fused top 10 re-ordered by the model
  (:func:`twokeys.rag.judge.rerank`), and where the first hit holding a gold fact stands
  among the first 10 before and after; the seconds per re-ranking.

The model's ``verdict`` is measured by :mod:`benchmarks.verdict_measure`.

Indexes: the support KB's is built under ``benchmarks/.tmp`` (BM25 and the default MiniLM
encoder); the blind collections' are read from ``$TWOKEYS_CORPORA`` (default
``/work/cache/corpora``; ``python -m benchmarks.answers_context`` builds them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.answers_context import collections, index_of, questions
from benchmarks.followups import SUPPORT_KB, _conversation, conversations, index_for, recall
from twokeys import open_index
from twokeys.engine import Index
from twokeys.evaluation.answers import QAItem, context_recall, holds, pieces_of
from twokeys.llm import LLM, from_spec
from twokeys.rag.ask import AskOptions, Plan, prepare
from twokeys.rag.followup import standalone_query
from twokeys.rag.judge import RERANK_N, SupportBudget, support_verdicts
from twokeys.rag.packing import Block
from twokeys.rag.support import check_sentences

ANSWERS = Path(__file__).resolve().parent / "answers"
CORPORA = Path(os.environ.get("TWOKEYS_CORPORA", "/work/cache/corpora"))
BLIND = {"rust-book": "rust-book-qa.jsonl", "sqlite-docs": "sqlite-docs-qa.jsonl"}


def rewrite(llm: LLM, limit: int | None = None) -> dict[str, Any]:
    rows = conversations("support-kb")[:limit]
    with open_index(index_for("support-kb", SUPPORT_KB)) as index:
        rule = [standalone_query(index, _conversation(r["turns"])) for r in rows]
        started = time.perf_counter()
        model = [standalone_query(index, _conversation(r["turns"]), llm=llm) for r in rows]
        seconds = (time.perf_counter() - started) / len(rows)
        return {
            "conversations": len(rows),
            "recall@5 rule": _mean(
                recall(index, f.query, r["relevant"]) for f, r in zip(rule, rows, strict=True)
            ),
            "recall@5 model": _mean(
                recall(index, f.query, r["relevant"]) for f, r in zip(model, rows, strict=True)
            ),
            "model rewrites used": sum(f.how == "llm" for f in model),
            "seconds per follow-up": round(seconds, 2),
        }


def gold_chunk(index: Index, doc: str, fact: str) -> str | None:
    """The text of a chunk of ``doc`` that holds ``fact``."""
    for hit in index.search(fact, mode="bm25", k=50):
        if hit.path == doc and holds(hit.text, fact):
            return hit.text
    return None


def pairs(collection: str, file: str) -> list[tuple[str, str, bool, Index]]:
    """(sentence, passage, supported, index) for the collection's test questions (module
    docstring)."""
    rows = [json.loads(line) for line in (ANSWERS / file).read_text().splitlines() if line]
    rows = [r for r in rows if r["split"] == "test" and r["gold"] and r.get("answer")]
    index = open_index(CORPORA / collection / "pages.twokeys")
    found = []
    for r in rows:
        chunk = gold_chunk(index, r["gold"][0]["doc"], r["gold"][0]["fact"])
        if chunk is not None:
            found.append((f"{r['answer'].rstrip('.')} [1].", chunk))
    out = []
    for i, (sentence, chunk) in enumerate(found):
        other = found[(i + 1) % len(found)][1]  # another question's gold chunk
        out += [(sentence, chunk, True, index), (sentence, other, False, index)]
    return out


def support(llm: LLM, limit: int | None = None) -> dict[str, Any]:
    each = None if limit is None else 2 * max(1, limit // (2 * len(BLIND)))
    rows = [p for collection, file in BLIND.items() for p in pairs(collection, file)[:each]]
    words = model = yes = unjudged = asked = 0
    started = time.perf_counter()
    for sentence, passage, supported, index in rows:
        block = Block(1, "gold", "", (), passage, (), (0,), 0, False)
        (check,) = check_sentences(sentence, [block], index.analyzer.index_terms)[:1]
        words += (check.status == "supported") == supported
        (said,) = support_verdicts(llm, [(sentence, [passage])], SupportBudget())
        asked += 1
        unjudged += said is None
        yes += said is True
        model += said is not None and said == supported
    seconds = (time.perf_counter() - started) / max(asked, 1)
    return {
        "pairs": len(rows),
        "word check right": words,
        "model right": model,
        "model unjudged (reply neither yes nor no)": unjudged,
        "model said yes": yes,
        "seconds per verdict": round(seconds, 2),
    }


def rerank_stage(llm: LLM, limit: int | None = None) -> dict[str, Any]:
    plain = AskOptions(decompose="none", abstain=False)
    staged = AskOptions(decompose="none", abstain=False, llm_stages=("rerank",))
    held = {"before": 0, "after": 0}
    # the rank (1-10; 11: not there) of the first hit holding a gold fact
    first: dict[str, list[int]] = {"before": [], "after": []}
    asked = 0
    seconds = 0.0
    for name in collections(CORPORA):
        items = [i for i in questions(name, "dev") if i.answerable][:limit]
        with open_index(index_of(CORPORA / name)) as index:
            for item in items:
                before = prepare(index, item.question, llm=llm, options=plain)
                started = time.perf_counter()
                after = prepare(index, item.question, llm=llm, options=staged)
                seconds += time.perf_counter() - started
                asked += 1
                if asked % 10 == 0:
                    print(f"rerank: {asked} questions", file=sys.stderr, flush=True)
                for key, plan in (("before", before), ("after", after)):
                    held[key] += _holds(item, plan)
                    first[key].append(_first_gold(item, plan))
    return {
        "questions": asked,
        "packed context holds a gold fact, fused order": held["before"],
        "the same, the model's order": held["after"],
        "first gold hit in the top 3, fused / model": [
            sum(r <= 3 for r in first["before"]),
            sum(r <= 3 for r in first["after"]),
        ],
        f"first gold hit in the top {RERANK_N}, fused / model": [
            sum(r <= RERANK_N for r in first["before"]),
            sum(r <= RERANK_N for r in first["after"]),
        ],
        "seconds per question (retrieval, re-ranking, packing)": round(seconds / max(asked, 1), 2),
    }


def _holds(item: QAItem, plan: Plan) -> bool:
    return context_recall(item.gold, pieces_of(plan.context)) > 0


def _first_gold(item: QAItem, plan: Plan) -> int:
    hits = plan.runs[0].hits[:RERANK_N]
    for rank, hit in enumerate(hits, 1):
        if any(hit.path == g.doc and holds(hit.text, g.fact) for g in item.gold):
            return rank
    return RERANK_N + 1


def _mean(values: Any) -> float:
    kept = list(values)
    return round(sum(kept) / len(kept), 3) if kept else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.llm_stages", description=__doc__)
    parser.add_argument("--llm", default="local", help="the model spec [default: local]")
    parser.add_argument(
        "--limit", type=int, default=None, help="at most this many follow-ups and pairs"
    )
    parser.add_argument(
        "--stage",
        dest="stages",
        action="append",
        choices=sorted(STAGES),
        help="measure only this stage (repeatable) [default: all]",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    llm = from_spec(args.llm, context_tokens=2048)
    try:
        results = {s: STAGES[s](llm, args.limit) for s in args.stages or STAGES}
    finally:
        llm.close()
    for stage, data in results.items():
        print(f"{stage} ({llm.name}):")
        for key, value in data.items():
            print(f"  {key}: {value}")
    if args.json is not None:
        figures = {"model": llm.name, **results}
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


STAGES = {"rewrite": rewrite, "support": support, "rerank": rerank_stage}


if __name__ == "__main__":
    raise SystemExit(main())
