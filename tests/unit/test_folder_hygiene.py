"""Folder hygiene: ignore files, dependency and build folders, legacy formats, the size
limit, and a reader whose extra is missing (named once, what is indexed kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

from twokeys import IndexOptions, build_index, open_index
from twokeys.ingest import SkippedFile, load_documents
from twokeys.ingest.readers import READERS, ReaderSpec


def _write(path: Path, text: str = "# Doc\n\nSome text about zebras.\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _ids(root: Path, **kwargs: object) -> tuple[list[str], list[SkippedFile]]:
    skipped: list[SkippedFile] = []
    ids = [d.id for d in load_documents(root, on_skip=skipped.append, **kwargs)]  # type: ignore[arg-type]
    return ids, skipped


def test_ignore_files_and_default_folders_are_left_out(tmp_path: Path) -> None:
    _write(tmp_path / "keep.md")
    _write(tmp_path / "drafts" / "wip.md")
    _write(tmp_path / "notes" / "a.log.md")
    _write(tmp_path / "notes" / "b.md")
    _write(tmp_path / "notes" / "secret.md")
    (tmp_path / ".gitignore").write_text("drafts/\n*.log.md\n")
    (tmp_path / "notes" / ".twokeysignore").write_text("secret.md\n")
    _write(tmp_path / "node_modules" / "pkg" / "README.md")
    _write(tmp_path / "env" / "lib" / "README.md")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    _write(tmp_path / "build" / "html" / "index.html", "<title>x</title><p>built</p>")
    _write(tmp_path / "pkg.egg-info" / "PKG-INFO.txt")
    _write(tmp_path / ".git" / "HEAD.md")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    ids, skipped = _ids(tmp_path)
    assert ids == ["keep.md", "notes/b.md"]
    assert skipped == []


def test_legacy_office_files_and_oversized_files_are_named_skips(tmp_path: Path) -> None:
    _write(tmp_path / "old.doc", "binary")
    _write(tmp_path / "old.ppt", "binary")
    _write(tmp_path / "big.md", "# Big\n\n" + "zebra " * 2000)
    _write(tmp_path / "ok.md")
    ids, skipped = _ids(tmp_path, max_file_bytes=4096)
    assert ids == ["ok.md"]
    reasons = {s.path: s.reason for s in skipped}
    assert "save it as .docx" in reasons["old.doc"]
    assert "save it as .pptx" in reasons["old.ppt"]
    assert "over the" in reasons["big.md"] and "limit per file" in reasons["big.md"]


def test_a_missing_extra_is_said_once_and_keeps_what_is_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _write(docs / "a.md")
    for name in ("x.fake", "y.fake", "z.fake"):
        _write(docs / name, "zebra crossing notes\n")
    text_reader = ReaderSpec("text", "twokeys.ingest.readers.text")
    monkeypatch.setitem(READERS, ".fake", text_reader)
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None))
    missing = ReaderSpec("text", "twokeys.ingest.readers.text", "fake", ("no_such_module_x",))
    monkeypatch.setitem(READERS, ".fake", missing)
    seen: list[SkippedFile] = []
    report = build_index(
        docs, tmp_path / "kb.twokeys", IndexOptions(encoder=None), on_skip=seen.append
    )
    (said,) = seen
    assert said.count == 3 and said.path == "3 text files"
    assert "pip install 'twokeys[fake]'" in said.reason
    assert report.removed == 0
    with open_index(tmp_path / "kb.twokeys") as kb:
        assert {h.doc_id for h in kb.search("zebra crossing", mode="bm25", k=5)} >= {"x.fake"}
