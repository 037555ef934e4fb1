"""The hybrid's heading rule on the postgres backend: ``Index._chunk_headings`` reads the
heading lines through the backend's ``chunks_with_source``, as on a local index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.dense.encoder import Kind
from twokeys.request import SearchRequest
from twokeys.retrievers.hybrid import HybridRetriever

pytestmark = pytest.mark.postgres
QUERY = "DebugStruct helper for writing Debug implementations"


class _PrefersTheTrait(HashEncoder):
    """A dense model that puts the query beside any text about the ``Debug`` trait."""

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), self.dim), 1e-3, np.float32)
        for i, text in enumerate(texts):
            out[i, 0 if kind == "query" or "trait" in text else 1] = 1.0
        return out


def test_the_heading_rule_reads_heading_lines_from_postgres(tmp_path: Path, pg_url: str) -> None:
    docs = write_docs(
        tmp_path / "docs",
        {
            "debugstruct.md": "# DebugStruct\n\nA helper for writing formatted structs.\n",
            "debug.md": "# Debug\n\nThe Debug trait: writing Debug implementations by hand, "
            "with a DebugStruct helper from debug_struct; DebugStruct writes each field.\n",
        },
    )
    encoder = _PrefersTheTrait()
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
