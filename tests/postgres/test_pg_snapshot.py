"""Each search on PostgreSQL reads one committed state (real server, a real writer).

A hybrid search with explain is several statements (BM25, the vector search, the idf
and matched terms fusion reads, the hits' chunks). A writer replaces every document in
each batch, so without one snapshot per search a batch committed between two of them
would make the search fail ("no chunk with row ... (deleted since?)") or mix two states.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from conftest import HashEncoder, write_docs
from twokeys import IndexOptions, open_index
from twokeys.analysis import analyzer_for
from twokeys.chunking import indexed_text
from twokeys.indexer import build_index
from twokeys.store.postgres.writer import PostgresWriter, prepare
from twokeys.types import Chunk

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DOCS = 12
WORDS = "alpha beta gamma delta epsilon zeta eta theta"


def _text(doc: int, generation: int) -> str:
    return f"{WORDS} document {doc} round r{generation} " + " ".join(
        f"w{(doc * 7 + generation + i) % 40}" for i in range(20)
    )


def _round_of(text: str) -> str:
    return text.split(" round ")[1].split()[0]


def test_hybrid_searches_see_one_state_while_every_document_is_replaced(
    tmp_path: Path, pg_url: str
) -> None:
    files = {f"d{d:02d}.md": f"# Doc {d}\n\n{_text(d, 0)}\n" for d in range(DOCS)}
    src = write_docs(tmp_path / "docs", files)
    build_index(src, pg_url, IndexOptions(encoder="test-hash"))
    encoder = HashEncoder()
    stop = threading.Event()
    written: list[int] = []
    failed: list[BaseException] = []

    def replace_all() -> None:
        try:
            with open_index(pg_url) as kb, PostgresWriter(pg_url) as writer:
                analyzer = analyzer_for(kb.manifest.analyzer)
                docs = kb.backend.all_documents()
                generation = 0
                while not stop.is_set():
                    generation += 1
                    batch = []
                    for d, info in enumerate(docs):
                        text = _text(d, generation)
                        chunk = Chunk(info.id, 0, text, 0, len(text), (info.title,))
                        indexed = indexed_text(chunk, info.title)
                        batch.append(
                            prepare(
                                info,
                                [chunk],
                                [analyzer.index_terms(indexed)],
                                encoder.encode([indexed], "document"),
                            )
                        )
                    writer.write(batch)  # every document replaced: every row renumbered
                    written.append(generation)
        except BaseException as exc:  # reported by the test below
            failed.append(exc)

    writer = threading.Thread(target=replace_all)
    searches = 0
    with open_index(pg_url, encoder=encoder) as kb:
        writer.start()
        try:
            deadline = time.monotonic() + 60
            while (len(written) < 30 or searches < 60) and time.monotonic() < deadline:
                assert not failed, failed
                with kb.backend.snapshot():  # the search and the passages it names
                    hits = kb.search(f"{WORDS} w3 w17", mode="hybrid", k=DOCS, explain=True)
                    passages = kb.passages([h.chunk_id for h in hits])
                assert len(hits) == DOCS
                rounds = {_round_of(h.chunk.text) for h in hits}
                assert len(rounds) == 1, rounds  # every hit from one committed batch
                assert all(h.evidence for h in hits)
                assert [passages[h.chunk_id].text for h in hits] == [h.chunk.text for h in hits]
                searches += 1
        finally:
            stop.set()
            writer.join(timeout=60)
    assert not failed, failed
    assert len(written) >= 30 and searches >= 60, (len(written), searches)


def test_a_failed_statement_ends_its_snapshot_and_the_next_search_works(
    tmp_path: Path, pg_url: str
) -> None:
    src = write_docs(tmp_path / "docs", {"a.md": f"# A\n\n{_text(0, 0)}\n"})
    build_index(src, pg_url, IndexOptions(encoder="test-hash"))
    with open_index(pg_url, encoder=HashEncoder()) as kb:
        vectors = kb.backend.vectors
        assert vectors is not None
        for _ in range(6):  # more than the pool's connections: none is left in a transaction
            with pytest.raises(psycopg.Error), kb.backend.snapshot():
                kb.search("alpha", mode="bm25", k=1)
                vectors.search(np.zeros(3, np.float32), 1)  # the wrong dimension
            assert [h.chunk_id for h in kb.search("alpha", mode="hybrid", k=1)] == ["a.md#0"]
