"""Crash-test matrix: SIGKILL `twokeys index` at seeded random points while other processes
search. Every search answers from a whole generation, the index passes `twokeys check`
after every run, and it holds exactly the documents of the last completed commit."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_docs
from twokeys.store.check import check_index
from twokeys.store.local import LocalIndex

pytestmark = pytest.mark.slow

RUNS = 20
SEED = 20261201
SEARCHERS = 2

# The CLI with the test suite's fake encoder registered (conftest registers "test-hash").
CLI = "import sys, conftest; from twokeys.cli import main; sys.argv[0] = 'twokeys'; main()"

# A searcher: opens the index, checks that the lexical arrays and the database it reads
# are the same whole generation (every document holds the word "common", so a BM25
# search for it returns every document of that generation), runs a hybrid search, and
# counts; stops when the stop file appears and writes its tally as JSON.
SEARCHER = """
import json, sys, time, conftest
from pathlib import Path
from twokeys import open_index
index, stop, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
tally = {"searches": 0, "errors": [], "generations": set()}
while not stop.exists():
    try:
        with open_index(index) as kb:
            docs = {d.id for d in kb.backend.all_documents()}
            hits = kb.search("common", mode="bm25", k=10_000)
            found = {h.doc_id for h in hits}
            if found != docs:
                where = kb.manifest.generation
                tally["errors"].append(f"{where}: bm25 {len(found)} docs, db {len(docs)}")
            if not kb.search("hub firmware power", mode="hybrid", k=5):
                tally["errors"].append(f"{kb.manifest.generation}: empty hybrid search")
            tally["generations"].add(kb.manifest.generation)
            tally["searches"] += 2
    except Exception as exc:
        tally["errors"].append(f"{type(exc).__name__}: {exc}")
    time.sleep(0.05)
tally["generations"] = len(tally["generations"])
out.write_text(json.dumps(tally))
"""


def _doc(name: str, version: int) -> str:
    return (
        f"# {name} v{version}\n\nThe common hub {name} reports power fault {version} and the "
        f"firmware {version}.{len(name)} fixes it.\n\n## Details\n\n"
        + " ".join(f"word{(version * 7 + i) % 97}" for i in range(60))
        + "\n"
    )


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _index_cmd(src: Path, index: Path) -> list[str]:
    return [
        sys.executable,
        "-c",
        CLI,
        "index",
        str(src),
        "--index",
        str(index),
        "-q",
        "--encoder",
        "test-hash",
    ]


def _stored(index: Path) -> tuple[str, dict[str, str]]:
    kb = LocalIndex(index)
    try:
        return kb.manifest.generation, {d.id: d.sha256 for d in kb.all_documents()}
    finally:
        kb.close()


def _state(src: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_text(encoding="utf-8").encode("utf-8")).hexdigest()
        for p in sorted(src.iterdir())
    }


def _start(src: Path, index: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _index_cmd(src, index), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _wait_for_write(proc: subprocess.Popen[bytes], index: Path) -> None:
    """Until the build starts writing its generation (or ends)."""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if any(p.name.startswith(".tmp-gen-") for p in index.iterdir()):
            return
        time.sleep(0.003)


def test_sigkill_matrix_while_searching(tmp_path: Path) -> None:
    rnd = random.Random(SEED)
    versions = {f"doc{i:03d}.md": 0 for i in range(80)}
    src = write_docs(tmp_path / "docs", {n: _doc(n, v) for n, v in versions.items()})
    index = tmp_path / "kb.twokeys"
    subprocess.run(_index_cmd(src, index), check=True, env=_env(), capture_output=True)

    stop = tmp_path / "stop"
    searchers = [
        subprocess.Popen(
            [sys.executable, "-c", SEARCHER, str(index), str(stop), str(tmp_path / f"s{i}.json")],
            env=_env(),
        )
        for i in range(SEARCHERS)
    ]
    kills = completed = lost = 0
    problems: list[str] = []
    try:
        # how long a build runs once it starts writing (searchers running), to spread kills
        (src / "doc000.md").write_text(_doc("doc000.md", 1))
        versions["doc000.md"] = 1
        proc = _start(src, index)
        _wait_for_write(proc, index)
        started = time.monotonic()
        assert proc.wait() == 0
        writing = max(0.05, time.monotonic() - started)
        committed = _stored(index)
        for run in range(RUNS):
            before = committed
            change = rnd.random()
            if change < 0.2:
                pass  # nothing changed: the build must commit nothing
            elif change < 0.5:
                name = f"new{run:03d}.md"
                versions[name] = run
                (src / name).write_text(_doc(name, run))
            elif change < 0.8:
                name = rnd.choice(sorted(versions))
                versions[name] += 1
                (src / name).write_text(_doc(name, versions[name]))
            else:
                name = rnd.choice(sorted(versions))
                del versions[name]
                (src / name).unlink()
            launched = _state(src)
            proc = _start(src, index)
            _wait_for_write(proc, index)
            writing_from = time.monotonic()
            deadline = writing_from + rnd.uniform(0, writing * 1.5)
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            else:
                # it finished first: follow how long builds write now (a busy machine
                # at the first measure would otherwise leave most builds unkilled)
                writing = max(0.05, (writing + time.monotonic() - writing_from) / 2)
            rc = proc.wait()
            if rc == 0:
                completed += 1
            elif rc != -signal.SIGKILL:
                problems.append(f"run {run}: exit {rc}: {proc.stderr.read().decode()[-300:]}")
            report = check_index(index)
            if not report.ok:
                problems.append(f"run {run}: check: {report.problems[0]}")
            generation, docs = _stored(index)
            # the last completed commit: this run's if its manifest was written, else the last
            expected = launched if (rc == 0 or generation != before[0]) else before[1]
            if docs != expected:
                missing = set(expected) - set(docs)
                lost += len(missing)
                problems.append(
                    f"run {run}: {len(missing)} lost, {len(set(docs) - set(expected))} extra"
                )
            committed = (generation, docs)
    finally:
        stop.touch()
        for s in searchers:
            s.wait(timeout=60)
    tallies = [json.loads((tmp_path / f"s{i}.json").read_text()) for i in range(SEARCHERS)]
    searches = sum(t["searches"] for t in tallies)
    errors = [e for t in tallies for e in t["errors"]]
    # the next good build leaves only its own generation: nothing of the killed ones
    subprocess.run(_index_cmd(src, index), check=True, env=_env(), capture_output=True)
    leftovers = sorted(
        p.name for p in index.iterdir() if p.name.startswith(("gen-", ".tmp", ".del"))
    )
    print(
        f"\ncrash matrix: {RUNS} runs, {kills} killed, {completed} completed, "
        f"{searches} searches in {SEARCHERS} processes over "
        f"{max(t['generations'] for t in tallies)}+ generations, {len(errors)} errors, "
        f"{lost} documents lost"
    )
    assert not problems, problems[:5]
    assert not errors, errors[:5]
    assert kills >= RUNS // 3 and searches > 0
    assert leftovers == [_stored(index)[0]]
