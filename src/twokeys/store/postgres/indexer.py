"""``twokeys index --from LOCAL_INDEX`` into PostgreSQL, and ``twokeys eval``'s reuse rule
for a PostgreSQL index.

From a source, PostgreSQL is written by the one indexer
(:func:`twokeys.indexer.build_index`) through
:class:`~twokeys.store.postgres.writer.PostgresIndexWriter`. From an embedded index
(``--from``), documents, chunks and vectors are copied as they are (nothing is
re-embedded), keeping each chunk's row, and the HNSW index is built once at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from twokeys.analysis import analyzer_for
from twokeys.chunking import indexed_text
from twokeys.dense.encoder import Encoder
from twokeys.errors import IndexFormatError
from twokeys.indexer import IndexOptions, IndexReport, ProgressFactory, _noop_progress, build_index
from twokeys.ingest import SkippedFile
from twokeys.store.local import LocalIndex
from twokeys.store.postgres.writer import PostgresWriter, PreparedDocument, check_empty, prepare
from twokeys.store.postgres.writer import spec_of as _spec_of

#: Chunks stored per transaction when copying.
BATCH_CHUNKS = 512


def index_into_postgres(
    source: Path,
    location: str,
    options: IndexOptions | None = None,
    *,
    encoder: Encoder | None = None,
    progress: ProgressFactory | None = None,
    on_skip: Callable[[SkippedFile], None] | None = None,
) -> IndexReport:
    """Index ``source`` into the PostgreSQL index at ``location``: :func:`build_index`
    (kept under this name for callers written before the indexer was one)."""
    return build_index(
        source, location, options, encoder=encoder, progress=progress, on_skip=on_skip
    )


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


def ensure_postgres_index(
    corpus: Path,
    location: str,
    *,
    encoder: str | None,
    rebuild: bool,
    progress: ProgressFactory | None = None,
) -> tuple[bool, str, IndexReport | None]:
    """``twokeys eval``'s reuse rule for a PostgreSQL index: (built, why, report).

    Reused when it exists and was built with ``encoder`` (any index serves BM25 only).
    """
    from twokeys.store.postgres.backend import PostgresIndex

    reason = "rebuild asked for" if rebuild else ""
    if not reason:
        try:
            backend = PostgresIndex(location)
        except IndexFormatError:
            reason = "no index yet"
        else:
            info = backend.manifest.encoder
            backend.close()
            built_with = info.name if info is not None else None
            if encoder is not None and built_with != encoder:
                reason = f"index built with encoder {built_with or 'none'}, asked for {encoder}"
    if not reason:
        return False, "", None
    report = build_index(corpus, location, IndexOptions(encoder=encoder), progress=progress)
    return True, reason, report
