"""``python -m benchmarks PART``: all, cold-start, bm25, bm25-clean, bm25-build, embedding,
vectors, scale, identifiers or report.

Each part runs in its own process (so thread settings and peak-memory readings of one
part can't leak into another), writes ``benchmarks/results/<part>.json``, and the
report turns whatever results exist into ``benchmarks/RESULTS.md``. Options after the
part name go to that part (``python -m benchmarks scale --sizes 10000 100000 1000000``).
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.common import REPO, SINGLE_THREAD_ENV, log

PARTS = {
    "cold-start": ("benchmarks.cold_start", {}),  # whole processes, as a user runs them
    "bm25": ("benchmarks.bm25_peers", SINGLE_THREAD_ENV),
    "bm25-clean": ("benchmarks.bm25_clean", SINGLE_THREAD_ENV),  # bm25s in its own venv
    "bm25-build": ("benchmarks.bm25_build", SINGLE_THREAD_ENV),
    "embedding": ("benchmarks.embedding", {}),  # both systems use every core
    "vectors": ("benchmarks.vector_search", SINGLE_THREAD_ENV),
    "scale": ("benchmarks.scale", SINGLE_THREAD_ENV),
    "identifiers": ("benchmarks.identifiers", {}),  # bare-identifier and mixed queries
}


def run_part(name: str, args: list[str]) -> int:
    module, env = PARTS[name]
    log(f"== {name}: python -m {module} {' '.join(args)}")
    return subprocess.call(
        [sys.executable, "-m", module, *args], cwd=REPO, env={**os.environ, **env}
    )


def main() -> int:
    argv = sys.argv[1:]
    part = argv[0] if argv else "all"
    rest = argv[1:]
    if part not in (*PARTS, "all", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    status = 0
    if part == "all":
        for name in PARTS:
            status |= run_part(name, [])
    elif part != "report":
        status = run_part(part, rest)
    from benchmarks.report import write_report

    log(f"wrote {write_report()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
