"""A bounded load run of ``twokeys serve``: concurrent clients mixing searches, chat
completions (no model: extractive answers) and document reads, while a writer replaces
documents, all through the server's keys, guard and access log.

``python -m benchmarks.serve_load`` (in the project's venv, with the ``serve`` extra)
indexes ``examples/support-kb`` with the default encoder, writes a keys file (a read
key for the clients, a write key for the writer), starts ``twokeys serve --keys-file``
as its own process on a free loopback port, and for ``--duration`` seconds runs
``--clients`` threads, each doing in turn a ``POST /search`` (``--mode``), a ``POST
/search``, a ``POST /v1/chat/completions`` and a ``GET /documents/{id}``, while one
writer thread replaces ``--writer-docs`` documents of its own round-robin (``POST
/documents``, each text with a fresh marker word). It reports latency percentiles per
kind of request, the statuses seen, the server's peak resident memory (``VmHWM``), and
checks at the end that the document count is exact, that each writer document is found
by its latest marker and not by the one before, and that the access log has a line per
request. Results go to ``benchmarks/results/serve_load.json``; the exit status is 1 on
any 5xx, any failed search, or a wrong count.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import socket
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
READ_KEY = "load-reader-0123456789abcdef"
WRITE_KEY = "load-writer-0123456789abcdef"
KINDS = ("search", "search", "chat", "document")


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


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident memory (Linux ``VmHWM``), in MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def serve(
    index: Path, port: int, *args: str, stderr: Any = subprocess.DEVNULL, timeout: float = 120.0
) -> subprocess.Popen[bytes]:
    """``twokeys serve --index INDEX --port PORT ARGS`` in a child process (this tree's
    source, no key from the environment), returned once its ``/healthz`` answers."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    env.pop("TWOKEYS_API_KEYS", None)
    command = [sys.executable, "-m", "twokeys.cli", "serve", "--index", str(index)]
    proc = subprocess.Popen([*command, "--port", str(port), *args], env=env, stderr=stderr)
    deadline = time.monotonic() + timeout
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


