"""Follow-up questions retrieved with and without their conversation.

``python -m benchmarks.followups [--git-docs DIR]`` reads the conversations in
``benchmarks/followups/`` (written by hand from the pages, committed before any
retrieval was run: each a list of user turns whose last one cannot be answered without
the earlier ones, and the documents that answer it) and measures document recall@5 of
the last turn's search (hybrid, the default MiniLM encoder) for:

* ``last message``: the follow-up alone (what a server that reads only the newest
  message searches);
* ``joined``: every user turn joined, oldest first;
* ``rule``: :func:`twokeys.rag.followup.standalone_query` without a model, as the chat
  route runs it (the follow-up as asked when it stands on its own, else the follow-up
  plus the idf-weighted words of earlier user turns);
* ``rule, always``: the rule's query for every follow-up (no stand-alone test).

Collections: the support KB (``examples/support-kb/docs``) and the Git manual
(``git-docs`` in BEIR layout, as ``python -m benchmarks.techdocs build OUT`` writes it;
skipped when not given). Indexes are built under ``benchmarks/.tmp``. Prints a table and
saves ``benchmarks/results/followups.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, WORK, log, save_result
from twokeys import IndexOptions, build_index, open_index
from twokeys.engine import Index
from twokeys.rag.conversation import Conversation, Turn
from twokeys.rag.followup import rule_query, standalone_query

HERE = Path(__file__).resolve().parent / "followups"
K = 5
SUPPORT_KB = REPO / "examples" / "support-kb" / "docs"

Method = Callable[[Index, Sequence[str]], str]


def _conversation(turns: Sequence[str]) -> Conversation:
    earlier = tuple(Turn("user", t) for t in turns[:-1])
    return Conversation(turns[-1], earlier)


METHODS: dict[str, Method] = {
    "last message": lambda index, turns: turns[-1],
    "joined": lambda index, turns: " ".join(turns),
    "rule": lambda index, turns: standalone_query(index, _conversation(turns)).query,
    "rule, always": lambda index, turns: rule_query(index, turns[-1], tuple(turns[:-1])),
}


def conversations(name: str) -> list[dict[str, Any]]:
    with open(HERE / f"{name}.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def index_for(name: str, source: Path) -> Path:
    path = WORK / f"followups-{name}.twokeys"
    if not (path / "manifest.json").is_file():
        log(f"building {path} from {source}")
        build_index(source, path, IndexOptions())
    return path


def recall(index: Index, query: str, relevant: Sequence[str]) -> float:
    docs = {hit.doc_id for hit in index.search(query, k=K)}
    return sum(1 for r in relevant if r in docs) / len(relevant)


def measure(name: str, source: Path) -> dict[str, Any]:
    rows = conversations(name)
    with open_index(index_for(name, source)) as index:
        out: dict[str, Any] = {"conversations": len(rows), "recall@5": {}, "seconds": {}}
        for method, make in METHODS.items():
            started = time.perf_counter()
            scores = [recall(index, make(index, row["turns"]), row["relevant"]) for row in rows]
            out["seconds"][method] = round(time.perf_counter() - started, 2)
            out["recall@5"][method] = round(sum(scores) / len(scores), 3)
        rewritten = [standalone_query(index, _conversation(r["turns"])) for r in rows]
        out["rule rewrote"] = sum(1 for f in rewritten if f.how == "rule")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.followups", description=__doc__)
    parser.add_argument("--git-docs", type=Path, help="the git-docs collection (BEIR layout)")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"k": K, "collections": {}}
    sources = {"support-kb": SUPPORT_KB}
    if args.git_docs is not None:
        sources["git-docs"] = args.git_docs / "corpus.jsonl"
    for name, source in sources.items():
        results["collections"][name] = measure(name, source)
    print(f"| collection (conversations) | {' | '.join(METHODS)} |")
    print(f"|---|{'---:|' * len(METHODS)}")
    for name, data in results["collections"].items():
        cells = " | ".join(f"{data['recall@5'][m]:.3f}" for m in METHODS)
        print(f"| {name} ({data['conversations']}) | {cells} |")
    save_result("followups", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
