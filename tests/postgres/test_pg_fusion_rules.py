"""The hybrid's text-reading fusion rules on the postgres backend: the heading lines
(``Index._chunk_headings``, through the backend's ``chunks_with_source``) and chunk texts
they read come through the backend, and the order is a local index's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import (
    CODE_PAGES,
    DEBUG_PAGES,
    HashEncoder,
    PrefersTheTrait,
    ReadsCodesByPieces,
    write_docs,
)
from twokeys import IndexOptions, build_index, open_index
from twokeys.engine import Index
from twokeys.request import SearchRequest
from twokeys.retrievers.hybrid import HybridRetriever

pytestmark = pytest.mark.postgres


@contextmanager
def _on_both(
    tmp_path: Path, pg_url: str, files: dict[str, str], encoder: HashEncoder
) -> Iterator[tuple[Index, Index]]:
    """``files`` indexed with ``encoder`` into postgres and into a local index, both open."""
    docs = write_docs(tmp_path / "docs", files)
    build_index(docs, pg_url, IndexOptions(encoder="test-hash"), encoder=encoder)
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder="test-hash"), encoder=encoder)
    with (
        open_index(pg_url, encoder=encoder) as pg,
        open_index(tmp_path / "kb.twokeys", encoder=encoder) as local,
    ):
        yield pg, local


def _same_order(pg: Index, local: Index, query: str, k: int) -> bool:
    return [h.chunk.id for h in pg.search(query, mode="hybrid", k=k)] == [
        h.chunk.id for h in local.search(query, mode="hybrid", k=k)
    ]


def test_the_heading_rule_reads_heading_lines_from_postgres(tmp_path: Path, pg_url: str) -> None:
    query = "DebugStruct helper for writing Debug implementations"
    with _on_both(tmp_path, pg_url, DEBUG_PAGES, PrefersTheTrait()) as (pg, local):
        retriever = pg.retriever(SearchRequest(query))
        assert isinstance(retriever, HybridRetriever) and retriever.headings is not None
        rows = list(range(pg.manifest.counts["chunks"]))
        assert dict(retriever.headings(rows)) == {
            "debugstruct.md": "DebugStruct",
            "debug.md": "Debug",
        }
        # both sensors prefer the page that uses the name; the rule lifts the one headed by it
        assert pg.search(query, mode="bm25", k=1)[0].path == "debug.md"
        assert pg.search(query, mode="hybrid", k=1)[0].path == "debugstruct.md"
        assert _same_order(pg, local, query, 2)


def test_the_near_miss_rule_reads_postgres_chunks(tmp_path: Path, pg_url: str) -> None:
    query = "ZX-4821 after firmware update"
    with _on_both(tmp_path, pg_url, CODE_PAGES, ReadsCodesByPieces()) as (pg, local):
        # both sensors prefer the near-miss code's page; the hybrid, the page of the code
        assert pg.search(query, mode="bm25", k=1)[0].path == "zx-4812.md"
        assert pg.search(query, mode="dense", k=1)[0].path == "zx-4812.md"
        assert pg.search(query, mode="hybrid", k=1)[0].path == "zx-4821.md"
        assert _same_order(pg, local, query, 3)
