"""Readers and writers: a generation stays while a reader holds it; a no-op re-index commits
nothing; what killed builds leave is cleaned safely."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.store.leases import GenerationGone, lease, remove_unleased
from twokeys.store.local import MANIFEST, remove_stale

DOCS = {
    "a.md": "# Alpha\n\nThe hub resets after ten seconds.\n",
    "b.md": "# Beta\n\nFirmware signature check failed with ZX-4812.\n",
    "c.txt": "Gamma\n\nPower supply undervoltage on the hub.\n",
}
OPTIONS = IndexOptions(encoder="test-hash")


def _generations(index: Path) -> list[str]:
    return sorted(p.name for p in index.iterdir() if p.name.startswith(("gen-", ".tmp-", ".del-")))


def _current(index: Path) -> str:
    return str(json.loads((index / MANIFEST).read_text())["generation"])


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    build_index(src, index, OPTIONS)
    return src, index


def test_reindex_with_nothing_changed_commits_nothing(built: tuple[Path, Path]) -> None:
    src, index = built
    before = (index / MANIFEST).read_bytes()
    generations = _generations(index)
    report = build_index(src, index, OPTIONS, encoder=(enc := HashEncoder()))
    assert not report.committed
    assert (report.documents, report.unchanged, report.embedded_chunks, enc.encoded) == (3, 3, 0, 0)
    assert (index / MANIFEST).read_bytes() == before
    assert _generations(index) == generations


def test_reindex_with_other_parameters_commits(built: tuple[Path, Path]) -> None:
    src, index = built
    old = _current(index)
    report = build_index(
        src, index, IndexOptions(encoder="test-hash", bm25=OPTIONS.bm25.__class__(k1=1.2))
    )
    assert report.committed and _current(index) != old
    assert _generations(index) == [_current(index)]


def test_reader_keeps_its_generation_through_a_rebuild(built: tuple[Path, Path]) -> None:
    src, index = built
    old = _current(index)
    kb = open_index(index, encoder=HashEncoder())
    before = kb.search("firmware signature", k=3)
    (src / "d.md").write_text("# Delta\n\nA new page about the firmware.\n")
    build_index(src, index, OPTIONS)
    new = _current(index)
    assert new != old
    assert _generations(index) == sorted([old, new])  # the reader's generation stays
    assert kb.search("firmware signature", k=3) == before  # and answers as before
    kb.close()
    assert _generations(index) == [new]  # its last reader deleted it


def test_two_readers_the_last_one_deletes(built: tuple[Path, Path]) -> None:
    src, index = built
    old = _current(index)
    first, second = open_index(index), open_index(index)
    (src / "a.md").write_text("# Alpha\n\nChanged text.\n")
    build_index(src, index, OPTIONS)
    first.close()
    assert old in _generations(index)
    assert second.search("hub", mode="bm25", k=2)
    second.close()
    assert old not in _generations(index)


def test_remove_stale_keeps_leased_and_current_folders(built: tuple[Path, Path]) -> None:
    _, index = built
    current = _current(index)
    (index / ".tmp-gen-killed").mkdir()
    (index / ".tmp-gen-killed" / "twokeys.sqlite").write_bytes(b"x" * 1000)
    (index / "gen-orphan").mkdir()
    (index / ".del-gen-half").mkdir()
    (index / "gen-held").mkdir()
    (index / f"{MANIFEST}.tmp").write_text("{}")
    held = lease(index / "gen-held")
    try:
        assert remove_stale(index) == ["gen-held"]
        assert _generations(index) == sorted([current, "gen-held"])
        assert not (index / f"{MANIFEST}.tmp").exists()
    finally:
        held.release()
    assert remove_unleased(index / "gen-held")
    assert _generations(index) == [current]


def test_next_build_cleans_what_a_killed_build_left(built: tuple[Path, Path]) -> None:
    src, index = built
    (index / ".tmp-gen-20260101T000000-1-1").mkdir()
    (index / "gen-20260101T000000-1-2").mkdir()  # renamed into place, manifest never written
    report = build_index(src, index, OPTIONS)
    assert not report.committed
    assert _generations(index) == [_current(index)]


def test_searches_never_fail_while_index_reruns(built: tuple[Path, Path]) -> None:
    """The issue's failure: hybrid searches while `index` re-runs on the same index."""
    src, index = built
    errors: list[BaseException] = []
    answers = 0
    stop = threading.Event()

    def searcher() -> None:
        nonlocal answers
        while not stop.is_set():
            try:
                with open_index(index, encoder=HashEncoder()) as kb:
                    hits = kb.search("hub firmware", k=3)
                    assert hits
                    answers += 1
            except BaseException as exc:  # counted and reported below
                errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(12):
            text = f"# Alpha\n\nThe hub resets after {i} seconds.\n" if i % 2 else DOCS["a.md"]
            (src / "a.md").write_text(text)
            build_index(src, index, OPTIONS)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    assert answers > 0
    assert _generations(index) == [_current(index)]


def test_a_reader_waiting_on_a_removal_finds_the_folder_gone(tmp_path: Path) -> None:
    """The race a removal's rename closes: the lease waits, then sees another folder."""
    folder = tmp_path / "gen-a"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a remover holds the folder
    outcome: list[object] = []
    reader = threading.Thread(target=lambda: outcome.append(_try_lease(folder)))
    reader.start()
    reader.join(timeout=0.2)
    assert reader.is_alive()  # waiting for the remover
    os.replace(folder, tmp_path / ".del-gen-a")
    folder.mkdir()  # even a new folder under the old name is not the one locked
    os.close(fd)
    reader.join(timeout=5)
    assert outcome == [GenerationGone]


def _try_lease(folder: Path) -> object:
    try:
        lease(folder).release()
    except GenerationGone:
        return GenerationGone
    return "leased"
