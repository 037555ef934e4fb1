"""The hybrid's near-miss rule on the postgres backend: the chunk texts and heading lines
it reads come through the backend, and the order is a local index's."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import CODE_PAGES, ReadsCodesByPieces, write_docs
from twokeys import IndexOptions, build_index, open_index

pytestmark = pytest.mark.postgres
QUERY = "ZX-4821 after firmware update"


def test_the_near_miss_rule_reads_postgres_chunks(tmp_path: Path, pg_url: str) -> None:
    docs = write_docs(tmp_path / "docs", CODE_PAGES)
    encoder = ReadsCodesByPieces()
    build_index(docs, pg_url, IndexOptions(encoder="test-hash"), encoder=encoder)
    build_index(docs, tmp_path / "kb.twokeys", IndexOptions(encoder="test-hash"), encoder=encoder)
    with (
        open_index(pg_url, encoder=encoder) as pg,
        open_index(tmp_path / "kb.twokeys", encoder=encoder) as local,
    ):
        # both sensors prefer the near-miss code's page; the hybrid, the page of the code
        assert pg.search(QUERY, mode="bm25", k=1)[0].path == "zx-4812.md"
        assert pg.search(QUERY, mode="dense", k=1)[0].path == "zx-4812.md"
        assert pg.search(QUERY, mode="hybrid", k=1)[0].path == "zx-4821.md"
        assert [h.chunk.id for h in pg.search(QUERY, mode="hybrid", k=3)] == [
            h.chunk.id for h in local.search(QUERY, mode="hybrid", k=3)
        ]
