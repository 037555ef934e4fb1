"""Build or update an index, whatever stores it: one indexer over the storage contract.

Stages: read documents, ask the index's writer (:func:`twokeys.store.contract.open_writer`,
picked by the location: a folder, ``postgresql://...``) which documents it holds and
with which content hash, chunk the new or changed ones, embed their chunks, and hand
them to the writer (add or replace), delete the documents gone from the source, then
commit. Unchanged documents keep their chunks and embeddings, so re-running ``index``
only embeds what changed. The writer analyses chunks with its spec's analyzer and
keeps the lexical statistics; when its changes become visible is its own (the local
directory: one new generation at commit; PostgreSQL: a transaction per batch).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twokeys.analysis import AnalyzerSpec
from twokeys.chunking import (
    ChunkerConfig,
    approx_token_counter,
    chunk_document,
    chunk_documents,
    has_text,
    indexed_text,
)
from twokeys.dense.ann import require_faiss
from twokeys.dense.encoder import Encoder, get_encoder
from twokeys.dense.selection import VectorIndexOptions
from twokeys.errors import ConfigError
from twokeys.grouping import groups_by_size
from twokeys.ingest import SkippedFile, load_documents
from twokeys.ingest.files import MAX_FILE_BYTES
from twokeys.lexical.bm25 import BM25Params
from twokeys.optimize import check_derived, optimize
from twokeys.store.base import DocumentInfo, EncoderInfo, IndexSpec
from twokeys.store.check import Problem
from twokeys.store.contract import (
    LOCAL,
    Committed,
    DocumentChunks,
    IndexWriter,
    open_writer,
    scheme_of,
)
from twokeys.store.contract import ProgressFactory as ProgressFactory
from twokeys.types import Chunk, Document

DTYPES = ("float32", "float16")
#: documents chunked together: their sentences are counted in one tokenizer call
CHUNK_BATCH = 256


@dataclass(frozen=True)
class IndexOptions:
    """How to build an index. ``encoder=None`` builds a lexical-only index.

    ``vector_index`` picks exact search or an HNSW graph (by default by the number of
    vectors, :mod:`twokeys.dense.selection`); the graph is built at the end of the build,
    with the ``derived`` structures asked for (:mod:`twokeys.optimize`).
    """

    analyzer: AnalyzerSpec = field(default_factory=AnalyzerSpec)
    bm25: BM25Params = field(default_factory=BM25Params)
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    encoder: str | None = "minilm"
    dtype: str = "float32"
    vector_index: VectorIndexOptions = field(default_factory=VectorIndexOptions)
    derived: tuple[str, ...] = ()  # derived structures built besides the HNSW graph: "lsi"

    def __post_init__(self) -> None:
        check_derived(self.derived)
        if self.dtype not in DTYPES:
            raise ConfigError(f"dtype: {self.dtype!r} is not one of {', '.join(DTYPES)}")

    def spec(self, encoder: Encoder | None) -> IndexSpec:
        """The index spec these options give with ``encoder`` (their encoder's instance,
        or another one: named "custom" when the options name none)."""
        info = None
        if encoder is not None:
            own = (encoder.id, encoder.fingerprint(), encoder.tokenizer_fingerprint())
            if encoder.vector_space() != own:  # a query-side stand-in (minilm-static)
                name = self.encoder or encoder.id
                raise ConfigError(
                    f"encoder: {name!r} embeds queries only, in another encoder's vector "
                    f"space ({encoder.vector_space()[0]}); build the index with that "
                    "encoder and search it with query_encoder="
                    f"{name!r}"
                )
            info = EncoderInfo(
                name=self.encoder if self.encoder is not None else "custom",
                id=encoder.id,
                fingerprint=encoder.fingerprint(),
                dim=encoder.dim,
                dtype=self.dtype,
                tokenizer=encoder.tokenizer_fingerprint(),
            )
        return IndexSpec(self.analyzer, self.bm25, self.chunker, info, self.vector_index)

    @classmethod
    def of(cls, spec: IndexSpec) -> IndexOptions:
        """The options an index with ``spec`` was built with (its derived structures aside)."""
        info = spec.encoder
        return cls(
            analyzer=spec.analyzer,
            bm25=spec.bm25,
            chunker=spec.chunker,
            encoder=info.name if info is not None else None,
            dtype=info.dtype if info is not None else "float32",
            vector_index=spec.vector_index,
        )


@dataclass
class IndexReport:
    """What a build did."""

    documents: int = 0
    chunks: int = 0
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    embedded_chunks: int = 0
    vector_index: str = ""  # exact, hnsw or none: what dense search uses
    skipped: list[SkippedFile] = field(default_factory=list)
    warnings: list[SkippedFile] = field(default_factory=list)  # indexed after a repair
    full_rebuild_reason: str = ""
    seconds: float = 0.0
    committed: bool = True  # False: nothing changed, so no new generation was written
    repaired: list[Problem] = field(default_factory=list)  # damage not copied forward


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a bulk stage.

    A build makes millions of objects that live until it ends (documents, chunks, their
    texts and terms) and hardly any reference cycles; each full collection walks all of
    them, which made reading and chunking grow faster than the corpus (a third of its
    time at 100k documents). Reference counting still frees everything as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _noop_progress(_name: str, _total: int | None) -> Callable[[int], None]:
    return lambda _n: None


def build_index(
    source: Path,
    location: Path | str,
    options: IndexOptions | None = None,
    *,
    encoder: Encoder | None = None,
    progress: ProgressFactory | None = None,
    on_skip: Callable[[SkippedFile], None] | None = None,
    replace_source: bool = False,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> IndexReport:
    """Index ``source`` into the index at ``location`` (a folder, or a URL such as
    ``postgresql://...``), reusing the unchanged documents it holds.

    ``encoder`` overrides the registry lookup of ``options.encoder`` (tests pass a fake).
    An index mirrors one source: re-indexing the source it was built from adds, updates
    and removes documents to match it. Indexing another source into it would remove the
    documents of the first, so that raises :class:`ConfigError` before anything is
    embedded, unless ``replace_source`` (the CLI's ``--replace``) says to make it an
    index of the new source alone.

    Every file or record left out is passed to ``on_skip`` and listed in
    :attr:`IndexReport.skipped`; one indexed after a repair (a file name that is not
    valid UTF-8, ...) has ``kept`` set and is listed in :attr:`IndexReport.warnings`.
    """
    options = options or IndexOptions()
    stage = progress or _noop_progress
    started = time.perf_counter()
    report = IndexReport()

    def skipped(item: SkippedFile) -> None:
        (report.warnings if item.kept else report.skipped).append(item)
        if on_skip is not None:
            on_skip(item)

    if encoder is None and options.encoder is not None:
        encoder = get_encoder(options.encoder)
    if encoder is not None and options.vector_index.kind == "hnsw":
        require_faiss()  # fail before embedding, not after
    # the collector stays off until the build's documents and chunks are freed (by the
    # writer's close, and ``del``): switched on while they live, its first collection
    # would walk every one of them
    spec = options.spec(encoder)
    with _gc_paused(), open_writer(location, spec, encoder=encoder, progress=stage) as writer:
        report.full_rebuild_reason = writer.rebuild_reason
        report.repaired = list(writer.repaired)
        stored = writer.stored()
        changed = _collect(
            source, writer, stored, options, encoder, stage, skipped, report, max_file_bytes
        )
        if not replace_source:
            _check_same_source(writer.source, len(stored), source, location, report)
        _store(writer, changed, encoder, stage, report)
        committed = writer.commit(str(source.resolve()))
        del changed, stored, writer
    _finish(report, committed, started)
    if options.derived and is_local(location):  # a database keeps its own indexes
        optimize(Path(location), options.derived, progress=stage)
        report.seconds = time.perf_counter() - started
    return report


def _check_same_source(
    old: str, total: int, source: Path, location: Path | str, report: IndexReport
) -> None:
    """Refuse to drop an index's documents because another source was given."""
    new = str(source.resolve())
    if not report.removed or not old or old == new:
        return
    raise ConfigError(
        f"{location} was built from {old}; indexing {new} into it would remove "
        f"{report.removed:,} of its {total:,} documents (pass --replace to make it an index "
        f"of {source} alone, or use another --index)"
    )


def _collect(
    source: Path,
    writer: IndexWriter,
    stored: Mapping[str, str],
    options: IndexOptions,
    encoder: Encoder | None,
    stage: ProgressFactory,
    skipped: Callable[[SkippedFile], None],
    report: IndexReport,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> list[tuple[DocumentInfo, list[Chunk]]]:
    """Read ``source``: unchanged documents are kept, the others chunked (returned, in
    id order); the stored documents not seen are deleted."""
    counter = encoder.count_tokens if encoder is not None else approx_token_counter
    advance = stage("Reading and chunking", None)
    changed: list[tuple[DocumentInfo, list[Chunk]]] = []
    seen: dict[str, str] = {}  # document id -> the path it came from
    batch: list[tuple[Document, bool]] = []  # to chunk: (document, whether it is new)

    def chunk_batch() -> None:
        """Chunk the documents waiting in ``batch`` (their tokens counted in one call)."""
        docs = [doc for doc, _ in batch]
        for (doc, new), chunks in zip(
            batch, chunk_documents(docs, counter, options.chunker), strict=True
        ):
            if not chunks:  # not expected: has_text said it had some
                skipped(SkippedFile(doc.path, f"document {doc.id!r} has no text to index"))
                del seen[doc.id]
                continue
            if new:
                report.added += 1
            else:
                report.changed += 1
            changed.append((_info(doc), chunks))
        advance(len(batch))
        batch.clear()

    unread: set[str] = set()  # files not read this time whose indexed documents stay

    def skipped_file(item: SkippedFile) -> None:
        if item.keep_indexed:
            unread.update(item.paths or (item.path,))
        skipped(item)

    for doc in load_documents(
        source, on_skip=skipped_file, exclude=writer.excluded, max_file_bytes=max_file_bytes
    ):
        if doc.id in seen:  # a file "c.jsonl#y.md" and record "y.md" of "c.jsonl", ...
            first = seen[doc.id]
            skipped(SkippedFile(doc.path, f"id {doc.id!r} is already taken by {first}"))
            continue
        old = stored.get(doc.id)
        if old == doc.sha256:
            seen[doc.id] = doc.path
            report.unchanged += 1
            writer.keep(_info(doc))
            advance(1)
        elif not has_text(doc):  # ingest leaves out documents with nothing to search
            skipped(SkippedFile(doc.path, f"document {doc.id!r} has no text to index"))
        else:
            seen[doc.id] = doc.path
            batch.append((doc, old is None))
            if len(batch) >= CHUNK_BATCH:
                chunk_batch()
    chunk_batch()
    removed = sorted(
        doc_id
        for doc_id in set(stored) - set(seen)
        if doc_id not in unread and doc_id.partition("#")[0] not in unread
    )
    report.removed = len(removed)
    writer.delete(removed)
    changed.sort(key=lambda item: item[0].id)
    return changed


def _store(
    writer: IndexWriter,
    docs: Sequence[tuple[DocumentInfo, Sequence[Chunk]]],
    encoder: Encoder | None,
    stage: ProgressFactory,
    report: IndexReport,
) -> None:
    """Embed the chunks of ``docs`` (a batch of :attr:`IndexWriter.batch_chunks` chunks
    per call) and hand them to the writer."""
    info = writer.spec.encoder
    if info is None:
        encoder = None
    elif encoder is None:
        encoder = get_encoder(info.name)
    dtype = np.float16 if info is not None and info.dtype == "float16" else np.float32
    total = sum(len(chunks) for _, chunks in docs)
    advance = stage("Embedding", total) if encoder is not None and total else None
    for batch in _batches(docs, writer.batch_chunks):
        vectors: npt.NDArray[np.floating] | None = None
        # the texts are embedded here; without an encoder the writer makes them itself
        texts = [] if encoder is None else [indexed_text(c, d.title) for d, cs in batch for c in cs]
        if encoder is not None and texts:
            vectors = encoder.encode(texts, "document", progress=advance).astype(dtype)
            report.embedded_chunks += len(texts)
        prepared = []
        at = 0
        for doc, chunks in batch:
            vecs = vectors[at : at + len(chunks)] if vectors is not None else None
            prepared.append(DocumentChunks(doc, tuple(chunks), vecs))
            at += len(chunks)
        writer.put(prepared)


def _batches(
    docs: Sequence[tuple[DocumentInfo, Sequence[Chunk]]], size: int | None
) -> Iterator[Sequence[tuple[DocumentInfo, Sequence[Chunk]]]]:
    """``docs`` in order, about ``size`` chunks a batch (None: all in one)."""
    if size is None:
        if docs:
            yield docs
        return
    yield from groups_by_size(docs, lambda doc: len(doc[1]), size)


def _finish(report: IndexReport, committed: Committed, started: float) -> None:
    report.committed = committed.written
    report.documents = int(committed.counts.get("documents", 0))
    report.chunks = int(committed.counts.get("chunks", 0))
    report.vector_index = committed.vector_index
    report.embedded_chunks += committed.embedded
    report.seconds = time.perf_counter() - started


def _info(doc: Document) -> DocumentInfo:
    return DocumentInfo(
        id=doc.id,
        title=doc.title,
        path=doc.path,
        kind=doc.kind,
        mtime=doc.mtime,
        sha256=doc.sha256,
        first_row=0,
        n_chunks=0,
        metadata=doc.metadata,
    )


def update_documents(
    location: Path | str,
    upserts: Sequence[Document] = (),
    deletes: Sequence[str] = (),
    *,
    encoder: Encoder | None = None,
) -> IndexReport:
    """Add or replace ``upserts`` and drop the documents ``deletes`` names, as one commit.

    The index's own spec (analyzer, BM25, chunker, encoder, dtype) is kept; every other
    document keeps its chunks and embeddings, so only the new text is embedded. A reader
    sees the index before or after the change, never half of it. A document given in
    both lists, or an unknown one to delete, is an error. ``encoder`` is the index's
    encoder instance (loaded once by the caller); without it the registry's is loaded.
    """
    started = time.perf_counter()
    report = IndexReport()
    ids = [d.id for d in upserts]
    if len(set(ids)) != len(ids):
        raise ConfigError("documents: the same id is given twice")
    both = sorted(set(ids) & set(deletes))
    if both:
        raise ConfigError(f"documents: {both[0]!r} is both added and deleted")
    with open_writer(location, None, encoder=encoder) as writer:
        info = writer.spec.encoder
        if info is None:
            encoder = None
        elif encoder is None:
            encoder = get_encoder(info.name)
        counter = encoder.count_tokens if encoder is not None else approx_token_counter
        stored = writer.stored()
        unknown = sorted(set(deletes) - set(stored))
        if unknown:
            raise ConfigError(f"documents: no document {unknown[0]!r} to delete")
        writer.delete(sorted(set(deletes)))
        report.removed = len(set(deletes))
        changed: list[tuple[DocumentInfo, Sequence[Chunk]]] = []
        for doc in sorted(upserts, key=lambda d: d.id):
            old = stored.get(doc.id)
            if old == doc.sha256:  # the same content again: keep it, embed nothing
                writer.keep(_info(doc))
            else:
                report.changed += old is not None
                report.added += old is None
                changed.append((_info(doc), chunk_document(doc, counter, writer.spec.chunker)))
        report.unchanged = len(stored) - report.removed - report.changed
        _store(writer, changed, encoder, _noop_progress, report)
        committed = writer.commit(None)
    _finish(report, committed, started)
    return report


def is_local(location: Path | str) -> bool:
    """Whether ``location`` names a local index folder (not a database URL)."""
    return scheme_of(location) == LOCAL
