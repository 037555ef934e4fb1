"""The storage contract, run against every backend (``BACKENDS``): a new backend is
accepted when this file passes unchanged with its name added.

Each backend gives a way to build an index from documents and returns the location
that :func:`twokeys.open_index` opens; everything else goes through the public API.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.errors import ConfigError
from twokeys.store.base import DocumentInfo
from twokeys.store.contract import (
    DocumentChunks,
    IndexReader,
    IndexWriter,
    open_reader,
    open_writer,
    scheme_of,
)
from twokeys.types import Chunk, Locator

Build = Callable[[dict[str, str]], str]

DOCS = {
    "guides/power.md": "---\nlang: en\nversion: 2\n---\n# Power\n\n## ZX-4821\n\n"
    "Undervoltage on the power supply. Replace the fuse.\n",
    "guides/firmware.md": "---\nlang: en\nversion: 3\n---\n# Firmware\n\n## ZX-4812\n\n"
    "Signature check failed after a firmware update.\n",
    "policies/refunds.md": "---\nlang: de\nupdated: 2024-03-01\n---\n# Refunds\n\n"
    "A refund is issued when an item arrives broken or damaged.\n",
    "policies/shipping.md": "# Shipping\n\nParcels ship within two days; delivery takes five.\n",
    "notes/misc.txt": "Grub menu entry for the recovery boot; press the reset button.\n",
}
MODES = ("bm25", "dense", "hybrid", "hybrid-rrf", "tfidf", "bm25+", "bm25l", "boolean", "lsi")


def _local(tmp_path: Path) -> Build:
    src = tmp_path / "docs"
    location = tmp_path / "kb.twokeys"

    def build(docs: dict[str, str]) -> str:
        if src.exists():
            for file in src.rglob("*"):
                if file.is_file() and str(file.relative_to(src)) not in docs:
                    file.unlink()
        write_docs(src, docs)
        build_index(src, location, IndexOptions(encoder="test-hash", derived=("lsi",)))
        return str(location)

    return build


def _postgres(tmp_path: Path) -> Build:
    """A schema of its own in the test session's PostgreSQL (tests/pg_fixtures.py)."""
    src = tmp_path / "docs"
    location = str(tmp_path / "location.txt")  # the URL, written by the build fixture

    def build(docs: dict[str, str]) -> str:
        url = Path(location).read_text()
        if src.exists():
            for file in src.rglob("*"):
                if file.is_file() and str(file.relative_to(src)) not in docs:
                    file.unlink()
        write_docs(src, docs)
        build_index(src, url, IndexOptions(encoder="test-hash"))
        return url

    return build


BACKENDS = {"local": _local, "postgres": _postgres}


@pytest.fixture(params=sorted(BACKENDS))
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Build:
    factory: Callable[[Path], Build] = BACKENDS[request.param]
    if request.param == "postgres":  # a real server, started once per session
        (tmp_path / "location.txt").write_text(request.getfixturevalue("pg_url"))
    return factory(tmp_path)


def test_reader_implements_the_contract(build: Build) -> None:
    location = build(DOCS)
    reader = open_reader(location)
    try:
        assert isinstance(reader, IndexReader)
        assert reader.stats()["documents"] == len(DOCS)
    finally:
        reader.close()


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_searches_and_explains(build: Build, mode: str) -> None:
    with open_index(build(DOCS)) as kb:
        query = "power OR fuse" if mode == "boolean" else "power supply fuse"
        hits = kb.search(query, mode=mode, k=3, explain=True)
        assert hits and hits[0].doc_id == "guides/power.md"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.chunk_id.startswith(f"{h.doc_id}#") for h in hits)
        assert all(h.evidence for h in hits)
        assert hits == kb.search(query, mode=mode, k=3, explain=True)  # deterministic


def test_add_replace_delete(build: Build) -> None:
    location = build(DOCS)
    with open_index(location) as kb:
        kept = kb.search("grub menu", mode="bm25", k=1)[0]
    changed = dict(DOCS)
    changed["guides/firmware.md"] = "# Firmware\n\nThe bootloader was replaced entirely.\n"
    del changed["policies/shipping.md"]
    changed["a-first.md"] = "# New\n\nA brand new page about solar panels.\n"
    location = build(changed)
    with open_index(location) as kb:
        assert kb.search("solar panels", mode="bm25", k=1)[0].doc_id == "a-first.md"
        assert kb.search("bootloader", mode="bm25", k=1)[0].doc_id == "guides/firmware.md"
        assert kb.search("signature", mode="bm25", k=5) == []
        assert all(h.doc_id != "policies/shipping.md" for h in kb.search("parcels", k=5))
        again = kb.search("grub menu", mode="bm25", k=1)[0]
        assert (again.doc_id, again.chunk_id, again.text) == (kept.doc_id, kept.chunk_id, kept.text)
        assert kb.passages([kept.chunk_id]) == {kept.chunk_id: kept.chunk}
        assert kb.backend.stats()["documents"] == len(changed)  # type: ignore[attr-defined]


