"""Search latency of two source trees of twokeys side by side: is a change slower?

``python -m benchmarks.tree_latency --base /tmp/base-worktree`` compares the tree this
file is in (``--head``, the default) with another checkout of twokeys (``--base``, e.g.
``git worktree add /tmp/base-worktree COMMIT``; a compiled lexical kernel must be copied
into it, as ``src/`` of any checkout needs one). Each tree runs in its own long-lived
subprocess (``PYTHONPATH=<tree>/src``; the child checks which ``twokeys`` it imported),
both open the same index, read-only, and after a warm-up pass are asked for one query
at a time, alternately (query 1 base then head, query 2 head then base, ...; rounds over
all queries), so a burst of load elsewhere on the machine hits both alike. Per query,
``Index.search(query, k=10, mode=...)`` is timed in wall-clock time and in process CPU
time (every thread of the process: the query encoder's too).

Cases: ``bm25`` on SciFact (test queries) and ``hybrid`` on Cranfield with the default
encoder (MiniLM), each over eval's cached index for the collection
(:func:`~twokeys.evaluation.experiment.ensure_index`: reused when there, built once
otherwise). Reported per case and tree: p50, p95 and mean of the per-query median wall
time over the rounds, and mean CPU per query; then head / base ratios of those, the
median over queries of each query's own head / base ratio (paired), and the range of
the per-round ratios of mean wall time as the noise band. Both trees' top-10 documents
are compared query by query (a speed-up that changes results is not one).

Writes ``benchmarks/results/tree-latency.json`` (not part of RESULTS.md: the figures
compare two commits, not twokeys with its peers; notes go to NOTES.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
K = 10


@dataclass(frozen=True)
class Case:
    name: str
    collection: str
    mode: str
    encoder: str | None


CASES = (
    Case("scifact-bm25", "scifact", "bm25", "minilm"),
    Case("cranfield-hybrid-minilm", "cranfield", "hybrid", "minilm"),
)


# -- the child: one tree, one index, one query at a time on request -------------------


def child(tree: str, index: str, mode: str, queries_file: str) -> None:
    """Open ``index`` with the ``twokeys`` of ``tree``; print one JSON line when ready
    (the documents of each query's hits in the warm-up pass), then for each query
    number read from stdin, that query's wall-clock and CPU seconds."""
    import twokeys
    from twokeys import open_index

    where = Path(twokeys.__file__).resolve()
    if not where.is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"child for {tree} imported twokeys from {where}")
    texts: list[str] = json.loads(Path(queries_file).read_text(encoding="utf-8"))
    index_ = open_index(index)

    def one(i: int) -> tuple[float, float, list[str]]:
        start, start_cpu = time.perf_counter(), time.process_time()
        hits = index_.search(texts[i], k=K, mode=mode)
        cpu = time.process_time() - start_cpu
        return time.perf_counter() - start, cpu, [h.doc_id for h in hits]

    # warm-up: first-query loads, page cache, encoder session
    top = [one(i)[2] for i in range(len(texts))]
    print(json.dumps({"twokeys": str(where), "top": top}), flush=True)
    for line in sys.stdin:
        wall, cpu, _ = one(int(line))
        print(json.dumps([wall, cpu]), flush=True)


# -- the parent: two children, interleaved rounds ------------------------------------


