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
  route runs it (the follow-up with the user turns of its current topic, the topic read
  from retrieval evidence; a turn that starts a new topic as asked).

The conversations of kind ``new topic`` (the last turn asks about something else, on
its own) and ``follow-up after a topic change`` were added later, also before any
run. ``dragged`` counts the ``new topic`` conversations whose last turn was not searched
as asked (an old topic carried into a self-contained question).

Train/test split, per collection: the conversations ordered by the sha256 of their
id, the first half ``train`` and the rest ``test`` (:func:`splits`; fixed for this set,
balanced, blind to the content). Rules are tuned on ``train`` only (the constants of
:mod:`twokeys.rag.followup`, ``TOPIC_DOCS`` and ``FEW_TERMS``, were) and reported on
``test``.

"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, WORK, log, save_result
from twokeys import IndexOptions, build_index, open_index
from twokeys.engine import Index
from twokeys.rag.conversation import Conversation, Turn
from twokeys.rag.followup import standalone_query

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
}
SPLITS = ("train", "test")


def splits(rows: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Each conversation's split, by id (module docstring)."""
    order = sorted((r["id"] for r in rows), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    half = len(order) // 2
    return {i: "train" if n < half else "test" for n, i in enumerate(order)}


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
    split = splits(rows)
    out: dict[str, Any] = {}
    with open_index(index_for(name, source)) as index:
        for part in SPLITS:
            chosen = [r for r in rows if split[r["id"]] == part]
            data: dict[str, Any] = {"conversations": len(chosen), "recall@5": {}, "seconds": {}}
            for method, make in METHODS.items():
                started = time.perf_counter()
                queries = [make(index, row["turns"]) for row in chosen]
                scores = [
                    recall(index, q, r["relevant"]) for q, r in zip(queries, chosen, strict=True)
                ]
                data["seconds"][method] = round(time.perf_counter() - started, 2)
                data["recall@5"][method] = round(sum(scores) / len(scores), 3)
                new = [
                    (q, r)
                    for q, r in zip(queries, chosen, strict=True)
                    if r.get("kind") == "new topic"
                ]
                data.setdefault("new topic", {})[method] = {
                    "conversations": len(new),
                    "dragged": sum(1 for q, r in new if q.strip() != r["turns"][-1].strip()),
                }
            out[part] = data
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
    print(f"| collection, split (conversations) | {' | '.join(METHODS)} | dragged (new topics) |")
    print(f"|---|{'---:|' * (len(METHODS) + 1)}")
    for name, parts in results["collections"].items():
        for part, data in parts.items():
            cells = " | ".join(f"{data['recall@5'][m]:.3f}" for m in METHODS)
            new = data["new topic"]
            dragged = ", ".join(f"{m} {new[m]['dragged']}/{new[m]['conversations']}" for m in new)
            print(f"| {name}, {part} ({data['conversations']}) | {cells} | {dragged} |")
    save_result("followups", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
