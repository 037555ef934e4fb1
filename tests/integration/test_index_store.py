"""Build, search, update and reopen an on-disk index (with the fake encoder)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.analysis import ANALYZER_VERSION
from twokeys.errors import ConfigError, EncoderMismatchError, IndexFormatError, TwokeysError
from twokeys.lexical.index import ArrayLexicalIndex
from twokeys.store.hittable import STRINGS, HitTable
from twokeys.store.local import MANIFEST

DOCS = {
    "errors/zx-4821.md": "# ZX-4821\n\n## Cause\n\nPower supply undervoltage on the hub.\n",
    "errors/zx-4812.md": "# ZX-4812\n\n## Cause\n\nFirmware signature check failed.\n",
    "notes/decision.md": "# Decisions\n\nWe chose nomic-embed-text over mxbai-embed-large.\n",
    "guide.txt": "Resetting\n\nHold the button for ten seconds to reset the hub.\n",
    "page.html": "<html><head><title>Grub</title></head><body><h1>Grub</h1>"
    "<p>Add --unrestricted to the menu entry.</p></body></html>",
}
OPTIONS = IndexOptions(encoder="test-hash")


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    report = build_index(src, index, OPTIONS)
    assert report.documents == 5
    assert report.added == 5
    return src, index


def test_search_modes_return_typed_hits(built: tuple[Path, Path]) -> None:
    _, index = built
    with open_index(index) as kb:
        bm25 = kb.search("ZX-4821", mode="bm25", k=5, explain=True)
        assert [h.doc_id for h in bm25] == ["errors/zx-4821.md"]  # never the twin
        assert bm25[0].chunk.heading_path[0] == "ZX-4821"
        assert bm25[0].evidence[0].matched_terms[0][0] == "zx-4821"
        dense = kb.search("firmware signature", mode="dense", k=2)
        assert len(dense) == 2 and all(-1.0 <= h.score <= 1.0001 for h in dense)
        hybrid = kb.search("nomic-embed-text", k=3, explain=True)
        assert hybrid[0].path == "notes/decision.md"
        parts = {e.retriever: e for e in hybrid[0].evidence}
        assert set(parts) == {"bm25", "dense"}
        assert hybrid[0].score == pytest.approx(sum(e.fused for e in parts.values()))
        assert kb.search("unrestricted", mode="bm25")[0].title == "Grub"


def test_layout_is_manifest_sqlite_and_plain_npy(built: tuple[Path, Path]) -> None:
    _, index = built
    manifest = json.loads((index / MANIFEST).read_text())
    assert manifest["format_version"] == 1
    assert manifest["bm25"] == {"k1": 0.9, "b": 0.4}
    assert manifest["encoder"]["id"] == "test:hash-64"
    assert manifest["analyzer"]["name"] == "twokeys-technical"
    gen = index / manifest["generation"]
    assert (gen / "twokeys.sqlite").is_file()
    vectors = np.load(gen / "dense.embeddings.npy", allow_pickle=False)
    assert vectors.shape == (manifest["counts"]["chunks"], 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [p.name for p in index.iterdir() if p.name.startswith("gen-")] == [gen.name]


def test_reindex_embeds_only_new_or_changed(built: tuple[Path, Path]) -> None:
    src, index = built
    again = build_index(src, index, OPTIONS, encoder=(enc := HashEncoder()))
    assert (again.unchanged, again.embedded_chunks, enc.encoded) == (5, 0, 0)

    (src / "guide.txt").write_text("Resetting\n\nPress and hold for thirty seconds.\n")
    (src / "notes/decision.md").unlink()
    (src / "new.md").write_text("# New\n\nThe qwen2.5:14b model writes summaries.\n")
    enc = HashEncoder()
    report = build_index(src, index, OPTIONS, encoder=enc)
    assert (report.added, report.changed, report.removed, report.unchanged) == (1, 1, 1, 3)
    assert report.embedded_chunks == enc.encoded == 2
    with open_index(index) as kb:
        assert kb.search("qwen2.5:14b", mode="bm25")[0].doc_id == "new.md"
        assert kb.search("nomic-embed-text", mode="bm25") == []
        assert kb.search("thirty seconds", mode="bm25")[0].doc_id == "guide.txt"
        # reused vectors are identical to freshly computed ones
        fresh = HashEncoder().encode(["ZX-4821\nPower supply undervoltage on the hub."], "document")
        assert fresh.shape == (1, 64)
        docs = {d.id: d for d in kb.backend.all_documents()}
        assert set(docs) == {
            "errors/zx-4821.md",
            "errors/zx-4812.md",
            "guide.txt",
            "page.html",
            "new.md",
        }
        rows = [d.first_row for d in sorted(docs.values(), key=lambda d: d.id)]
        assert rows == sorted(rows)


def test_changed_settings_force_a_full_rebuild(built: tuple[Path, Path]) -> None:
    src, index = built
    report = build_index(src, index, IndexOptions(encoder="test-hash", dtype="float16"))
    assert "dtype" in report.full_rebuild_reason
    assert report.embedded_chunks == report.chunks
    with open_index(index) as kb:
        assert kb.manifest.encoder is not None and kb.manifest.encoder.dtype == "float16"
        assert kb.search("firmware", mode="dense", k=1)


def test_an_older_analyzer_is_rebuilt_keeping_chunks_and_vectors(
    built: tuple[Path, Path],
) -> None:
    """An index an older analyzer version built is not searched (its terms are not the
    ones queries get now) but rebuilding it re-derives only the lexical index."""
    src, index = built
    manifest = index / MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["analyzer"]["version"] = ANALYZER_VERSION - 1
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        ConfigError, match="analyzer version 1, .* run `twokeys index` on its source again"
    ):
        open_index(index)
    report = build_index(src, index, OPTIONS, encoder=(enc := HashEncoder()))
    assert (report.full_rebuild_reason, report.embedded_chunks, enc.encoded) == ("", 0, 0)
    with open_index(index) as kb:
        assert kb.manifest.analyzer.version == ANALYZER_VERSION
        assert kb.search("ZX-4821", mode="bm25")[0].doc_id == "errors/zx-4821.md"
    data["analyzer"]["version"] = ANALYZER_VERSION + 1  # from a newer twokeys: unreadable
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises((ConfigError, IndexFormatError), match="analyzer version"):
        open_index(index)


def test_encoder_mismatch_is_a_clear_error(built: tuple[Path, Path]) -> None:
    _, index = built

    class Other(HashEncoder):
        id = "test:other"

    with pytest.raises(EncoderMismatchError, match="built with encoder test:hash-64"):
        open_index(index, encoder=Other())


def test_lexical_only_index(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    build_index(src, tmp_path / "ix", IndexOptions(encoder=None))
    with open_index(tmp_path / "ix") as kb:
        assert kb.search("firmware", mode="bm25")[0].doc_id == "errors/zx-4812.md"
        with pytest.raises(TwokeysError, match="no dense vectors"):
            kb.search("firmware", mode="hybrid")


def test_refuses_to_write_into_a_foreign_folder(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    with pytest.raises(TwokeysError, match="not a twokeys index"):
        build_index(src, foreign, OPTIONS)
    assert (foreign / "thesis.tex").read_text() == "precious"


def test_bad_files_are_skipped_and_named(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    (src / "blob.md").write_bytes(b"\x00\x01\x02binary")
    report = build_index(src, tmp_path / "ix", OPTIONS)
    assert report.documents == 5
    assert [str(s) for s in report.skipped] == ["skipped blob.md: binary file (NUL bytes)"]


def test_corrupt_or_missing_index_errors(tmp_path: Path, built: tuple[Path, Path]) -> None:
    with pytest.raises(IndexFormatError, match="no index at"):
        open_index(tmp_path / "nowhere")
    _, index = built
    (index / MANIFEST).write_text("{not json")
    with pytest.raises(IndexFormatError, match="unreadable manifest"):
        open_index(index)


def test_a_failed_build_keeps_the_previous_index(built: tuple[Path, Path]) -> None:
    src, index = built

    class Exploding(HashEncoder):
        def embed_batch(self, texts, kind):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    (src / "extra.md").write_text("# Extra\n\nSomething new.\n")
    with pytest.raises(RuntimeError, match="boom"):
        build_index(src, index, OPTIONS, encoder=Exploding())
    with open_index(index) as kb:
        assert kb.manifest.counts["documents"] == 5
        assert kb.search("ZX-4821", mode="bm25")[0].doc_id == "errors/zx-4821.md"
    assert not [p for p in index.iterdir() if p.name.startswith(".tmp-")]


SEARCH_MANY_QUERIES = [
    "ZX-4821",
    "power supply undervoltage hub",
    "nomic-embed-text mxbai",
    "hub hub reset",  # a repeated term
    "no such words anywhere",
    "--unrestricted grub menu entry",
    "firmware",
]


@pytest.mark.parametrize("mode", ["bm25", "hybrid", "tfidf"])
@pytest.mark.parametrize("explain", [False, True])
def test_search_many_equals_one_query_at_a_time(
    built: tuple[Path, Path], mode: str, explain: bool
) -> None:
    _, index = built
    with open_index(index) as kb:
        for k in (1, 3, 50):
            one_by_one = [
                kb.search(q, mode=mode, k=k, explain=explain) for q in SEARCH_MANY_QUERIES
            ]
            assert (
                kb.search_many(SEARCH_MANY_QUERIES, mode=mode, k=k, explain=explain) == one_by_one
            )
        assert kb.search_many([], mode=mode) == []
        with pytest.raises(ConfigError, match="query"):
            kb.search_many(["ZX-4821", "  "], mode=mode)


# the one-query path (compiled kernel, or the numpy path from PER_QUERY_FROM chunks up)
# and the sparse-product path (numpy path below PER_QUERY_FROM)
@pytest.mark.parametrize(("compiled", "per_query_from"), [(True, None), (False, None), (False, 0)])
def test_lexical_batch_search_is_identical_on_every_thread_count(
    built: tuple[Path, Path],
    compiled: bool,
    per_query_from: int | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, index = built
    if per_query_from is not None:
        monkeypatch.setattr("twokeys.lexical.index.PER_QUERY_FROM", per_query_from)
    with open_index(index) as kb:
        lexical = kb.backend.lexical
        lexical = getattr(lexical, "inner", lexical)  # unwrapped from the bounds guard
        assert isinstance(lexical, ArrayLexicalIndex)
        lexical.compiled = compiled and lexical.compiled
        terms = [kb.analyzer.query_terms(q) for q in SEARCH_MANY_QUERIES * 20]
        one_by_one = [lexical.search(t, 4) for t in terms]
        for threads in (1, 2, 3):
            assert lexical.search_many(terms, 4, threads=threads) == one_by_one


def test_hits_come_with_their_document_title_and_path(built: tuple[Path, Path]) -> None:
    _, index = built
    with open_index(index) as kb:
        backend = kb.backend
        rows = list(range(int(kb.manifest.counts["chunks"])))[::-1]
        joined = backend.chunks_with_source(rows)
        chunks = backend.chunks(rows)
        docs = backend.documents([c.doc_id for c in chunks])
        assert joined == [(c, docs[c.doc_id].title, docs[c.doc_id].path) for c in chunks]
        assert type(backend._array("lexical.weights.npy")) is np.ndarray  # not np.memmap


def test_hit_files_give_what_sqlite_gives(
    built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hits are read from the memory-mapped hit files; an index written before them
    (simulated: the files not found) answers the same from SQLite."""
    _, index = built
    queries = [*SEARCH_MANY_QUERIES, "Cause", "Grub menu entry"]
    with open_index(index) as kb:
        assert kb.backend._hits() is not None
        n = int(kb.manifest.counts["chunks"])
        rows = [*range(n - 1, -1, -1), 0, 0]
        from_files = kb.backend.chunks_with_source(rows)
        hits = [kb.search(q, mode="bm25", k=5) for q in queries]
        assert any(chunk.heading_path for chunk, _, _ in from_files)
        assert any(chunk.text.strip() for chunk, _, _ in from_files)
        with pytest.raises(IndexFormatError, match=r"chunk rows \[" + str(n)):
            kb.backend.chunks_with_source([0, n])
    monkeypatch.setattr(HitTable, "exists", staticmethod(lambda folder: False))
    with open_index(index) as kb:
        assert kb.backend._hits() is None
        assert kb.backend.chunks_with_source(rows) == from_files
        assert kb.backend.chunks(rows) == [c for c, _, _ in from_files]
        assert [kb.search(q, mode="bm25", k=5) for q in queries] == hits


