"""A write that fails (disk full, read-only, immutable) is one line naming the path and the
cause, and the previous index stays whole."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.errors import IndexWriteError
from twokeys.store.check import check_index
from twokeys.store.local import GenerationWriter

DOCS = {
    f"d{i}.md": f"# Doc {i}\n\nThe hub {i} reports ZX-{4800 + i} on power loss.\n"
    for i in range(20)
}
OPTIONS = IndexOptions(encoder="test-hash")


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path, str]:
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    build_index(src, index, OPTIONS)
    with open_index(index) as kb:
        generation = kb.manifest.generation
    (src / "new.md").write_text("# New\n\nA page that makes the next build write.\n")
    return src, index, generation


def _unchanged(index: Path, generation: str) -> None:
    with open_index(index) as kb:
        assert kb.manifest.generation == generation
        assert kb.search("hub power", mode="bm25", k=3)
    assert check_index(index).ok
    assert not [p for p in index.iterdir() if p.name.startswith((".tmp-", ".del-"))]


def test_disk_full_in_an_array_write_is_named(
    built: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, index, generation = built

    def full(self: GenerationWriter, name: str, array: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.tmp_dir / name))

    monkeypatch.setattr(GenerationWriter, "_save", full)
    with pytest.raises(IndexWriteError, match=r"embeddings\.npy: no space left on device"):
        build_index(src, index, OPTIONS)
    _unchanged(index, generation)


def test_disk_full_in_the_database_is_named(
    built: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, index, generation = built

    connect = sqlite3.connect

    class Full:  # a new generation's database that runs out of space on the chunks
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __getattr__(self, name: str) -> object:
            return getattr(self.db, name)

        def executemany(self, sql: str, rows: object) -> object:
            if "INTO chunks" in sql:
                raise sqlite3.OperationalError("database or disk is full")
            return self.db.executemany(sql, rows)  # type: ignore[arg-type]

    def fake_connect(path: object, *args: object, **kwargs: object) -> object:
        db = connect(path, *args, **kwargs)  # type: ignore[arg-type]
        return Full(db) if ".tmp-gen-" in str(path) else db

    monkeypatch.setattr(sqlite3, "connect", fake_connect)
    with pytest.raises(IndexWriteError, match=r"its database: no space left on device"):
        build_index(src, index, OPTIONS)
    _unchanged(index, generation)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "twokeys.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@pytest.fixture
def mounts(tmp_path: Path) -> Iterator[list[Path]]:
    """Mount points made by a test (root only), unmounted afterwards."""
    made: list[Path] = []
    yield made
    for point in reversed(made):
        subprocess.run(["umount", str(point)], check=False)


def _mount(mounts: list[Path], *args: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    result = subprocess.run(["mount", *args], capture_output=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount here: {result.stderr.decode().strip()}")
    mounts.append(Path(args[-1]))


@pytest.mark.slow
def test_real_disk_full_keeps_the_previous_index(
    built: tuple[Path, Path, str], tmp_path: Path, mounts: list[Path]
) -> None:
    src, _, _ = built
    (src / "new.md").unlink()
    probe = tmp_path / "probe"
    build_index(src, probe, IndexOptions(encoder=None))
    size = sum(f.stat().st_blocks * 512 for f in probe.rglob("*") if f.is_file())
    small = tmp_path / "small"
    small.mkdir()
    _mount(mounts, "-t", "tmpfs", "-o", f"size={size * 3 + (64 << 10)}", "tmpfs", str(small))
    target = small / "kb.twokeys"
    assert _cli("index", str(src), "--index", str(target), "-q", "--no-dense").returncode == 0
    with open_index(target) as kb:
        generation = kb.manifest.generation
    for i, name in enumerate(DOCS):  # a new generation many times the size of the old
        words = " ".join(f"term{i}x{j}" for j in range(3000))
        (src / name).write_text(f"{DOCS[name]}\n{words}\n")
    done = _cli("index", str(src), "--index", str(target), "-q", "--no-dense")
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("error: cannot write the index")
    assert "no space left on device" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    _unchanged(target, generation)


@pytest.mark.slow
def test_read_only_and_immutable_targets_are_one_line(
    built: tuple[Path, Path, str], tmp_path: Path, mounts: list[Path]
) -> None:
    src, index, generation = built
    view = tmp_path / "ro"
    view.mkdir()
    _mount(mounts, "--bind", str(index), str(view))
    _mount(mounts, "-o", "remount,bind,ro", str(view))
    for target in (view, view / "sub"):
        done = _cli("index", str(src), "--index", str(target), "-q", "--no-dense")
        assert done.returncode == 1
        assert "read-only file system" in done.stderr and "Traceback" not in done.stderr
    searched = _cli("search", "hub power", "--index", str(view), "--mode", "bm25", "-k", "1")
    assert searched.returncode == 0 and "1. " in searched.stdout
    assert _cli("check", "--index", str(view)).returncode == 0
    if subprocess.run(["chattr", "+i", str(index)], capture_output=True, check=False).returncode:
        pytest.skip("chattr +i is not supported here")
    try:
        done = _cli("index", str(src), "--index", str(index), "-q", "--no-dense")
    finally:
        subprocess.run(["chattr", "-i", str(index)], check=False)
    assert done.returncode == 1 and "operation not permitted" in done.stderr
    assert "Traceback" not in done.stderr
    _unchanged(index, generation)
