"""BM25 against bm25s in bm25s' own clean virtual environment: the fair headline.

bm25s is fastest where it is installed as its README says and nothing else is: with
``tqdm`` present (as in the benchmark venv, which other peers pull it into) every
``retrieve`` pays for its progress machinery even with ``show_progress=False``. So the
headline runs bm25s in an environment of its own, created here from ``pip install
bm25s==VERSION PyStemmer numba`` (the README's install, its stemmer, and numba for its
numba backend; not ``bm25s[core]``, which adds tqdm), in a child process
(``bm25s_child.py``) with every documented setup as a row: the Quickstart call (numpy
backend), the numba backend, and its ``Tokenizer`` class with token-id queries and
``return_as="documents"``, on both backends. The same Quickstart call and numba backend
run in this (twokeys') environment as second rows (``peer_calls.Bm25s``).

twokeys runs here: ``Index.search(mode="bm25", k=10)`` over a ``build_index`` of the
same corpus (no encoder): a query's text to materialised hits with their text, title
and path; bm25s returns rows only, as does the row "twokeys lexical arrays" (the same
index's analyzer and lexical index, ``index.backend.lexical.search_query``: no hits built).

Timing: one thread each (``SINGLE_THREAD_ENV``; the child inherits it), every system
answers all queries once per round, rounds interleaved across systems and processes
(A B C ..., A B C ...), per-system medians of ``--rounds`` rounds; wall-clock and the
working thread's CPU time (steadier on a loaded machine). Ratios are twokeys' speed
over each row's, and the goal is >= 1.5x against the fastest row.

``python -m benchmarks bm25-clean`` (SciFact); ``--sizes 1000000`` adds the synthetic
corpus of ``scale.py`` at that many documents. ``BM25S_VENV`` names the environment
(default ``benchmarks/.tmp/bm25s-venv``; created when missing).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BENCH_DIR,
    DATA,
    SINGLE_THREAD_ENV,
    WORK,
    log,
    median,
    save_result,
    version,
)

K = 10
BM25S_VERSION = "0.3.16"
INSTALL = (f"bm25s=={BM25S_VERSION}", "PyStemmer", "numba")
GOAL = 1.5


def venv_dir() -> Path:
    return Path(os.environ.get("BM25S_VENV", WORK / "bm25s-venv"))


def ensure_venv(path: Path) -> Path:
    """The clean environment's Python, created with INSTALL when missing."""
    python = path / "bin" / "python"
    stamp = path / ".twokeys-bench-installed"
    if stamp.exists() and stamp.read_text(encoding="utf-8") == " ".join(INSTALL):
        return python
    log(f"creating {path}: pip install {' '.join(INSTALL)}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *INSTALL], check=True)
    stamp.write_text(" ".join(INSTALL), encoding="utf-8")
    return python


class Child:
    """bm25s_child.py in the clean environment, driven over its stdin and stdout."""

    def __init__(
        self, python: Path, corpus: Path, queries: Path, setups: Sequence[str] | None = None
    ) -> None:
        only = [",".join(setups)] if setups else []
        self.proc = subprocess.Popen(
            [str(python), str(BENCH_DIR / "bm25s_child.py"), str(corpus), str(queries), *only],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **SINGLE_THREAD_ENV},
        )
        self._ready: dict[str, Any] | None = None

    @property
    def ready(self) -> dict[str, Any]:
        """The child's first line, once its setups are built (it builds while the caller
        builds twokeys' index)."""
        if self._ready is None:
            self._ready = self._read()
        return self._ready

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"bm25s_child.py exited {self.proc.wait()} (its stderr is above)")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        self.proc.wait()


def _all_queries(fn: Callable[[str], object], queries: Sequence[str]) -> dict[str, float]:
    start, start_cpu = time.perf_counter(), time.thread_time()
    for query in queries:
        fn(query)
    return {"wall_s": time.perf_counter() - start, "cpu_s": time.thread_time() - start_cpu}


