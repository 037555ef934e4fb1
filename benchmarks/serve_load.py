"""A bounded load test of ``twokeys serve``: searches from concurrent clients while
another client adds and deletes documents.

``python -m benchmarks.serve_load`` (in the project's venv, with the ``serve`` extra)
indexes ``examples/support-kb`` with the default encoder, starts ``twokeys serve`` as
its own process on a free loopback port, and runs ``--searches`` hybrid searches (the
support-kb queries in turn) from ``--clients`` threads, while one writer thread adds a
document, then deletes the one added before it, over and over until the searches are
done. It reports throughput, latency percentiles, errors (any status but 200), and
checks at the end that the server's document count is exactly the writer's tally and
that every added document is found by its marker word and every deleted one is not.
Results go to ``benchmarks/results/serve_load.json``; the exit status is 1 when any
request failed or the count is off.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
KB = REPO / "examples" / "support-kb"
RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_server(index: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "twokeys.cli", "serve", "--index", str(index), "--port", str(port)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("twokeys serve did not start")
        time.sleep(0.2)


def run(searches: int, clients: int, mode: str) -> dict[str, Any]:
    from twokeys import IndexOptions, build_index

    queries = [
        json.loads(line)["query"]
        for line in (KB / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with tempfile.TemporaryDirectory(prefix="twokeys-load-") as tmp:
        index = Path(tmp) / "kb.twokeys"
        build_index(KB / "docs", index, IndexOptions())
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(index, port)
        try:
            with httpx.Client() as warm:  # load the encoder before the clock starts
                warm.post(f"{url}/search", json={"query": queries[0], "mode": mode})
                start_docs = warm.get(f"{url}/stats").json()["counts"]["documents"]
            return _measure(url, queries, searches, clients, mode, start_docs)
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _measure(
    url: str, queries: list[str], searches: int, clients: int, mode: str, start_docs: int
) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    counter = iter(range(searches))
    done = threading.Event()

    def searcher() -> None:
        with httpx.Client(timeout=60) as client:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                body = {"query": queries[i % len(queries)], "mode": mode, "k": 10}
                t0 = time.perf_counter()
                r = client.post(f"{url}/search", json=body)
                elapsed = time.perf_counter() - t0
                with lock:
                    latencies.append(elapsed)
                    if r.status_code != 200 or not r.json()["hits"]:
                        errors.append(f"search {r.status_code}: {r.text[:200]}")

    live: list[str] = []
    deleted: list[str] = []
    write_latencies: list[float] = []

    def writer() -> None:
        with httpx.Client(timeout=120) as client:
            n = 0
            while not done.is_set():
                doc_id = f"load/doc-{n:05d}.md"
                text = f"# Load document {n}\n\nThe marker word is loadmarker{n:05d}, once."
                t0 = time.perf_counter()
                r = client.post(
                    f"{url}/documents", json={"documents": [{"id": doc_id, "text": text}]}
                )
                write_latencies.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    errors.append(f"add {r.status_code}: {r.text[:200]}")
                else:
                    live.append(doc_id)
                if len(live) > 1:
                    old = live.pop(0)
                    t0 = time.perf_counter()
                    r = client.delete(f"{url}/documents/{old}")
                    write_latencies.append(time.perf_counter() - t0)
                    if r.status_code != 200:
                        errors.append(f"delete {r.status_code}: {r.text[:200]}")
                        live.insert(0, old)
                    else:
                        deleted.append(old)
                n += 1

    threads = [threading.Thread(target=searcher) for _ in range(clients)]
    write_thread = threading.Thread(target=writer)
    started = time.perf_counter()
    write_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    done.set()
    write_thread.join()

    with httpx.Client(timeout=60) as client:
        count = client.get(f"{url}/stats").json()["counts"]["documents"]
        expected = start_docs + len(live)

        def found(doc_id: str) -> bool:
            marker = "loadmarker" + doc_id.split("-")[-1].removesuffix(".md")
            r = client.post(f"{url}/search", json={"query": marker, "mode": "bm25", "k": 3})
            return any(h["doc_id"] == doc_id for h in r.json()["hits"])

        missing = [d for d in live if not found(d)]
        lingering = [d for d in deleted[-20:] if found(d)]
    ms = [1000 * x for x in latencies]
    wms = [1000 * x for x in write_latencies]
    return {
        "searches": len(latencies),
        "clients": clients,
        "mode": mode,
        "wall_seconds": round(wall, 2),
        "searches_per_second": round(len(latencies) / wall, 1),
        "latency_ms": {
            "p50": round(percentile(ms, 50), 1),
            "p95": round(percentile(ms, 95), 1),
            "p99": round(percentile(ms, 99), 1),
            "mean": round(statistics.fmean(ms), 1),
        },
        "writes": len(write_latencies),
        "write_latency_ms": {
            "p50": round(percentile(wms, 50), 1),
            "p95": round(percentile(wms, 95), 1),
        },
        "errors": len(errors),
        "error_samples": errors[:5],
        "documents_at_end": count,
        "documents_expected": expected,
        "count_exact": count == expected,
        "added_not_found": missing,
        "deleted_still_found": lingering,
        "cpus": os.cpu_count(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--mode", default="hybrid")
    args = parser.parse_args()
    result = run(args.searches, args.clients, args.mode)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "serve_load.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = result["errors"] == 0 and result["count_exact"] and not result["added_not_found"]
    return 0 if ok and not result["deleted_still_found"] else 1


if __name__ == "__main__":
    sys.exit(main())
