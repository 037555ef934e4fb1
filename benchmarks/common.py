"""Shared helpers for the benchmarks: paths, data loading, interleaved timing, memory.

Speeds on a shared, noisy machine are only compared as ratios measured in one process
run: every benchmark times its systems in interleaved rounds (A B C, A B C, ...) and
reports the median round, so a burst of load elsewhere hits every system alike.
Peak memory is measured in a fresh subprocess per system (``ru_maxrss``), since a high
water mark can't be reset inside one process.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
DATA = Path(os.environ.get("TWOKEYS_DATA", REPO.parent / "shared" / "data"))
WORK = BENCH_DIR / ".tmp"  # scratch indexes; ignored by the repository's `.tmp/` rule
RESULTS = BENCH_DIR / "results"  # one JSON per benchmark, read by the report

SINGLE_THREAD_ENV = {
    var: "1"
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMBA_NUM_THREADS",
    )
}


@dataclass(frozen=True)
class Corpus:
    """A BEIR corpus as parallel lists; text is title + text, as twokeys indexes it."""

    ids: list[str]
    titles: list[str]
    bodies: list[str]

    @property
    def texts(self) -> list[str]:
        return [f"{t}\n{b}" if t else b for t, b in zip(self.titles, self.bodies, strict=True)]


def load_corpus(path: Path) -> Corpus:
    ids: list[str] = []
    titles: list[str] = []
    bodies: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                ids.append(str(record["_id"]))
                titles.append(str(record.get("title") or ""))
                bodies.append(str(record.get("text") or ""))
    return Corpus(ids, titles, bodies)


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux ``clear_refs`` 5).

    Needed in a child process: its inherited mark is the parent's peak at fork time.
    """
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def rss_mb() -> float:
    """Resident set size now."""
    return _status_mb("VmRSS") or 0.0


def private_rss_mb() -> float:
    """The anonymous (private) part of the resident set: pages of memory-mapped files,
    which the page cache shares and can drop, left out."""
    return _status_mb("RssAnon") or 0.0


def peak_rss_mb() -> float:
    """Peak resident set size since start or the last :func:`reset_peak_rss`."""
    peak = _status_mb("VmHWM")
    if peak is not None:
        return peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def interleaved(
    systems: Mapping[str, Callable[[], object]],
    rounds: int,
    *,
    warmup: bool = True,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each system, called in interleaved rounds; with ``cpu``, the
    calling thread's CPU seconds per call go there too (steadier than wall-clock time on
    a loaded machine, for single-threaded systems)."""
    if warmup:
        for fn in systems.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in systems}
    for name in systems if cpu is not None else ():
        cpu[name] = []
    for _ in range(rounds):
        for name, fn in systems.items():
            start, start_cpu = time.perf_counter(), time.thread_time()
            fn()
            times[name].append(time.perf_counter() - start)
            if cpu is not None:
                cpu[name].append(time.thread_time() - start_cpu)
    return times


def percentiles(values: Sequence[float], qs: Iterable[int] = (50, 95)) -> dict[str, float]:
    ordered = sorted(values)
    out = {}
    for q in qs:
        idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
        out[f"p{q}"] = ordered[idx]
    return out


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def run_child(module: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> Any:
    """Run ``python -m benchmarks.<module> ARGS`` and parse the JSON it prints last.

    The child's stderr (progress, warnings) passes through to ours.
    """
    full_env = {**os.environ, **SINGLE_THREAD_ENV, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *args],
        cwd=REPO,
        env=full_env,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"benchmarks.{module} {' '.join(args)} failed (its stderr is above)")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
    }
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in lscpu.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "L3 cache"):
                info[key.strip()] = value.strip()
    except OSError:
        pass
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            info["memory"] = fh.readline().split(":")[1].strip()
    except OSError:
        pass
    return info


def save_result(name: str, data: Mapping[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "machine": machine_info(), **data}
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