def measure(
    name: str,
    corpus: Path,
    queries: Sequence[str],
    rounds: int,
    python: Path,
    setups: Sequence[str] | None = None,
    built: Path | None = None,
) -> dict[str, Any]:
    """Every system over ``corpus``, timed in interleaved rounds (``setups``: only these of
    bm25s' setups, in both environments; all when None; ``built``: twokeys' index of
    ``corpus`` already built, searched as it is, not built, timed or removed)."""
    from benchmarks.peer_calls import Bm25s, numba_available
    from twokeys.engine import open_index
    from twokeys.indexer import IndexOptions, build_index

    WORK.mkdir(parents=True, exist_ok=True)
    queries_file = WORK / f"{name}-queries.txt"
    queries_file.write_text("".join(q.replace("\n", " ") + "\n" for q in queries), "utf-8")
    log(f"{name}: bm25s setups in {python.parent.parent} (child process)")
    child = Child(python, corpus, queries_file, setups)
    log(f"{name}: twokeys " + (f"index {built}, as built" if built else "build_index (no encoder)"))
    path = built or WORK / f"{name}-bm25-clean.twokeys"
    build_s: float | None = None
    if built is None:
        shutil.rmtree(path, ignore_errors=True)
        start = time.perf_counter()
        build_index(corpus, path, IndexOptions(encoder=None))
        build_s = time.perf_counter() - start
    index = open_index(path)
    chunks = int(index.manifest.counts["chunks"])

    def twokeys_search(query: str) -> object:
        return index.search(query, mode="bm25", k=K)

    log(f"{name}: bm25s in this environment (tqdm installed: {version('tqdm')})")
    from benchmarks.common import load_corpus

    texts = load_corpus(corpus).texts
    wanted = {"numpy": "bm25s", "numba": "bm25s numba"}
    backends = tuple(
        b
        for b in (("numpy", "numba") if numba_available() else ("numpy",))
        if setups is None or wanted[b] in setups
    )
    here = {f"{b} (twokeys venv)": Bm25s(texts, backend=b) for b in backends}
    del texts
    lexical, analyzer = index.backend.lexical, index.analyzer
    local: dict[str, Callable[[str], object]] = {
        "twokeys Index.search": twokeys_search,
        # like for like with bm25s: the query's text to top-10 rows, no hits materialised
        "twokeys lexical arrays (rows only)": lambda q: lexical.search_query(analyzer, q, K),
    }
    for label, peer in here.items():
        row = "bm25s" if label.startswith("numpy") else "bm25s numba"
        local[f"{row}, twokeys venv"] = lambda q, peer=peer: peer.search(q, K)
    for fn in local.values():
        for query in queries[:5]:
            fn(query)

    same = _same_rows(child, here, queries)
    systems = [*local, *(f"{s}, clean venv" for s in child.ready["setups"])]
    walls: dict[str, list[float]] = {s: [] for s in systems}
    cpus: dict[str, list[float]] = {s: [] for s in systems}
    log(f"{name}: {rounds} interleaved rounds of {len(queries)} queries, {len(systems)} systems")
    for _ in range(rounds):
        for system in systems:
            if system in local:
                took = _all_queries(local[system], queries)
            else:
                took = child.ask("run " + system.removesuffix(", clean venv"))
            walls[system].append(took["wall_s"])
            cpus[system].append(took["cpu_s"])
    child.close()
    index.close()
    if built is None:
        shutil.rmtree(path, ignore_errors=True)
    n = len(queries)
    rows = {
        s: {
            "us_per_query": 1e6 * median(walls[s]) / n,
            "cpu_us_per_query": 1e6 * median(cpus[s]) / n,
        }
        for s in systems
    }
    ours = rows["twokeys Index.search"]
    for row in rows.values():
        row["twokeys_speedup"] = row["us_per_query"] / ours["us_per_query"]
        row["twokeys_speedup_cpu"] = row["cpu_us_per_query"] / ours["cpu_us_per_query"]
    clean = [s for s in systems if s.endswith("clean venv")]
    fastest = min(clean, key=lambda s: rows[s]["cpu_us_per_query"])
    return {
        "corpus": str(corpus),
        "chunks": chunks,
        "queries": n,
        "twokeys_build_s": build_s,
        "clean_build_s": child.ready["build_s"],
        "clean_packages": child.ready["packages"],
        "clean_has_tqdm": any(p.lower().startswith("tqdm==") for p in child.ready["packages"]),
        "same_top10_as_twokeys_venv": same,
        "rows": rows,
        "fastest_clean": fastest,
        "speedup_vs_fastest_clean": rows[fastest]["twokeys_speedup"],
        "speedup_vs_fastest_clean_cpu": rows[fastest]["twokeys_speedup_cpu"],
        "goal": GOAL,
        "rounds": rounds,
        "load_average": os.getloadavg(),
    }


