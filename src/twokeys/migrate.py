"""``twokeys index --from LOCAL_INDEX --index postgresql://...``: copy an embedded index
into an empty PostgreSQL index as it is.

Documents, chunks and vectors are copied (nothing is re-embedded), keeping each chunk's
row, and the HNSW index is built once at the end. Indexing a *source* into PostgreSQL is
the one indexer's (:func:`twokeys.indexer.build_index`, through
:class:`~twokeys.store.postgres.writer.PostgresIndexWriter`).

This sits above both the indexer and storage (it reads a local index and writes a
PostgreSQL one), so nothing in ``store/`` imports the layers above it.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from twokeys.analysis import analyzer_for
from twokeys.chunking import indexed_text
from twokeys.indexer import IndexReport, ProgressFactory, _noop_progress
from twokeys.store.local import LocalIndex
from twokeys.store.postgres.writer import PostgresWriter, PreparedDocument, check_empty, prepare
from twokeys.store.postgres.writer import spec_of as _spec_of

#: Chunks stored per transaction when copying.
BATCH_CHUNKS = 512


def copy_into_postgres(
    local_path: Path, location: str, *, progress: ProgressFactory | None = None
) -> IndexReport:
    """Copy an embedded index into an empty PostgreSQL index, without re-embedding."""
    stage = progress or _noop_progress
    started = time.perf_counter()
    report = IndexReport()
    local = LocalIndex(local_path)
    try:
        manifest = local.manifest
        analyzer = analyzer_for(manifest.analyzer)
        embeddings = local.embeddings()
        with PostgresWriter(location) as writer:
            check_empty(writer)
            writer.configure(_spec_of(manifest), hnsw_now=False)
            docs = local.all_documents()
            advance = stage("Copying", len(docs))
            batch: list[PreparedDocument] = []
            size = 0
            for info in docs:
                rows = list(range(info.first_row, info.first_row + info.n_chunks))
                chunks = local.chunks(rows)
                terms = [analyzer.index_terms(indexed_text(c, info.title)) for c in chunks]
                vecs = np.asarray(embeddings[rows]) if embeddings is not None else None
                batch.append(prepare(info, chunks, terms, vecs, rows))
                size += len(chunks)
                if size >= 4 * BATCH_CHUNKS:
                    writer.write(batch)
                    advance(len(batch))
                    batch, size = [], 0
            if batch:
                writer.write(batch)
                advance(len(batch))
            writer.finish_copy()
            if embeddings is not None:
                stage("Vector index (HNSW)", None)
                writer.build_vector_index()
        report.documents = len(docs)
        report.chunks = sum(d.n_chunks for d in docs)
        report.unchanged = len(docs)
        report.vector_index = (
            "none" if manifest.encoder is None else manifest.vector_index.choose(report.chunks)
        )
    finally:
        local.close()
    report.seconds = time.perf_counter() - started
    return report
