"""Latency of a chat turn and of searches under concurrency, through ``twokeys serve``.

``python -m benchmarks.chat_latency`` indexes ``examples/support-kb`` (default encoder),
starts ``twokeys serve`` as its own process on a free loopback port and measures:

* chat: ``--chats`` non-streamed ``/v1/chat/completions`` turns of a three-turn
  conversation (a system prompt, a question, a reply, a follow-up), without a model
  (the extractive answer) and, unless ``--no-model``, with ``--llm local`` (llama.cpp
  running Gemma 3 270M in the server process, ``twokeys[local-llm]``), p50 and p95;
* search: hybrid ``/search`` requests from 1, 8 and 32 concurrent clients
  (``--searches`` per level), p50 and p95 per request and throughput.

Bounded in count; server and clients share the machine, so figures are relative.
Saves ``benchmarks/results/chat_latency.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import httpx

from benchmarks.common import WORK, log, save_result
from benchmarks.serve_load import KB, free_port, percentile, serve

CONVERSATION = [
    {"role": "system", "content": "You are the support assistant of Lumatek. " * 20},
    {"role": "user", "content": "What is the refund policy for a change of mind?"},
    {"role": "assistant", "content": "You may request a refund within 30 days [1]."},
    {"role": "user", "content": "and how many days do I have for software licences?"},
]
QUERIES = [
    "What does error code ZX-4821 mean?",
    "How do I factory reset the Hub?",
    "camera offline after a power cut",
    "refund for a broken item",
    "How long is the warranty?",
    "push notifications not arriving on Android",
]


def chat_latency(url: str, n: int) -> dict[str, float]:
    seconds = []
    body = {"model": "twokeys", "messages": CONVERSATION}
    with httpx.Client(timeout=300) as client:
        client.post(f"{url}/v1/chat/completions", json=body).raise_for_status()  # warm
        for _ in range(n):
            started = time.perf_counter()
            client.post(f"{url}/v1/chat/completions", json=body).raise_for_status()
            seconds.append(time.perf_counter() - started)
    return {
        "n": n,
        "p50_ms": percentile(seconds, 50) * 1e3,
        "p95_ms": percentile(seconds, 95) * 1e3,
    }


def search_latency(url: str, clients: int, total: int) -> dict[str, float]:
    seconds: list[float] = []
    errors = 0
    lock = threading.Lock()
    per_client = max(1, total // clients)

    def client_loop(i: int) -> None:
        nonlocal errors
        with httpx.Client(timeout=120) as client:
            for j in range(per_client):
                query = QUERIES[(i + j) % len(QUERIES)]
                started = time.perf_counter()
                r = client.post(f"{url}/search", json={"query": query, "k": 10})
                took = time.perf_counter() - started
                with lock:
                    seconds.append(took)
                    errors += r.status_code != 200

    started = time.perf_counter()
    threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    return {
        "clients": clients,
        "n": len(seconds),
        "errors": errors,
        "per_s": len(seconds) / wall,
        "p50_ms": percentile(seconds, 50) * 1e3,
        "p95_ms": percentile(seconds, 95) * 1e3,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chat_latency", description=__doc__)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--model-chats", type=int, default=5)
    parser.add_argument("--searches", type=int, default=96)
    parser.add_argument("--no-model", action="store_true")
    args = parser.parse_args(argv)
    from twokeys import IndexOptions, build_index

    index = WORK / "chat-latency-support-kb.twokeys"
    if not (index / "manifest.json").is_file():
        log(f"building {index}")
        build_index(KB / "docs", index, IndexOptions())
    results: dict[str, Any] = {"chat": {}, "search": []}
    port = free_port()
    proc = serve(index, port, timeout=180)
    url = f"http://127.0.0.1:{port}"
    try:
        results["chat"]["without a model"] = chat_latency(url, args.chats)
        for clients in (1, 8, 32):
            results["search"].append(search_latency(url, clients, args.searches))
    finally:
        proc.terminate()
        proc.wait(30)
    if not args.no_model:
        port = free_port()
        proc = serve(index, port, "--llm", "local", timeout=180)
        try:
            results["chat"]["local model (Gemma 3 270M)"] = chat_latency(
                f"http://127.0.0.1:{port}", args.model_chats
            )
        finally:
            proc.terminate()
            proc.wait(30)
    print("| chat turn | n | p50 | p95 |\n|---|---:|---:|---:|")
    for name, c in results["chat"].items():
        print(f"| {name} | {c['n']} | {c['p50_ms']:.0f} ms | {c['p95_ms']:.0f} ms |")
    print("\n| search clients | n | searches/s | p50 | p95 | errors |")
    print("|---:|---:|---:|---:|---:|---:|")
    for s in results["search"]:
        print(
            f"| {s['clients']} | {s['n']} | {s['per_s']:.1f} | {s['p50_ms']:.0f} ms | "
            f"{s['p95_ms']:.0f} ms | {s['errors']} |"
        )
    save_result("chat_latency", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