def _same_rows(
    child: Child, here: dict[str, Any], queries: Sequence[str], n: int = 50
) -> float | None:
    """Share of the first ``n`` queries whose top-10 rows from the clean environment's
    Quickstart call (or numba backend) equal this environment's: the two rows must be the
    same search. None when neither setup runs in both."""
    for backend, setup in (("numpy", "bm25s"), ("numba", "bm25s numba")):
        if f"{backend} (twokeys venv)" in here and setup in child.ready["setups"]:
            break
    else:
        return None
    theirs = child.ask(f"rows {setup} {n}")["rows"]
    ours = [
        [int(r) for r in here[f"{backend} (twokeys venv)"].search(q, K)[0]] for q in queries[:n]
    ]
    return float(sum(a == b for a, b in zip(theirs, ours, strict=True)) / n)


def render(result: dict[str, Any]) -> str:
    lines = []
    for name, part in result["corpora"].items():
        lines.append(
            f"{name}: {part['chunks']:,} twokeys chunks, {part['queries']} queries, k={K}; "
            f"median of {part.get('rounds', result['rounds'])} interleaved rounds"
        )
        lines.append(f"{'system':<40} {'us/query':>9} {'CPU us':>9} {'twokeys x':>10}")
        for system, row in part["rows"].items():
            lines.append(
                f"{system:<40} {row['us_per_query']:>9.1f} {row['cpu_us_per_query']:>9.1f} "
                f"{row['twokeys_speedup_cpu']:>9.2f}x"
            )
        lines.append(
            f"vs the fastest clean row ({part['fastest_clean']}): "
            f"{part['speedup_vs_fastest_clean_cpu']:.2f}x CPU, "
            f"{part['speedup_vs_fastest_clean']:.2f}x wall (goal {GOAL}x)"
        )
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--sizes", type=int, nargs="*", default=[], help="synthetic sizes")
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--index",
        type=Path,
        default=None,
        help="twokeys' index of the synthetic corpus, already built (searched, not rebuilt)",
    )
    parser.add_argument(
        "--setups",
        nargs="*",
        default=None,
        help="only these bm25s setups on the synthetic sizes (e.g. 'bm25s numba'): "
        "building each over a million documents takes minutes",
    )
    args = parser.parse_args(argv)
    from twokeys.evaluation.beir import load_collection

    python = ensure_venv(venv_dir())
    coll = load_collection(args.collection)
    queries = [coll.queries[q] for q in sorted(coll.queries)]
    corpora: dict[str, Path] = {}
    if not args.no_scifact:
        corpora[args.collection.name] = args.collection / "corpus.jsonl"
    for size in args.sizes:
        from benchmarks.scale import make_corpus

        corpora[f"synthetic-{size}"] = make_corpus(size)
    done = {
        name: measure(
            name,
            path,
            queries,
            args.rounds,
            python,
            args.setups if name.startswith("synthetic") else None,
            args.index if name.startswith("synthetic") else None,
        )
        for name, path in corpora.items()
    }
    previous = BENCH_DIR / "results" / "bm25-clean.json"  # its other corpora are kept
    kept = json.loads(previous.read_text("utf-8"))["corpora"] if previous.exists() else {}
    result = {
        "rounds": args.rounds,
        "install": list(INSTALL),
        "versions": {p: version(p) for p in ("twokeys", "bm25s", "numba", "numpy", "tqdm")},
        "corpora": {**kept, **done},
    }
    print(render(result))
    log(f"wrote {save_result('bm25-clean', result)}")


if __name__ == "__main__":
    main()
