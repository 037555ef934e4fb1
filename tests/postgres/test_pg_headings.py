"""The hybrid's heading rule on the postgres backend: ``Index._chunk_headings`` reads the
heading lines through the backend's ``chunks_with_source``, as on a local index."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DEBUG_PAGES, PrefersTheTrait, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.request import SearchRequest
from twokeys.retrievers.hybrid import HybridRetriever

pytestmark = pytest.mark.postgres
QUERY = "DebugStruct helper for writing Debug implementations"


def test_the_heading_rule_reads_heading_lines_from_postgres(tmp_path: Path, pg_url: str) -> None:
    docs = write_docs(tmp_path / "docs", DEBUG_PAGES)
    encoder = PrefersTheTrait()
    build_index(docs, pg_url, IndexOptions(encoder="test-hash"), encoder=encoder)
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder="test-hash"), encoder=encoder)
    with (
        open_index(pg_url, encoder=encoder) as pg,
        open_index(tmp_path / "kb.twokeys", encoder=encoder) as local,
    ):
        retriever = pg.retriever(SearchRequest(QUERY))
        assert isinstance(retriever, HybridRetriever) and retriever.headings is not None
        rows = list(range(pg.manifest.counts["chunks"]))
        assert dict(retriever.headings(rows)) == {
            "debugstruct.md": "DebugStruct",
            "debug.md": "Debug",
        }
        # both sensors prefer the page that uses the name; the rule lifts the one headed by it
        assert pg.search(QUERY, mode="bm25", k=1)[0].path == "debug.md"
        assert pg.search(QUERY, mode="hybrid", k=1)[0].path == "debugstruct.md"
        assert [h.chunk.id for h in pg.search(QUERY, mode="hybrid", k=2)] == [
            h.chunk.id for h in local.search(QUERY, mode="hybrid", k=2)
        ]
