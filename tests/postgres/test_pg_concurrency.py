"""Several processes on one PostgreSQL index: writers at once, readers meanwhile, a killed
writer (real server, real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from conftest import ROOT, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.store.postgres.location import PostgresLocation
from twokeys.store.postgres.writer import PostgresWriter

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

# A writer adds DOCS documents of CHUNKS chunks each, one document a transaction.
WRITER = """
import sys
from twokeys.analysis import AnalyzerSpec, analyzer_for
from twokeys.store.base import DocumentInfo
from twokeys.store.postgres.writer import PostgresWriter, prepare
from twokeys.types import Chunk

url, name, n_docs, n_chunks = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
analyzer = analyzer_for(AnalyzerSpec())
with PostgresWriter(url) as writer:
    for d in range(n_docs):
        doc_id = f"{name}/{d:04d}"
        texts = [f"shared common words {name} {d} part {p}" for p in range(n_chunks)]
        chunks = [Chunk(doc_id, p, text, 0, 10) for p, text in enumerate(texts)]
        info = DocumentInfo(doc_id, doc_id, doc_id, "text", 0.0, f"h{d}", 0, n_chunks, {"w": name})
        writer.write([prepare(info, chunks, [analyzer.index_terms(c.text) for c in chunks])])
"""

# A reader searches until told to stop; every snapshot it sees must be consistent.
READER = """
import sys, time
import psycopg
from twokeys import open_index

url, schema, stop_file = sys.argv[1], sys.argv[2], sys.argv[3]
conninfo = url.partition("#")[0]
import os
searches = checks = 0
with open_index(url) as kb, psycopg.connect(conninfo) as conn:
    while not os.path.exists(stop_file):
        hits = kb.search("shared common words", mode="bm25", k=20)
        assert all(h.chunk.text.startswith("shared") for h in hits), hits
        searches += 1
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            kept = conn.execute(f'SELECT n_documents, n_chunks FROM "{schema}".stats').fetchone()
            seen = conn.execute(
                f'SELECT (SELECT count(*) FROM "{schema}".documents), '
                f'(SELECT count(*) FROM "{schema}".chunks)'
            ).fetchone()
            assert kept == seen, (kept, seen)
            partial = conn.execute(
                f'SELECT count(*) FROM "{schema}".documents d WHERE d.n_chunks <> '
                f'(SELECT count(*) FROM "{schema}".chunks c WHERE c.doc_id = d.id)'
            ).fetchone()
            assert partial == (0,), partial
        checks += 1
print(searches, checks)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT / 'tests'}"}


def test_two_writers_and_a_reader_lose_and_duplicate_nothing(tmp_path: Path, pg_url: str) -> None:
    docs, chunks = 40, 3
    src = write_docs(tmp_path / "seed", {"seed.md": "# Seed\n\nshared common words seed.\n"})
    build_index(src, pg_url, IndexOptions(encoder=None))
    schema = PostgresLocation.parse(pg_url).schema
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, pg_url, schema, str(stop)],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, pg_url, name, str(docs), str(chunks)],
            env=_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("w1", "w2")
    ]
    errors = [w.communicate(timeout=300)[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0], errors
    stop.touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    searches, checks = map(int, out.split())
    assert searches > 0 and checks > 0
    with PostgresWriter(pg_url) as writer:
        assert writer.verify() == []
        assert writer.counts()["documents"] == 1 + 2 * docs
        assert writer.counts()["chunks"] == 1 + 2 * docs * chunks
    with open_index(pg_url) as kb:
        hits = kb.search("shared common words", mode="bm25", k=1000)
        ids = [h.chunk.id for h in hits]
        assert len(ids) == len(set(ids)) == 1 + 2 * docs * chunks


KILLED = """
import sys
from pathlib import Path
from twokeys import IndexOptions, build_index
from twokeys.store.postgres.writer import PostgresIndexWriter

PostgresIndexWriter.batch_chunks = 4
build_index(Path(sys.argv[1]), sys.argv[2], IndexOptions(encoder=None))
"""


def test_a_killed_writer_leaves_whole_documents_only(tmp_path: Path, pg_url: str) -> None:
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    files = {
        f"d{i:03d}.md": "\n\n".join(
            f"# Part {p}\n\n" + " ".join(words[(i + p + j) % 10] for j in range(60))
            for p in range(3)
        )
        for i in range(150)
    }
    src = write_docs(tmp_path / "docs", files)
    options = IndexOptions(encoder=None)
    writer = PostgresWriter(pg_url)  # creates the schema, so progress can be polled
    loc = PostgresLocation.parse(pg_url)
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(src), pg_url], env=_env())
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            row = conn.execute(f'SELECT generation FROM "{loc.schema}".stats').fetchone()
            if row and row[0] >= 3:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        committed = writer.counts()["documents"]
        assert 0 < committed < len(files)
        assert writer.verify() == []
        # the next run finishes the job: every document once, statistics exact
        report = build_index(src, pg_url, options)
        assert report.unchanged == committed and report.added == len(files) - committed
        assert writer.verify() == []
        assert writer.counts()["documents"] == len(files)
    writer.close()
