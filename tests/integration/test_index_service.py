"""Writes to a served index: ``indexer.update_documents`` (one commit per change, only new
text embedded) and ``IndexService`` (leases, one writer, reopening after a commit)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.errors import ConfigError
from twokeys.indexer import update_documents
from twokeys.server.documents import check_id, read_document
from twokeys.server.service import IndexBusyError, IndexService, UnknownDocumentError
from twokeys.store.local import write_lock

DOCS = {
    "a.md": "# Alpha\n\nAlpha talks about the aurora borealis.",
    "b.md": "# Beta\n\nBeta explains the basalt columns.",
}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    write_docs(tmp_path / "src", DOCS)
    build_index(tmp_path / "src", tmp_path / "kb.twokeys", IndexOptions(encoder="test-hash"))
    return tmp_path / "kb.twokeys"


def doc(doc_id: str, text: str) -> object:
    return read_document(text.encode(), doc_id, ".md")


def ids(path: Path, query: str, mode: str = "bm25") -> list[str]:
    with open_index(path, encoder=HashEncoder()) as index:
        return [h.doc_id for h in index.search(query, mode=mode)]


def test_update_adds_replaces_and_deletes_in_one_commit(kb: Path) -> None:
    encoder = HashEncoder()
    report = update_documents(
        kb, [doc("c.md", "# Gamma\n\nGamma covers the glacier.")], ["b.md"], encoder=encoder
    )
    assert (report.added, report.removed, report.unchanged, report.embedded_chunks) == (1, 1, 1, 1)
    assert encoder.encoded == 1  # only the new text
    assert ids(kb, "glacier") == ["c.md"]
    assert ids(kb, "basalt") == []
    assert ids(kb, "aurora", "hybrid")[0] == "a.md"
    again = update_documents(kb, [doc("c.md", "# Gamma\n\nGamma covers the glacier.")])
    assert (again.added, again.changed, again.embedded_chunks) == (0, 0, 0)
    changed = update_documents(kb, [doc("c.md", "# Gamma\n\nNow it is the geyser.")])
    assert changed.changed == 1
    assert ids(kb, "geyser") == ["c.md"] and ids(kb, "glacier") == []
    with open_index(kb) as index:
        assert index.manifest.counts["documents"] == 2


def test_update_refuses_contradictions_and_unknown_ids(kb: Path) -> None:
    with pytest.raises(ConfigError, match="'a.md' is both added and deleted"):
        update_documents(kb, [doc("a.md", "# A\n\nx y")], ["a.md"])
    with pytest.raises(ConfigError, match="the same id is given twice"):
        update_documents(kb, [doc("x.md", "# X\n\nx"), doc("x.md", "# X\n\ny")])
    with pytest.raises(ConfigError, match="no document 'zzz.md' to delete"):
        update_documents(kb, (), ["zzz.md"])


def test_deleting_every_document_leaves_a_searchable_empty_index(kb: Path) -> None:
    update_documents(kb, (), ["a.md", "b.md"])
    assert ids(kb, "aurora") == [] and ids(kb, "aurora", "hybrid") == []


def test_read_document_parses_like_the_indexer_and_checks_ids() -> None:
    d = read_document(b"---\ntitle: Front\nlang: en\n---\nBody text.", "x/y.md", ".md")
    assert (d.id, d.path, d.title, d.metadata["lang"]) == ("x/y.md", "x/y.md", "Front", "en")
    html = read_document(b"<html><title>T</title><body><p>Hi there</p></body></html>", "p", ".html")
    assert html.title == "T" and "Hi there" in html.text
    with pytest.raises(ConfigError, match="binary file"):
        read_document(b"\x00\x01", "bin.txt", ".txt")
    with pytest.raises(ConfigError, match="unsupported file type '.jsonl'"):
        read_document(b"{}", "c.jsonl", ".jsonl")
    for bad, why in [("", "is empty"), ("a\nb", "control character"), ("x" * 600, "limit")]:
        with pytest.raises(ConfigError, match=why):
            check_id(bad)


def test_service_keeps_a_leased_generation_open_across_writes(kb: Path) -> None:
    service = IndexService(kb)
    with service.reader() as before:
        service.write([doc("c.md", "# Gamma\n\nGamma covers the glacier.")])
        # the reader's lease keeps the old generation on disk, and it reads it whole
        old_folder = kb / before.manifest.generation
        assert old_folder.exists()
        assert [h.doc_id for h in before.search("glacier", mode="bm25")] == []
        assert before.search("aurora", mode="hybrid")[0].doc_id == "a.md"
        with service.reader() as after:
            assert after is not before
            assert [h.doc_id for h in after.search("glacier", mode="bm25")] == ["c.md"]
    with pytest.raises(UnknownDocumentError, match="no document 'nope.md'"):
        service.write((), ["nope.md"])
    service.close()


def test_service_notices_a_commit_by_another_process(kb: Path, tmp_path: Path) -> None:
    service = IndexService(kb)
    with service.reader() as index:
        assert index.manifest.counts["documents"] == 2
    write_docs(tmp_path / "src", {"c.md": "# Gamma\n\nGamma covers the glacier."})
    build_index(tmp_path / "src", kb, IndexOptions(encoder="test-hash"))
    with service.reader() as index:
        assert index.manifest.counts["documents"] == 3
    service.close()


def test_a_write_while_another_process_writes_is_busy(kb: Path) -> None:
    service = IndexService(kb)
    with write_lock(kb), pytest.raises(IndexBusyError, match="try again"):
        service.write([doc("c.md", "# C\n\nc")])
    service.close()


def test_concurrent_writers_are_serialised(kb: Path) -> None:
    service = IndexService(kb)
    errors: list[Exception] = []

    def add(i: int) -> None:
        try:
            service.write([doc(f"w{i}.md", f"# W{i}\n\nwriter number{i} text")])
        except Exception as exc:  # pragma: no cover - the assertion shows it
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with service.reader() as index:
        assert index.manifest.counts["documents"] == 6
    service.close()
    shutil.rmtree(kb)


def test_another_backend_is_served_read_only(kb: Path) -> None:
    from twokeys.store.contract import register_backend
    from twokeys.store.local import LocalIndex

    register_backend("testfs", lambda location: LocalIndex(Path(location[len("testfs://") :])))
    service = IndexService(f"testfs://{kb}")
    assert service.path is None
    with service.reader() as index:
        assert index.search("aurora", mode="bm25")[0].doc_id == "a.md"
    with pytest.raises(ConfigError, match="testfs:// is read-only"):
        service.write((), ["a.md"])
    service.close()