class Child:
    def __init__(self, tree: Path, index: str, mode: str, queries_file: Path) -> None:
        from benchmarks.common import SINGLE_THREAD_ENV

        env = {**os.environ, **SINGLE_THREAD_ENV, "PYTHONPATH": f"{tree / 'src'}:{REPO}"}
        args = ["child", str(tree), index, mode, str(queries_file)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.tree_latency", *args],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ready = self._read()

    def _read(self) -> Any:
        out: IO[str] | None = self.proc.stdout
        line = out.readline() if out is not None else ""
        if not line:
            raise RuntimeError(f"child exited ({self.proc.wait()}); its stderr is above")
        return json.loads(line)

    def query(self, i: int) -> tuple[float, float]:
        """Query ``i``'s wall-clock and CPU seconds."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{i}\n")
        self.proc.stdin.flush()
        wall, cpu = self._read()
        return wall, cpu

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _summary(walls: list[list[float]], cpus: list[list[float]]) -> dict[str, float]:
    from benchmarks.common import percentiles

    per_query = [statistics.median(times) for times in zip(*walls, strict=True)]
    cpu_per_query = statistics.median(statistics.mean(c) for c in cpus)
    spread = percentiles(per_query, (50, 95))
    return {
        "p50_ms": 1000 * spread["p50"],
        "p95_ms": 1000 * spread["p95"],
        "mean_ms": 1000 * statistics.mean(per_query),
        "cpu_ms": 1000 * cpu_per_query,
    }


def compare(case: Case, trees: dict[str, Path], rounds: int) -> dict[str, Any]:
    from benchmarks.common import DATA, log
    from twokeys.evaluation.beir import load_collection
    from twokeys.evaluation.experiment import default_index_path, ensure_index

    collection = load_collection(DATA / case.collection, "test")
    index = ensure_index(
        collection, default_index_path(DATA / case.collection), encoder=case.encoder, cached=True
    ).path
    texts = [collection.queries[q] for q in sorted(collection.queries)]
    with tempfile.TemporaryDirectory() as tmp:
        queries_file = Path(tmp) / "queries.json"
        queries_file.write_text(json.dumps(texts), encoding="utf-8")
        children: dict[str, Child] = {}
        try:
            for name, tree in trees.items():
                children[name] = Child(tree, str(index), case.mode, queries_file)
            walls: dict[str, list[list[float]]] = {name: [] for name in trees}
            cpus: dict[str, list[list[float]]] = {name: [] for name in trees}
            round_ratio: list[float] = []
            names = list(trees)
            for r in range(rounds):
                for name in names:
                    walls[name].append([])
                    cpus[name].append([])
                for i in range(len(texts)):  # the order alternates by query and round
                    for name in names if (r + i) % 2 == 0 else names[::-1]:
                        wall, cpu = children[name].query(i)
                        walls[name][-1].append(wall)
                        cpus[name][-1].append(cpu)
                round_ratio.append(
                    statistics.mean(walls["head"][-1]) / statistics.mean(walls["base"][-1])
                )
                log(f"{case.name}: round {r + 1}/{rounds}, head/base {round_ratio[-1]:.3f}")
            top = {name: c.ready["top"] for name, c in children.items()}
        finally:
            for c in children.values():
                c.close()
    summary = {name: _summary(walls[name], cpus[name]) for name in trees}
    ratio = {key: summary["head"][key] / summary["base"][key] for key in summary["head"]}
    paired = statistics.median(
        statistics.median(h) / statistics.median(b)
        for h, b in zip(
            zip(*walls["head"], strict=True), zip(*walls["base"], strict=True), strict=True
        )
    )
    differ = sum(a != b for a, b in zip(top["base"], top["head"], strict=True))
    return {
        "case": case.name,
        "mode": case.mode,
        "index": str(index),
        "queries": len(texts),
        "rounds": rounds,
        "trees": summary,
        "head_over_base": ratio,
        "paired_query_ratio": paired,
        "round_ratio_range": [min(round_ratio), max(round_ratio)],
        "queries_with_other_top10": differ,
    }


def _commit(tree: Path) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tree, capture_output=True, text=True)
        return done.stdout.strip()

    return git("rev-parse", "--short", "HEAD") + (
        " (+ changes)" if git("status", "--porcelain", "src") else ""
    )


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["child"]:
        child(*argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--head", type=Path, default=REPO, help="default: this checkout")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--cases", nargs="+", default=[c.name for c in CASES])
    args = parser.parse_args(argv)
    from benchmarks.common import log, save_result

    trees = {"base": args.base.resolve(), "head": args.head.resolve()}
    for name, tree in trees.items():
        if not (tree / "src" / "twokeys" / "__init__.py").is_file():
            parser.error(f"--{name} {tree}: no src/twokeys there")
    rows = [compare(c, trees, args.rounds) for c in CASES if c.name in args.cases]
    for row in rows:
        h, b, q = row["trees"]["head"], row["trees"]["base"], row["head_over_base"]
        lo, hi = row["round_ratio_range"]
        log(
            f"{row['case']}: p50 {b['p50_ms']:.3f} -> {h['p50_ms']:.3f} ms ({q['p50_ms']:.3f}x), "
            f"cpu {b['cpu_ms']:.3f} -> {h['cpu_ms']:.3f} ms ({q['cpu_ms']:.3f}x), "
            f"paired {row['paired_query_ratio']:.3f}x, rounds {lo:.3f}-{hi:.3f}x, "
            f"{row['queries_with_other_top10']} queries' top-10 differ"
        )
    path = save_result(
        "tree-latency",
        {"commits": {name: _commit(tree) for name, tree in trees.items()}, "cases": rows},
    )
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
