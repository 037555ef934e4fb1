"""Filters on a PostgreSQL index: pushed into the SQL, the embedded engine's results."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import filter_corpus, write_docs
from twokeys import IndexOptions, build_index, open_index

pytestmark = pytest.mark.postgres
OPTIONS = IndexOptions(encoder="test-hash")
FILTERS = (
    ["path:policies/*"],
    ["path:guides/", "lang=en"],
    ["version>=5", "kind:markdown"],
    ["updated<2024-04-01"],
    ["id:notes/other.txt,misc/page-1.md"],
    ["lang=fr"],
)


def test_filtered_searches_equal_the_embedded_engine(tmp_path: Path, pg_url: str) -> None:
    src = write_docs(tmp_path / "docs", filter_corpus())
    build_index(src, tmp_path / "kb.twokeys", OPTIONS)
    build_index(src, pg_url, OPTIONS)
    with open_index(str(tmp_path / "kb.twokeys")) as a, open_index(pg_url) as b:
        for filters in FILTERS:
            for mode in ("bm25", "dense", "hybrid"):
                ra = a.search("power fuse supply", mode=mode, k=5, filters=filters)
                rb = b.search("power fuse supply", mode=mode, k=5, filters=filters)
                assert [h.chunk.id for h in ra] == [h.chunk.id for h in rb], (mode, filters)
                assert [h.score for h in ra] == pytest.approx([h.score for h in rb], abs=1e-5)


def test_a_filter_sees_documents_written_after_the_index_was_opened(
    tmp_path: Path, pg_url: str
) -> None:
    src = write_docs(tmp_path / "docs", filter_corpus())
    build_index(src, pg_url, OPTIONS)
    with open_index(pg_url) as kb:
        before = kb.search("power fuse", mode="bm25", k=50, filters=["lang=fr"])
        assert before == []
        write_docs(src, {"policies/fr.md": "---\nlang: fr\n---\n# Fusible\n\npower fuse.\n"})
        build_index(src, pg_url, OPTIONS)
        after = kb.search("power fuse", mode="hybrid", k=50, filters=["lang=fr"])
        assert [h.path for h in after] == ["policies/fr.md"]


def test_hnsw_search_uses_the_index_and_a_filter_still_fills_k(tmp_path: Path, pg_url: str) -> None:
    from twokeys.dense.selection import VectorIndexOptions

    src = write_docs(tmp_path / "docs", filter_corpus())
    hnsw = IndexOptions(encoder="test-hash", vector_index=VectorIndexOptions(kind="hnsw"))
    build_index(src, pg_url, hnsw)
    build_index(src, tmp_path / "exact.twokeys", OPTIONS)
    with open_index(pg_url) as b, open_index(str(tmp_path / "exact.twokeys")) as a:
        assert b.info()["vector_search"]["used"] == "hnsw"
        query = "power fuse supply rating"
        exact = [h.chunk_id for h in a.search(query, mode="dense", k=5)]
        approx = [h.chunk_id for h in b.search(query, mode="dense", k=5)]
        assert approx == exact  # 29 vectors: the graph finds the true neighbours
        hits = b.search(query, mode="dense", k=4, filters=["path:misc/*"])
        assert len(hits) == 4 and all(h.path.startswith("misc/") for h in hits)
        assert [h.chunk_id for h in hits] == [
            h.chunk_id for h in a.search(query, mode="dense", k=4, filters=["path:misc/*"])
        ]
    from twokeys.store.postgres.location import PostgresLocation

    loc = PostgresLocation.parse(pg_url)
    import psycopg

    with psycopg.connect(loc.conninfo) as conn:
        plan = conn.execute(
            f'EXPLAIN SELECT row_id FROM "{loc.schema}".chunks '
            f'ORDER BY embedding <#> (SELECT embedding FROM "{loc.schema}".chunks LIMIT 1) '
            "LIMIT 5"
        ).fetchall()
    assert any("chunks_embedding_hnsw" in line for (line,) in plan)