def test_the_dense_chance_level_is_the_mean_cosine_over_all_chunks(build: Build) -> None:
    """What the hybrid's chance-level scaling reads: the same on every backend, and
    current after a write."""
    for docs in (DOCS, {**DOCS, "a-first.md": "# New\n\nSolar panels on the roof.\n"}):
        location = build(docs)
        with open_index(location) as kb:
            vectors = kb.backend.vectors
            assert vectors is not None
            q = kb.encoder.encode_query("power supply fuse")
            every = vectors.search(q, 10_000)
            assert len(every) == kb.manifest.counts["chunks"]
            mean = sum(h.score for h in every) / len(every)
            assert vectors.mean_similarity(q) == pytest.approx(mean, abs=1e-4)


def test_a_chunks_similarity_is_its_search_score(build: Build) -> None:
    """What the hybrid's semantic-support rule reads for BM25's top chunk when the
    vector search did not return it: the score the search gives it, on every backend."""
    with open_index(build(DOCS)) as kb:
        vectors = kb.backend.vectors
        assert vectors is not None
        q = kb.encoder.encode_query("power supply fuse")
        every = vectors.search(q, 10_000)
        assert len(every) >= 3
        for hit in every:
            assert vectors.similarity(q, hit.row) == pytest.approx(hit.score, abs=1e-5)
        # read together (what grounding reads for its sample), in the order asked
        rows = np.array([hit.row for hit in reversed(every)], np.int64)
        together = vectors.similarities(q, rows)
        assert together.tolist() == pytest.approx([h.score for h in reversed(every)], abs=1e-5)


def test_filters_apply_before_top_k(build: Build) -> None:
    with open_index(build(DOCS)) as kb:
        for mode in ("bm25", "dense", "hybrid"):
            hits = kb.search(
                "refund power parcel grub", mode=mode, k=2, filters=["path:policies/*"]
            )
            assert len(hits) == 2 and {h.doc_id for h in hits} <= {
                "policies/refunds.md",
                "policies/shipping.md",
            }
        assert {h.doc_id for h in kb.search("power firmware refund", k=5, filters=["lang=en"])} == {
            "guides/power.md",
            "guides/firmware.md",
        }
        assert [h.doc_id for h in kb.search("refund", k=5, filters=["updated>=2024-01-01"])] == [
            "policies/refunds.md"
        ]
        assert kb.search("power", k=5, filters=["kind:html"]) == []


def test_many_threads_get_the_serial_answers(build: Build) -> None:
    work = [(q, m) for q in ("power fuse", "refund broken", "grub reset", "ZX-4812") for m in MODES]
    location = build(DOCS)
    with open_index(location) as kb:
        serial = [
            kb.search(q.replace(" ", " OR ") if m == "boolean" else q, mode=m) for q, m in work
        ]
    with open_index(location) as kb:
        answers: dict[int, list[object]] = {}

        def run(i: int) -> None:
            answers[i] = [
                kb.search(q.replace(" ", " OR ") if m == "boolean" else q, mode=m) for q, m in work
            ]

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(answers[i] == serial for i in range(4))


