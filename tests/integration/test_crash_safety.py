"""Killing `twokeys index` midway leaves the previous index intact and loadable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SHARED_DATA
from twokeys import IndexOptions, build_index, open_index

pytestmark = pytest.mark.slow

SCIFACT = SHARED_DATA / "scifact" / "corpus.jsonl"
ADI = SHARED_DATA / "adi" / "corpus.jsonl"


def _start(index: Path) -> subprocess.Popen[bytes]:
    """``twokeys index`` of SciFact into ``index``, once it has started writing (its
    temporary generation folder exists)."""
    cli = [sys.executable, "-m", "twokeys.cli", "index", str(SCIFACT), "--index", str(index)]
    # --replace: SciFact into the index of ADI (a different source) replaces its documents
    proc = subprocess.Popen([*cli, "--no-dense", "-q", "--replace"], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".tmp-gen-") for p in index.iterdir()):
        assert proc.poll() is None, "index finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def _writing_seconds(tmp_path: Path, tries: int = 2) -> float:
    """How long the build writes before it commits (from its temporary folder's creation
    to its rename into place) on this machine now, the shortest of ``tries`` builds: the
    kills below land at fractions of it, so they fall before the commit however fast or
    loaded the machine is. (Timed to the process's exit instead, a fast build could be
    killed after its commit, while it was closing down.)"""
    shortest = float("inf")
    for n in range(tries):
        index = tmp_path / f"timing-{n}.twokeys"
        build_index(ADI, index, IndexOptions(encoder=None))
        proc = _start(index)
        started = time.monotonic()
        while any(p.name.startswith(".tmp-gen-") for p in index.iterdir()):
            time.sleep(0.002)
        shortest = min(shortest, time.monotonic() - started)
        assert proc.wait() == 0
    return shortest


@pytest.mark.skipif(not SCIFACT.is_file(), reason="shared data not available")
@pytest.mark.parametrize("fraction", [0.1, 0.5])
def test_sigkill_during_index_keeps_previous_index(tmp_path: Path, fraction: float) -> None:
    index = tmp_path / "kb.twokeys"
    build_index(ADI, index, IndexOptions(encoder=None))
    with open_index(index) as kb:
        before = kb.search("computer indexing", mode="bm25", k=5)
        generation = kb.manifest.generation
    delay = fraction * _writing_seconds(tmp_path)
    proc = _start(index)
    time.sleep(delay)
    assert proc.poll() is None, "index finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open_index(index) as kb:
        assert kb.manifest.generation == generation
        assert kb.manifest.counts["documents"] == 82
        assert kb.search("computer indexing", mode="bm25", k=5) == before
    # the next build cleans up the dead generation and succeeds
    report = build_index(ADI, index, IndexOptions(encoder=None))
    assert report.unchanged == 82
    assert not [p for p in index.iterdir() if p.name.startswith(".tmp-")]


def test_forked_child_closes_its_copy_of_the_write_lock(tmp_path: Path) -> None:
    """A process forked while a build holds the lock (a caller's own worker, say) and
    left running after the build is killed must not keep the index locked."""
    from twokeys.store import local

    with local.write_lock(tmp_path / "kb.twokeys"):
        (fd,) = local._HELD_LOCKS
        pid = os.fork()
        if pid == 0:  # the child: its copy of the lock file is closed
            try:
                os.fstat(fd)
            except OSError:
                os._exit(0)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        os.fstat(fd)  # the parent's is still open
    assert os.waitstatus_to_exitcode(status) == 0
    assert not local._HELD_LOCKS
