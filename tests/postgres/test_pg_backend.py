"""The postgres backend against the embedded one on a small corpus (real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.analysis import ANALYZER_VERSION
from twokeys.errors import ConfigError, IndexFormatError
from twokeys.migrate import copy_into_postgres
from twokeys.store.postgres.location import PostgresLocation
from twokeys.store.postgres.schema import SCHEMA_VERSION, migrate
from twokeys.store.postgres.writer import PostgresWriter

DOCS = {
    "errors/zx-4821.md": "# ZX-4821\n\n## Cause\n\nPower supply undervoltage on the hub.\n",
    "errors/zx-4812.md": "# ZX-4812\n\n## Cause\n\nFirmware signature check failed.\n",
    "notes/decision.md": "# Decisions\n\nWe chose nomic-embed-text over mxbai-embed-large.\n",
    "guide.txt": "Resetting\n\nHold the button for ten seconds to reset the hub.\n",
    "page.html": "<html><head><title>Grub</title></head><body><h1>Grub</h1>"
    "<p>Add --unrestricted to the menu entry. The hub menu.</p></body></html>",
}
OPTIONS = IndexOptions(encoder="test-hash")
pytestmark = pytest.mark.postgres
QUERIES = ["ZX-4821", "hub power", "firmware signature check", "menu entry hub", "reset"]


def _run(kb: object, query: str, mode: str) -> list[tuple[str, float]]:
    hits = kb.search(query, mode=mode, k=10)  # type: ignore[attr-defined]
    return [(h.chunk.id, h.score) for h in hits]


def _same(pg_url: str, local: Path) -> None:
    with open_index(str(local)) as a, open_index(pg_url) as b:
        for mode in ("bm25", "dense", "hybrid"):
            for q in QUERIES:
                ra, rb = _run(a, q, mode), _run(b, q, mode)
                assert [c for c, _ in ra] == [c for c, _ in rb], (mode, q)
                assert np.allclose([s for _, s in ra], [s for _, s in rb], atol=1e-5), (mode, q)
        assert b.manifest.counts == {k: a.manifest.counts[k] for k in b.manifest.counts}


def test_index_from_source_matches_embedded(tmp_path: Path, pg_url: str) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    build_index(src, tmp_path / "kb.twokeys", OPTIONS)
    report = build_index(src, pg_url, OPTIONS)
    assert (report.documents, report.added, report.embedded_chunks) == (5, 5, report.chunks)
    _same(pg_url, tmp_path / "kb.twokeys")
    with open_index(str(tmp_path / "kb.twokeys")) as a, open_index(pg_url) as b:
        terms = ["hub", "zx-4821", "absent-term", "hub"]
        assert b.backend.lexical.idf(terms) == pytest.approx(a.backend.lexical.idf(terms))
        assert [b.backend.lexical.has_term(t) for t in terms] == [True, True, False, True]
        ta = a.analyzer.query_terms("hub menu entry hub")
        for row in range(a.manifest.counts["chunks"]):
            ea, eb = a.backend.lexical.explain(ta, row), b.backend.lexical.explain(ta, row)
            assert [t for t, _ in ea] == [t for t, _ in eb]
            assert [w for _, w in ea] == pytest.approx([w for _, w in eb], abs=1e-5)
        rows = list(range(a.manifest.counts["chunks"]))
        assert b.backend.lexical.explain_many(ta, rows) == [  # one statement, same answers
            b.backend.lexical.explain(ta, r) for r in rows
        ]
    with open_index(pg_url) as kb:
        hit = kb.search("ZX-4821", mode="bm25", k=3, explain=True)[0]
        assert hit.chunk.doc_id == "errors/zx-4821.md"
        assert hit.evidence[0].matched_terms[0][0] == "zx-4821"
        assert hit.title == "ZX-4821"


def test_reindex_replaces_changed_removes_gone_and_keeps_counts_exact(
    tmp_path: Path, pg_url: str
) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    build_index(src, pg_url, OPTIONS)
    again = build_index(src, pg_url, OPTIONS)
    assert (again.unchanged, again.embedded_chunks) == (5, 0)
    (src / "guide.txt").write_text("Resetting\n\nHold the red button for twenty seconds.\n")
    (src / "page.html").unlink()
    write_docs(src, {"new.md": "# New\n\nA brand new zx-9999 page about the hub.\n"})
    report = build_index(src, pg_url, OPTIONS)
    assert (report.added, report.changed, report.removed, report.unchanged) == (1, 1, 1, 3)
    # the same statistics as an embedded index built from scratch on the new source
    build_index(src, tmp_path / "fresh.twokeys", OPTIONS)
    with PostgresWriter(pg_url) as writer:
        assert writer.verify() == []
    with open_index(pg_url) as kb:  # stable ids: kept ones resolve, gone ones are absent
        found = kb.backend.passages(["errors/zx-4821.md#0", "page.html#0", "new.md#0", "x"])  # type: ignore[attr-defined]
        assert sorted(found) == ["errors/zx-4821.md#0", "new.md#0"]
        assert found["new.md#0"].id == "new.md#0" and "zx-9999" in found["new.md#0"].text
    with open_index(str(tmp_path / "fresh.twokeys")) as a, open_index(pg_url) as b:
        for q in [*QUERIES, "twenty red", "zx-9999"]:
            ra, rb = _run(a, q, "bm25"), _run(b, q, "bm25")
            assert sorted(c for c, _ in ra) == sorted(c for c, _ in rb)
            assert np.allclose(sorted(s for _, s in ra), sorted(s for _, s in rb), atol=1e-5)
        assert not b.search("unrestricted", mode="bm25")


def test_copy_from_embedded_index_keeps_rows_and_vectors(
    tmp_path: Path, pg_url: str, hash_encoder: HashEncoder
) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    build_index(src, tmp_path / "kb.twokeys", OPTIONS)
    report = copy_into_postgres(tmp_path / "kb.twokeys", pg_url)
    assert report.documents == 5
    _same(pg_url, tmp_path / "kb.twokeys")
    with pytest.raises(IndexFormatError, match="already holds documents"):
        copy_into_postgres(tmp_path / "kb.twokeys", pg_url)
    # new chunks after a copy get rows past the copied ones
    write_docs(src, {"later.md": "# Later\n\nAdded after the copy.\n"})
    build_index(src, pg_url, OPTIONS, encoder=hash_encoder)
    with open_index(pg_url) as kb:
        assert kb.search("added after the copy", mode="bm25")[0].chunk.doc_id == "later.md"
    with PostgresWriter(pg_url) as writer:
        assert writer.verify() == []


def test_float16_vectors_are_stored_as_halfvec(tmp_path: Path, pg_url: str) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    options = IndexOptions(encoder="test-hash", dtype="float16")
    build_index(src, tmp_path / "kb.twokeys", options)
    copy_into_postgres(tmp_path / "kb.twokeys", pg_url)
    _same(pg_url, tmp_path / "kb.twokeys")
    loc = PostgresLocation.parse(pg_url)
    with psycopg.connect(loc.conninfo) as conn:
        kind = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attname = 'embedding'",
            (f'"{loc.schema}".chunks',),
        ).fetchone()
    assert kind == ("halfvec(64)",)


def test_other_settings_are_refused_but_bm25_parameters_may_change(
    tmp_path: Path, pg_url: str
) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    build_index(src, pg_url, OPTIONS)
    with pytest.raises(ConfigError, match="encoder differ"):
        build_index(src, pg_url, IndexOptions(encoder=None))
    from twokeys.lexical.bm25 import BM25Params

    build_index(src, pg_url, IndexOptions(encoder="test-hash", bm25=BM25Params(1.2, 0.75)))
    with open_index(pg_url) as kb:
        assert kb.manifest.bm25 == BM25Params(1.2, 0.75)


def test_schema_versions_missing_newer_and_older(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(IndexFormatError, match="no twokeys index in schema"):
        open_index(pg_url)
    loc = PostgresLocation.parse(pg_url)
    PostgresWriter(pg_url).close()
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{loc.schema}".schema_version VALUES ({SCHEMA_VERSION + 1})')
    with pytest.raises(IndexFormatError, match="newer than this twokeys supports"):
        PostgresWriter(pg_url)
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        conn.execute(f'DELETE FROM "{loc.schema}".schema_version WHERE version > {SCHEMA_VERSION}')
        # a second migration, as a later twokeys would ship: readers refuse, writers upgrade
        extra = (*__import__("twokeys.store.postgres.schema").store.postgres.schema.MIGRATIONS,
                 "ALTER TABLE {s}.documents ADD COLUMN note text")  # fmt: skip
        before = migrate(conn, loc.schema, create=False, where="x", migrations=extra)
        assert before == SCHEMA_VERSION
        version = conn.execute(f'SELECT max(version) FROM "{loc.schema}".schema_version')
        assert version.fetchone() == (SCHEMA_VERSION + 1,)
    # a reader never migrates: an index older than this twokeys' schema is refused
    from twokeys.store.postgres import schema

    monkeypatch.setattr(schema, "SCHEMA_VERSION", SCHEMA_VERSION + 2)
    with (
        psycopg.connect(loc.conninfo, autocommit=True) as conn,
        pytest.raises(IndexFormatError, match="older than this twokeys"),
    ):
        schema.check_readable(conn, loc.schema, "x")


def test_an_index_from_an_older_twokeys_is_reanalysed_in_place(tmp_path: Path, pg_url: str) -> None:
    """A settings row written before this twokeys (an older analyzer version, no
    ``chunker.page_tokens``) is not searched, but indexing its source again re-analyses
    the stored chunks in place: nothing is re-embedded, the rows stay, and the postings
    and statistics equal a fresh build's."""
    docs = {
        **DOCS,
        "api/metadata.md": "# Metadata\n\nStruct std::fs::Metadata holds a file's size.\n",
    }
    src = write_docs(tmp_path / "docs", docs)
    build_index(src, pg_url, OPTIONS)
    location = PostgresLocation.parse(pg_url)
    s = f'"{location.schema}"'
    with psycopg.connect(location.conninfo, autocommit=True) as conn:
        rows_before = conn.execute(f"SELECT row_id, chunk_id FROM {s}.chunks ORDER BY 1").fetchall()
        spec = conn.execute(f"SELECT spec FROM {s}.settings").fetchone()[0]  # type: ignore[index]
        spec["analyzer"]["version"] = ANALYZER_VERSION - 1
        del spec["chunker"]["page_tokens"]
        conn.execute(f"UPDATE {s}.settings SET spec = %s", (psycopg.types.json.Jsonb(spec),))
        conn.execute(f"DELETE FROM {s}.postings WHERE term = 'fs::metadata'")  # as v1 left it
    with pytest.raises(ConfigError, match="analyzer version 1, .* run `twokeys index`"):
        open_index(pg_url)
    report = build_index(src, pg_url, OPTIONS, encoder=(enc := HashEncoder()))
    assert (report.full_rebuild_reason, report.embedded_chunks, enc.encoded) == ("", 0, 0)
    with open_index(pg_url) as kb:
        assert kb.manifest.analyzer.version == ANALYZER_VERSION
        assert kb.search("fs::Metadata", mode="bm25")[0].doc_id == "api/metadata.md"
    with psycopg.connect(location.conninfo, autocommit=True) as conn:
        assert conn.execute(f"SELECT row_id, chunk_id FROM {s}.chunks ORDER BY 1").fetchall() == (
            rows_before
        )
    local = tmp_path / "local.twokeys"
    build_index(src, local, OPTIONS)
    _same(pg_url, local)
