"""Documents and chunks keep their ids when other documents are re-indexed; hits carry both."""

from __future__ import annotations

from pathlib import Path

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index

DOCS = {
    "a.md": "# Alpha\n\n## One\n\nPower fuse and supply.\n\n## Two\n\nUndervoltage alarm.\n",
    "b.md": "# Beta\n\nFirmware signature check.\n",
    "c.md": "# Gamma\n\nRefund for a broken parcel.\n",
}


def test_ids_survive_reindexing_other_documents(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    build_index(src, index, IndexOptions(encoder="test-hash"))
    with open_index(index) as kb:
        hits = kb.search("undervoltage alarm", mode="bm25", k=1)
        hit = hits[0]
        assert (hit.doc_id, hit.chunk_id) == ("a.md", hit.chunk.id)
        assert hit.chunk_id.startswith("a.md#")
        old_row = kb.backend.documents(["a.md"])["a.md"].first_row
    # other documents change: one added before a.md in row order, one removed, one edited
    write_docs(src, {"0-first.md": "# First\n\nA new page.\n\nWith text.\n"})
    (src / "c.md").unlink()
    write_docs(src, {"b.md": "# Beta\n\nFirmware signature check, second edition.\n"})
    build_index(src, index, IndexOptions(encoder="test-hash"))
    with open_index(index) as kb:
        assert kb.backend.documents(["a.md"])["a.md"].first_row != old_row  # rows moved
        again = kb.search("undervoltage alarm", mode="bm25", k=1)[0]
        assert (again.doc_id, again.chunk_id) == (hit.doc_id, hit.chunk_id)
        found = kb.passages([hit.chunk_id, "c.md#0", "a.md#99", "no-hash", "b.md#0"])
        assert found[hit.chunk_id] == hit.chunk  # the kept id still names the same chunk
        assert set(found) == {hit.chunk_id, "b.md#0"}
        assert "second edition" in found["b.md#0"].text
        assert again.to_dict()["chunk_id"] == hit.chunk_id
        assert again.to_dict()["doc_id"] == "a.md"