def test_damaged_hit_files_are_a_clear_error(built: tuple[Path, Path]) -> None:
    _, index = built
    manifest = json.loads((index / MANIFEST).read_text())
    strings = index / manifest["generation"] / STRINGS
    with open(strings, "ab") as fh:
        fh.write(b"tail")
    with open_index(index) as kb, pytest.raises(IndexFormatError, match="hits.strings.utf8"):
        kb.search("ZX-4821", mode="bm25")


def test_lazy_hits_are_the_hits_read_whole(built: tuple[Path, Path]) -> None:
    """A local index's hits read their chunk on first use; every way of looking at one
    (fields, ==, hash, repr, to_dict, replace, pickle, after close) gives the hit read
    whole from the same index."""
    import copy
    import pickle
    from dataclasses import replace

    from twokeys.types import Hit

    _, index = built
    kb = open_index(index)
    lazy = kb.search("hub reset button", mode="bm25", k=2)
    backend = kb.backend
    rows = [
        kb.retriever(kb._request("hub reset button", {"mode": "bm25", "k": 2}))
        .retrieve("hub reset button", 2)
        .run
    ][0]
    whole = [
        Hit(s.rank, s.score, *source, ())
        for s, source in zip(rows, backend.chunks_with_source([s.row for s in rows]), strict=True)
    ]
    assert len(lazy) == 2 and all(h._source is not None for h in lazy)  # nothing read yet
    fresh = kb.search("hub reset button", mode="bm25", k=2)
    assert [pickle.loads(pickle.dumps(h)) for h in fresh] == whole  # read for the pickle
    assert [copy.copy(h) for h in kb.search("hub reset button", mode="bm25", k=2)] == whole
    assert [hash(h) for h in kb.search("hub reset button", mode="bm25", k=2)] == [
        hash(h) for h in whole
    ]
    assert [repr(h) for h in kb.search("hub reset button", mode="bm25", k=2)] == [
        repr(h) for h in whole
    ]
    assert lazy == whole
    assert all(h._source is None for h in lazy)  # read once, then kept
    import dataclasses

    assert [f.name for f in dataclasses.fields(Hit)] == [
        "rank",
        "score",
        "chunk",
        "title",
        "path",
        "evidence",
    ]
    assert dataclasses.asdict(kb.search("hub reset button", mode="bm25", k=2)[0]) == (
        dataclasses.asdict(whole[0])
    )
    moved = replace(kb.search("hub reset button", mode="bm25", k=2)[0], rank=7)
    assert moved == replace(whole[0], rank=7)
    late = kb.search("hub reset button", mode="bm25", k=2)
    kb.close()  # the mapped files stay readable for hits made before
    assert [h.to_dict() for h in late] == [h.to_dict() for h in whole]
    assert late[0].cite == whole[0].cite and late[0].text.startswith("Resetting")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = late[0].nope  # type: ignore[attr-defined]
