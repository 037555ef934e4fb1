"""BM25 index build: twokeys' ``build_index`` against bm25s' build, side by side (SciFact).

Every build starts cold, as in a user's fresh process: twokeys' shared analyzer (whose
term caches would otherwise carry over from the previous round) is dropped first; bm25s
keeps nothing between builds. Systems, built in interleaved rounds (order alternating)
in one process:

* ``twokeys-index``: ``build_index(corpus.jsonl, IndexOptions(encoder=None))``, what
  ``twokeys index --no-dense`` runs: read, chunk, analyse, lexical arrays, SQLite and hit
  files, commit, in one process.
* ``twokeys-docs``: twokeys' build analysis (``analysed_matrix``: its term coder and
  term matrix) + ``bm25_weights`` on whole documents in memory: like for like with bm25s.
* ``bm25s``: ``bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer)`` +
  ``BM25().index(...)``, as its README does it (``benchmarks/peer_calls.py``; numpy
  backend, its default). ``bm25s-numba``: the same with ``BM25(backend="numba")``.

Per build: wall-clock seconds and CPU seconds of this process and its finished children
(none: every system builds in one process), and for ``twokeys-index`` the seconds per
stage. Memory: each system built once more in a fresh subprocess: the peak RSS over the
RSS before the build, and tracemalloc's peak of Python + numpy allocations in that
process.

Run: ``python -m benchmarks bm25-build`` (``--rounds N``, default 5).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA,
    WORK,
    load_corpus,
    log,
    median,
    peak_rss_mb,
    reset_peak_rss,
    rss_mb,
    run_child,
    save_result,
    version,
)

K1, B = 0.9, 0.4
SYSTEMS = ("twokeys-index", "twokeys-docs", "bm25s", "bm25s-numba")
#: per build stage of the last twokeys-index build: seconds from its start to its last step
STAGES: dict[str, float] = {}


def _progress(name: str, total: int | None) -> Callable[[int], None]:
    start = time.perf_counter()
    STAGES[name] = 0.0

    def advance(_n: int) -> None:
        STAGES[name] = time.perf_counter() - start

    return advance


def _cold_analyzer() -> None:
    from twokeys.analysis import analyzer_for

    analyzer_for.cache_clear()


def build_twokeys_index(collection: Path) -> None:
    from twokeys.indexer import IndexOptions, build_index

    path = WORK / "scifact-build.twokeys"
    shutil.rmtree(path, ignore_errors=True)
    _cold_analyzer()
    build_index(collection / "corpus.jsonl", path, IndexOptions(encoder=None), progress=_progress)


def build_twokeys_docs(collection: Path) -> None:
    from twokeys.analysis import AnalyzerSpec
    from twokeys.lexical.batches import analysed_matrix
    from twokeys.lexical.bm25 import BM25Params, bm25_weights

    _cold_analyzer()
    texts = load_corpus(collection / "corpus.jsonl").texts
    matrix = analysed_matrix(texts, AnalyzerSpec())
    bm25_weights(matrix, BM25Params(k1=K1, b=B))


def build_bm25s(collection: Path, backend: str = "numpy") -> None:
    import tqdm

    from benchmarks.peer_calls import Bm25s

    # bm25s' progress bars (off) still start tqdm's monitor thread, which would keep
    # twokeys' later builds in this process from forking workers: no monitor
    tqdm.tqdm.monitor_interval = 0
    Bm25s(load_corpus(collection / "corpus.jsonl").texts, backend=backend)


BUILDERS: dict[str, Callable[[Path], None]] = {
    "twokeys-index": build_twokeys_index,
    "twokeys-docs": build_twokeys_docs,
    "bm25s": build_bm25s,
    "bm25s-numba": lambda c: build_bm25s(c, backend="numba"),
}


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def memory_child(system: str, collection: Path) -> dict[str, float]:
    """Child process: peak memory of one build of ``system`` (after its imports)."""
    import tracemalloc

    import bm25s  # noqa: F401

    import twokeys.engine
    import twokeys.indexer  # noqa: F401

    if system == "bm25s-numba":
        import numba  # noqa: F401
    reset_peak_rss()
    before = rss_mb()
    BUILDERS[system](collection)
    peak = peak_rss_mb()
    tracemalloc.start()
    BUILDERS[system](collection)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"build_delta_mb": peak - before, "traced_build_peak_mb": traced / 2**20}


def run(collection: Path, rounds: int) -> dict[str, Any]:
    WORK.mkdir(parents=True, exist_ok=True)
    for name in SYSTEMS:  # warm-up: imports, numba's compilation, the page cache
        BUILDERS[name](collection)
    wall: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    cpu: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    stages: list[dict[str, float]] = []
    log(f"{rounds} interleaved rounds of {len(SYSTEMS)} builds (order alternating)")
    for r in range(rounds):
        for name in SYSTEMS if r % 2 == 0 else tuple(reversed(SYSTEMS)):
            start, start_cpu = time.perf_counter(), _cpu()
            BUILDERS[name](collection)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_cpu() - start_cpu)
            if name == "twokeys-index":
                stages.append(dict(STAGES))
    log("peak memory: one subprocess per system")
    memory = {
        name: run_child("bm25_build", ["--memory", name, "--collection", str(collection)])
        for name in SYSTEMS
    }
    from twokeys.indexer import CHUNK_BATCH
    from twokeys.lexical.batches import BATCH_CHARS
    from twokeys.lexical.coding import _kernel
    from twokeys.text.sentences import _kernel as _text_kernel

    texts = load_corpus(collection / "corpus.jsonl").texts
    return {
        "collection": str(collection),
        "documents": len(texts),
        "rounds": rounds,
        "wall_s": wall,
        "cpu_s": cpu,
        "median_wall_s": {name: median(t) for name, t in wall.items()},
        "median_cpu_s": {name: median(t) for name, t in cpu.items()},
        "stages_s": {k: median([s.get(k, 0.0) for s in stages]) for k in stages[-1]},
        "memory": memory,
        "settings": {
            "chunk_batch": CHUNK_BATCH,
            "analysis_batch_chars": BATCH_CHARS,
            "compiled_kernel": _kernel is not None,
            "compiled_text_kernel": _text_kernel is not None,
        },
        "load_average": os.getloadavg(),
        "versions": {p: version(p) for p in ("twokeys", "bm25s", "numba", "numpy")},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--memory", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory:
        print(json.dumps(memory_child(args.memory, args.collection)))
        return
    path = save_result("bm25-build", run(args.collection, args.rounds))
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