def test_reading_never_writes(build: Build, tmp_path: Path) -> None:
    location = build(DOCS)
    if scheme_of(location) != "file":
        pytest.skip("the listing check is the local backend's")
    root = Path(location)

    def listing() -> list[tuple[str, int, int]]:
        return sorted(
            (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*")
        )

    before = listing()
    with open_index(location) as kb:
        for mode in MODES:
            kb.search("power OR fuse" if mode == "boolean" else "power fuse", mode=mode)
        kb.info()
    assert listing() == before


def test_an_aborted_writer_leaves_the_index_as_it_was(build: Build) -> None:
    location = build(DOCS)
    with open_index(location) as kb:
        before = kb.search("power fuse", k=3)
    with pytest.raises(RuntimeError), open_writer(location) as writer:
        assert isinstance(writer, IndexWriter)
        assert set(writer.stored()) == set(DOCS)
        (doc,) = kb_documents(location, ["guides/power.md"])
        writer.put([DocumentChunks(doc, (Chunk(doc.id, 0, "nothing", 0, 7),), None)])
        writer.delete(["policies/refunds.md"])
        raise RuntimeError("crash midway")
    with open_index(location) as kb:
        assert kb.search("power fuse", k=3) == before
        assert kb.manifest.counts["documents"] == len(DOCS)
    if scheme_of(location) == "file":
        assert not [p for p in Path(location).iterdir() if p.name.startswith(".tmp-")]


def test_the_writer_adds_replaces_deletes_and_keeps(build: Build) -> None:
    """The writer's session, as the indexer drives it: documents not named stay."""
    location = build(DOCS)
    with open_index(location) as kb:
        kept_before = kb.search("signature firmware", k=3)
    with open_writer(location) as writer:
        stored = writer.stored()
        assert set(stored) == set(DOCS) and all(stored.values())
        (power,) = kb_documents(location, ["guides/power.md"])
        new = replace(power, id="new.md", path="new.md", sha256="x1", title="New")
        chunk = Chunk("new.md", 0, "a brand new zebra page", 0, 22)
        vectors = HashEncoder().encode(["a brand new zebra page"], "document")
        writer.put([DocumentChunks(new, (chunk,), vectors)])
        writer.delete(["policies/refunds.md"])
        committed = writer.commit()
    assert committed.written and committed.counts["documents"] == len(DOCS)
    with open_index(location) as kb:
        assert kb.search("zebra", mode="bm25")[0].chunk.id == "new.md#0"
        assert all(h.doc_id != "policies/refunds.md" for h in kb.search("refund", k=10))
        assert kb.backend.documents(["policies/refunds.md", "new.md"]).keys() == {"new.md"}
        assert kb.search("signature firmware", k=1) == kept_before[:1]  # kept as it was


def test_locators_are_stored_cited_filtered_and_kept(build: Build) -> None:
    """A chunk's locator comes back with it, in its hit's citation, and answers locator
    filters; a later session that keeps the document keeps its locators."""
    location = build(DOCS)
    (power,) = kb_documents(location, ["guides/power.md"])
    manual = replace(power, id="manual.pdf", path="manual.pdf", kind="pdf", sha256="m1")
    texts = ["zebra crossing on page twelve", "zebra stripes over pages 13 and 14"]
    chunks = (
        Chunk("manual.pdf", 0, texts[0], 0, 29, (), Locator(page=12, section="Roads")),
        Chunk("manual.pdf", 1, texts[1], 31, 65, (), Locator(page=13, page_end=14)),
    )
    with open_writer(location) as writer:
        writer.put([DocumentChunks(manual, chunks, HashEncoder().encode(texts, "document"))])
        writer.commit()
    with open_writer(location) as writer:  # a session that changes another document
        writer.delete(["notes/misc.txt"])
        writer.commit()
    with open_index(location) as kb:
        hits = kb.search("zebra", mode="bm25", k=5)
        assert {h.cite for h in hits} == {"manual.pdf p. 12 § Roads", "manual.pdf pp. 13-14"}
        assert kb.backend.passages(["manual.pdf#1"])["manual.pdf#1"].locator == chunks[1].locator
        assert [h.chunk.id for h in kb.search("zebra", k=5, filters=["page>=13"])] == [
            "manual.pdf#1"
        ]
        assert [h.cite for h in kb.search("zebra", k=5, filters=["section=Roads"])] == [
            "manual.pdf p. 12 § Roads"
        ]
        # chunks without a locator: page filters leave them out, others keep them
        assert {h.doc_id for h in kb.search("power", k=5, filters=["page>=1"])} == {"manual.pdf"}
        assert all(h.locator is None for h in kb.search("refund", mode="bm25", k=3))


def kb_documents(location: str, ids: list[str]) -> list[DocumentInfo]:
    with open_index(location) as kb:
        found = kb.backend.documents(ids)
    return [found[i] for i in ids]


def test_unknown_location_schemes_are_errors() -> None:
    with pytest.raises(ConfigError, match=r"no backend for mysql://"):
        open_index("mysql://db.example/kb")
    assert scheme_of("/some/path") == scheme_of(Path("rel")) == "file"
