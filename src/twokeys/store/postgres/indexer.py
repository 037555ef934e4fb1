"""``twokeys index`` into PostgreSQL: from a source folder, or copied from an embedded index.

From a source, documents are read, compared by content hash with the stored ones, and
the new or changed ones chunked, embedded and analysed with the same code as the
embedded build (:mod:`twokeys.indexer`), then stored a batch at a time, each batch one
transaction (:class:`~twokeys.store.postgres.writer.PostgresWriter`); documents gone
from the source are removed in the last one. Documents are handled in id order, so a
first build numbers chunks as the embedded build does.

From an embedded index (``--from``), documents, chunks and vectors are copied as they
are (nothing is re-embedded), keeping each chunk's row, and the HNSW index is built
once at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys import __version__
from twokeys.analysis import analyzer_for
from twokeys.chunking import TokenCounter, approx_token_counter, chunk_document, indexed_text
from twokeys.dense.encoder import Encoder, get_encoder
from twokeys.errors import IndexFormatError
from twokeys.indexer import IndexOptions, IndexReport, ProgressFactory, _info, _noop_progress
from twokeys.ingest import SkippedFile, load_documents
from twokeys.store.base import EncoderInfo, Manifest
from twokeys.store.local import LocalIndex
from twokeys.store.postgres.writer import PostgresWriter, PreparedDocument, check_empty, prepare
from twokeys.store.postgres.writer import spec_of as _spec_of
from twokeys.types import Chunk, Document

#: Chunks stored per transaction (and embedded per call).
BATCH_CHUNKS = 512


def _spec(
    options: IndexOptions, encoder: Encoder | None, encoder_name: str | None
) -> dict[str, Any]:
    info = None
    if encoder is not None:
        info = EncoderInfo(
            name=encoder_name or encoder.id,
            id=encoder.id,
            fingerprint=encoder.fingerprint(),
            dim=encoder.dim,
            dtype=options.dtype,
            tokenizer=encoder.tokenizer_fingerprint(),
        )
    manifest = Manifest(
        analyzer=options.analyzer,
        bm25=options.bm25,
        chunker=options.chunker,
        encoder=info,
        counts={},
        twokeys_version=__version__,
        vector_index=options.vector_index,
    )
    return _spec_of(manifest)


def index_into_postgres(
    source: Path,
    location: str,
    options: IndexOptions | None = None,
    *,
    encoder: Encoder | None = None,
    progress: ProgressFactory | None = None,
    on_skip: Callable[[SkippedFile], None] | None = None,
) -> IndexReport:
    """Index ``source`` into the PostgreSQL index at ``location`` (created if missing)."""
    options = options or IndexOptions()
    stage = progress or _noop_progress
    started = time.perf_counter()
    report = IndexReport()

    def skipped(item: SkippedFile) -> None:
        report.skipped.append(item)
        if on_skip is not None:
            on_skip(item)

    if encoder is None and options.encoder is not None:
        encoder = get_encoder(options.encoder)
    encoder_name = options.encoder if options.encoder is not None else "custom"
    with PostgresWriter(location) as writer:
        writer.configure(_spec(options, encoder, encoder_name if encoder else None))
        stored = writer.document_hashes()
        advance = stage("Reading", None)
        todo: dict[str, Document] = {}
        for doc in load_documents(source, on_skip=skipped):
            if doc.id in todo:
                continue
            todo[doc.id] = doc
            advance(1)
        removed = sorted(set(stored) - set(todo))
        changed = []
        for doc_id in sorted(todo):
            old = stored.get(doc_id)
            if old == todo[doc_id].sha256:
                report.unchanged += 1
                continue
            report.added += old is None
            report.changed += old is not None
            changed.append(todo[doc_id])
        report.removed = len(removed)
        analyzer = analyzer_for(options.analyzer)
        counter = encoder.count_tokens if encoder is not None else approx_token_counter
        advance = stage("Chunking, embedding, storing", len(changed))
        dtype = np.float16 if options.dtype == "float16" else np.float32
        for batch in _batches(changed, counter, options):
            texts = [indexed_text(c, doc.title) for doc, chunks in batch for c in chunks]
            vectors: npt.NDArray[np.floating] | None = None
            if encoder is not None and texts:
                vectors = encoder.encode(texts, "document").astype(dtype)
                report.embedded_chunks += len(texts)
            prepared: list[PreparedDocument] = []
            at = 0
            for doc, chunks in batch:
                terms = [analyzer.index_terms(t) for t in texts[at : at + len(chunks)]]
                vecs = vectors[at : at + len(chunks)] if vectors is not None else None
                prepared.append(prepare(_info(doc), chunks, terms, vecs))
                at += len(chunks)
            writer.write(prepared)
            advance(len(batch))
        if removed:
            writer.write([], remove=removed)
        counts = writer.counts()
    report.documents = counts["documents"]
    report.chunks = counts["chunks"]
    report.vector_index = "none" if encoder is None else options.vector_index.choose(report.chunks)
    report.seconds = time.perf_counter() - started
    return report


def _batches(
    docs: Sequence[Document], counter: TokenCounter, options: IndexOptions
) -> Iterator[list[tuple[Document, list[Chunk]]]]:
    """Chunked documents in id order, about :data:`BATCH_CHUNKS` chunks a batch."""
    batch: list[tuple[Document, list[Chunk]]] = []
    size = 0
    for doc in docs:
        chunks = chunk_document(doc, counter, options.chunker)
        batch.append((doc, chunks))
        size += len(chunks)
        if size >= BATCH_CHUNKS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


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
    report = index_into_postgres(corpus, location, IndexOptions(encoder=encoder), progress=progress)
    return True, reason, report