def start_server(index: Path, port: int, keys: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return serve(index, port, "--keys-file", str(keys), "--access-log", "json", stderr=out)


def run(duration: float, clients: int, mode: str, writer_docs: int) -> dict[str, Any]:
    from twokeys import IndexOptions, build_index

    queries = [
        json.loads(line)["query"]
        for line in (KB / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    doc_ids = sorted(
        str(p.relative_to(KB / "docs")) for p in (KB / "docs").rglob("*.md") if p.is_file()
    )
    with tempfile.TemporaryDirectory(prefix="twokeys-load-") as tmp:
        index = Path(tmp) / "kb.twokeys"
        build_index(KB / "docs", index, IndexOptions())
        keys = Path(tmp) / "keys"
        keys.write_text(f"clients:read:{READ_KEY}\nwriter:write:{WRITE_KEY}\n")
        log = Path(tmp) / "access.log"
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(index, port, keys, log)
        try:
            read = {"Authorization": f"Bearer {READ_KEY}"}
            with httpx.Client(headers=read) as warm:  # load the encoder before the clock
                warm.post(f"{url}/search", json={"query": queries[0], "mode": mode})
                start_docs = warm.get(f"{url}/stats").json()["counts"]["documents"]
            lines_before = len(log.read_text().splitlines())
            result = _measure(
                url, queries, doc_ids, duration, clients, mode, writer_docs, start_docs
            )
            result["peak_rss_mb"] = peak_rss_mb(proc.pid)
            time.sleep(0.5)
            logged = [ln for ln in log.read_text().splitlines()[lines_before:] if '"route"' in ln]
            result["access_log_lines"] = len(logged)
            return result
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _measure(
    url: str,
    queries: list[str],
    doc_ids: list[str],
    duration: float,
    clients: int,
    mode: str,
    writer_docs: int,
    start_docs: int,
) -> dict[str, Any]:
    latencies: dict[str, list[float]] = collections.defaultdict(list)
    statuses: collections.Counter[str] = collections.Counter()
    failed: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + duration
    read = {"Authorization": f"Bearer {READ_KEY}"}

    def record(kind: str, r: httpx.Response, elapsed: float, ok: bool) -> None:
        with lock:
            latencies[kind].append(elapsed)
            statuses[f"{kind} {r.status_code}"] += 1
            if not ok:
                failed.append(f"{kind} {r.status_code}: {r.text[:200]}")

    def client(n: int) -> None:
        i = n
        with httpx.Client(timeout=120, headers=read) as http:
            while time.monotonic() < deadline:
                kind = KINDS[i % len(KINDS)]
                query = queries[i % len(queries)]
                t0 = time.perf_counter()
                if kind == "search":
                    body = {"query": query, "mode": mode, "k": 10}
                    r = http.post(f"{url}/search", json=body)
                    ok = r.status_code == 200 and bool(r.json()["hits"])
                elif kind == "chat":
                    body = {"model": "twokeys", "messages": [{"role": "user", "content": query}]}
                    r = http.post(f"{url}/v1/chat/completions", json=body)
                    ok = r.status_code == 200 and bool(r.json()["choices"][0]["message"]["content"])
                else:
                    r = http.get(f"{url}/documents/{doc_ids[i % len(doc_ids)]}")
                    ok = r.status_code == 200 and bool(r.json()["chunks"])
                record(kind, r, time.perf_counter() - t0, ok)
                i += 1

    latest: dict[str, int] = {}
    previous: dict[str, int] = {}

    def writer() -> None:
        write = {"Authorization": f"Bearer {WRITE_KEY}"}
        with httpx.Client(timeout=120, headers=write) as http:
            n = 0
            while time.monotonic() < deadline:
                doc_id = f"load/doc-{n % writer_docs:02d}.md"
                text = f"# Load document {n}\n\nThe marker word is loadmarker{n:06d}, once."
                t0 = time.perf_counter()
                r = http.post(
                    f"{url}/documents", json={"documents": [{"id": doc_id, "text": text}]}
                )
                record("write", r, time.perf_counter() - t0, r.status_code == 200)
                if r.status_code == 200:
                    if doc_id in latest:
                        previous[doc_id] = latest[doc_id]
                    latest[doc_id] = n
                n += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    threads.append(threading.Thread(target=writer))
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started

    with httpx.Client(timeout=60, headers=read) as http:
        count = http.get(f"{url}/stats").json()["counts"]["documents"]

        def found(doc_id: str, n: int) -> bool:
            body = {"query": f"loadmarker{n:06d}", "mode": "bm25", "k": 3}
            hits = http.post(f"{url}/search", json=body).json()["hits"]
            return any(h["doc_id"] == doc_id for h in hits)

        missing = [d for d, n in latest.items() if not found(d, n)]
        stale = [d for d, n in previous.items() if found(d, n)]

    requests = sum(len(v) for v in latencies.values())
    five_xx = sum(c for k, c in statuses.items() if k.split()[1].startswith("5"))
    return {
        "duration_seconds": duration,
        "wall_seconds": round(wall, 2),
        "clients": clients,
        "mode": mode,
        "requests": requests,
        "requests_per_second": round(requests / wall, 1),
        "latency_ms": {
            kind: {
                "count": len(values),
                "p50": round(1000 * percentile(values, 50), 1),
                "p95": round(1000 * percentile(values, 95), 1),
                "p99": round(1000 * percentile(values, 99), 1),
            }
            for kind, values in sorted(latencies.items())
        },
        "statuses": dict(sorted(statuses.items())),
        "five_xx": five_xx,
        "failed": len(failed),
        "failed_samples": failed[:5],
        "failed_searches": sum(1 for f in failed if f.startswith("search")),
        "documents_at_end": count,
        "documents_expected": start_docs + len(latest),
        "count_exact": count == start_docs + len(latest),
        "replaced_not_found": missing,
        "replaced_text_still_found": stale,
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--writer-docs", type=int, default=5)
    args = parser.parse_args()
    result = run(args.duration, args.clients, args.mode, args.writer_docs)
    result["access_log_complete"] = result["access_log_lines"] >= result["requests"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "serve_load.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ok = result["five_xx"] == 0 and result["failed_searches"] == 0 and result["count_exact"]
    ok = ok and not result["replaced_not_found"] and not result["replaced_text_still_found"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
