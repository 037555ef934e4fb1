"""What the server's security and operations layers cost per request.

``python -m benchmarks.guard_overhead`` calls a trivial ASGI app (it answers 200 at
once) ``--requests`` times in one event loop: bare, behind
:class:`~twokeys.server.security.Guard` (Host, origin, a key among 50 in constant
time, content type, concurrency, timeout), and behind the access log and metrics as
well (``AccessLog`` with the Prometheus sink, the log line formatted). Each variant is
timed in alternating rounds in the same run and the best round kept; it prints the
microseconds each layer adds to a request. Results go to
``benchmarks/results/guard_overhead.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from twokeys.server.accesslog import AccessLog, format_record
from twokeys.server.keys import ApiKey
from twokeys.server.metrics import Metrics
from twokeys.server.security import Guard, Policy

RESULTS = Path(__file__).resolve().parent / "results"
KEYS = tuple(ApiKey(f"k{i}", "read", f"key-{i:04d}-0123456789abcdef") for i in range(50))


async def trivial(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def scope() -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": "/search",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"authorization", b"Bearer " + KEYS[-1].secret.encode()),
            (b"content-length", b"2"),
        ],
    }


async def rounds(app: Any, n: int) -> float:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Any) -> None:
        return None

    start = time.perf_counter()
    for _ in range(n):
        await app(scope(), receive, send)
    return (time.perf_counter() - start) / n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("twokeys.access").setLevel(logging.WARNING)
    metrics = Metrics(lambda: [])
    policy = Policy(keys=KEYS)

    def log_line(record: Any) -> None:
        format_record(record, as_json=True)

    variants = {
        "bare": trivial,
        "guard": Guard(trivial, policy),
        "guard + access log + metrics": AccessLog(
            Guard(trivial, policy), [metrics.observe, log_line], collection="kb"
        ),
    }
    best = {name: float("inf") for name in variants}
    for _ in range(args.rounds):
        for name, app in variants.items():
            best[name] = min(best[name], asyncio.run(rounds(app, args.requests)))
    us = {name: round(1e6 * s, 1) for name, s in best.items()}
    print("| stack | µs per request | added |")
    print("|---|---|---|")
    for name, value in us.items():
        print(f"| {name} | {value} | {round(value - us['bare'], 1)} |")
    RESULTS.mkdir(exist_ok=True)
    result = {"requests": args.requests, "rounds": args.rounds, "microseconds": us}
    (RESULTS / "guard_overhead.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
