"""Build or update an index from a source folder or corpus file.

Stages: read documents, chunk the new or changed ones, embed their chunks, rebuild the
lexical index over all chunks, write a new generation and commit it. Documents whose
content hash is unchanged keep their chunks and embeddings from the previous
generation, so re-running ``index`` only embeds what changed; documents that are gone
from the source are dropped.
"""

from __future__ import annotations

import contextlib
import gc
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from twokeys import __version__
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
from twokeys.errors import ConfigError, IndexFormatError
from twokeys.ingest import SkippedFile, load_documents
from twokeys.lexical.batches import analysed_batches
from twokeys.lexical.bm25 import BM25Params, build_term_matrix_from_batches
from twokeys.optimize import build_derived, check_derived
from twokeys.store.base import DocumentInfo, EncoderInfo, Manifest
from twokeys.store.check import Problem, check_generation
from twokeys.store.local import (
    DATABASE,
    EMBEDDINGS,
    GenerationWriter,
    LocalIndex,
    check_writable_target,
    is_index,
    remove_stale,
    write_lock,
)
from twokeys.store.vectors import chosen_kind
from twokeys.types import Chunk, Document

#: ``stage(name, total)`` returns an ``advance(n)`` callback; total is None when unknown.
ProgressFactory = Callable[[str, int | None], Callable[[int], None]]

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


@dataclass
class _Pending:
    info: DocumentInfo  # first_row/n_chunks filled in at assembly
    chunks: list[Chunk]
    old_first_row: int = -1  # >= 0: chunks and embeddings come from the previous generation


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
    index_path: Path,
    options: IndexOptions | None = None,
    *,
    encoder: Encoder | None = None,
    progress: ProgressFactory | None = None,
    on_skip: Callable[[SkippedFile], None] | None = None,
    replace_source: bool = False,
) -> IndexReport:
    """Index ``source`` into ``index_path``, reusing unchanged documents of an existing index.

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

    check_writable_target(index_path)
    if encoder is None and options.encoder is not None:
        encoder = get_encoder(options.encoder)
    if encoder is not None and options.vector_index.kind == "hnsw":
        require_faiss()  # fail before embedding, not after
    encoder_name = options.encoder if options.encoder is not None else None
    if encoder is not None and encoder_name is None:
        encoder_name = "custom"

    with write_lock(index_path):
        remove_stale(index_path)  # what killed builds left; the lock rules out a live one
        previous = _open_previous(index_path, options, encoder, report)
        writer = GenerationWriter(index_path)
        try:
            with _gc_paused():
                pending = _collect(
                    source, index_path, options, encoder, previous, stage, skipped, report
                )
            if previous is not None and not replace_source:
                _check_same_source(previous.manifest, source, index_path, report)
            if previous is not None and _nothing_changed(pending, previous, options, report):
                writer.abort()
                report.committed = False
                committed = previous.manifest
                report.documents = int(committed.counts["documents"])
                report.chunks = int(committed.counts["chunks"])
            else:
                with _gc_paused():
                    manifest = _write(
                        writer, pending, options, encoder, encoder_name, previous, stage, report
                    )
                committed = writer.commit(replace(manifest, source=str(source.resolve())))
        except BaseException:
            writer.abort()
            raise
        finally:
            if previous is not None:
                previous.close()
        remove_stale(index_path)  # the replaced generation, unless a reader holds it
        report.vector_index = chosen_kind(committed)
        derived = (*(("hnsw",) if report.vector_index == "hnsw" else ()), *options.derived)
        if derived:
            _build_derived(index_path, stage, derived)
    report.seconds = time.perf_counter() - started
    return report


def _check_same_source(old: Manifest, source: Path, index_path: Path, report: IndexReport) -> None:
    """Refuse to drop an index's documents because another source was given."""
    new = str(source.resolve())
    if not report.removed or not old.source or old.source == new:
        return
    total = old.counts.get("documents", 0)
    raise ConfigError(
        f"{index_path} was built from {old.source}; indexing {new} into it would remove "
        f"{report.removed:,} of its {total:,} documents (pass --replace to make it an index "
        f"of {source} alone, or use another --index)"
    )


def _build_derived(index_path: Path, stage: ProgressFactory, names: Sequence[str]) -> None:
    """Build the committed generation's derived structures (an interrupted build leaves
    a valid index that searches without them until ``twokeys optimize``)."""
    index = LocalIndex(index_path)
    try:
        build_derived(index, names, stage)
    finally:
        index.close()


def _open_previous(
    index_path: Path, options: IndexOptions, encoder: Encoder | None, report: IndexReport
) -> LocalIndex | None:
    if not is_index(index_path):
        return None
    try:
        previous = LocalIndex(index_path)
    except (IndexFormatError, ConfigError) as exc:
        report.full_rebuild_reason = f"existing index unreadable ({exc})"
        return None
    old = previous.manifest
    reason = ""
    report.repaired = check_generation(old, previous.gen_dir, deep=True)
    database = [p for p in report.repaired if p.file.name == DATABASE]
    if database:
        reason = f"existing index damaged ({database[0]}); re-reading the sources"
    elif old.chunker != options.chunker:
        reason = "chunker settings changed"
    elif (old.encoder is None) != (encoder is None):
        reason = "dense index added or removed"
    elif encoder is not None and old.encoder is not None:
        if old.encoder.mismatch(encoder.id, encoder.fingerprint(), encoder.tokenizer_fingerprint()):
            reason = f"encoder changed ({old.encoder.id} -> {encoder.id})"
        elif old.encoder.dtype != options.dtype:
            reason = f"vector dtype changed ({old.encoder.dtype} -> {options.dtype})"
    if reason:
        report.full_rebuild_reason = reason
        previous.close()
        return None
    return previous


def _collect(
    source: Path,
    index_path: Path,
    options: IndexOptions,
    encoder: Encoder | None,
    previous: LocalIndex | None,
    stage: ProgressFactory,
    skipped: Callable[[SkippedFile], None],
    report: IndexReport,
) -> list[_Pending]:
    old_docs = {d.id: d for d in previous.all_documents()} if previous is not None else {}
    counter = encoder.count_tokens if encoder is not None else approx_token_counter
    advance = stage("Reading and chunking", None)
    pending: list[_Pending] = []
    seen: dict[str, str] = {}  # document id -> the path it came from
    batch: list[tuple[Document, bool]] = []  # to chunk: (document, whether it is new)

    def chunk_batch() -> None:
        """Chunk the documents waiting in ``batch`` (their tokens counted in one call)."""
        for (doc, new), chunks in zip(
            batch, chunk_documents([d for d, _ in batch], counter, options.chunker), strict=True
        ):
            if not chunks:  # not expected: has_text said it had some
                skipped(SkippedFile(doc.path, f"document {doc.id!r} has no text to index"))
                del seen[doc.id]
                continue
            if new:
                report.added += 1
            else:
                report.changed += 1
            pending.append(_Pending(_info(doc), chunks))
        advance(len(batch))
        batch.clear()

    for doc in load_documents(source, on_skip=skipped, exclude=(index_path,)):
        if doc.id in seen:  # a file "c.jsonl#y.md" and record "y.md" of "c.jsonl", ...
            first = seen[doc.id]
            skipped(SkippedFile(doc.path, f"id {doc.id!r} is already taken by {first}"))
            continue
        old = old_docs.get(doc.id)
        if old is not None and old.sha256 == doc.sha256 and old.n_chunks > 0:
            seen[doc.id] = doc.path
            report.unchanged += 1
            reuse = _Pending(_with_rows(_info(doc), 0, old.n_chunks), [], old.first_row)
            pending.append(reuse)
            advance(1)
        elif not has_text(doc):  # ingest leaves out documents with nothing to search
            skipped(SkippedFile(doc.path, f"document {doc.id!r} has no text to index"))
        else:
            seen[doc.id] = doc.path
            batch.append((doc, old is None))
            if len(batch) >= CHUNK_BATCH:
                chunk_batch()
    chunk_batch()
    report.removed = len(set(old_docs) - set(seen))
    pending.sort(key=lambda p: p.info.id)
    return pending


def _nothing_changed(
    pending: Sequence[_Pending], previous: LocalIndex, options: IndexOptions, report: IndexReport
) -> bool:
    """Whether the new generation would equal the previous one, which is undamaged."""
    old = previous.manifest
    if report.added or report.changed or report.removed or report.repaired:
        return False
    if (old.analyzer, old.bm25, old.vector_index) != (
        options.analyzer,
        options.bm25,
        options.vector_index,
    ):
        return False
    old_docs = {d.id: d for d in previous.all_documents()}
    return len(old_docs) == len(pending) and all(
        _same_record(p.info, old_docs[p.info.id]) for p in pending
    )


def _same_record(new: DocumentInfo, old: DocumentInfo) -> bool:
    """Equal as stored (metadata goes through JSON), ignoring where the rows start."""
    stored = json.loads(json.dumps(dict(new.metadata), sort_keys=True, default=str))
    return (new.title, new.path, new.kind, new.mtime, new.sha256, stored) == (
        old.title,
        old.path,
        old.kind,
        old.mtime,
        old.sha256,
        dict(old.metadata),
    )


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


def _with_rows(info: DocumentInfo, first_row: int, n_chunks: int) -> DocumentInfo:
    return replace(info, first_row=first_row, n_chunks=n_chunks)


def _write(
    writer: GenerationWriter,
    pending: list[_Pending],
    options: IndexOptions,
    encoder: Encoder | None,
    encoder_name: str | None,
    previous: LocalIndex | None,
    stage: ProgressFactory,
    report: IndexReport,
) -> Manifest:
    # Assign rows in document-id order and materialise reused chunks.
    rows_chunks: list[tuple[int, Chunk]] = []
    titles: list[str] = []
    new_rows: list[int] = []
    reused: list[tuple[int, int, int]] = []  # (new first row, old first row, count)
    docs: list[DocumentInfo] = []
    row = 0
    for item in pending:
        if item.old_first_row >= 0 and previous is not None:
            n = item.info.n_chunks
            chunks = previous.chunks(range(item.old_first_row, item.old_first_row + n))
            reused.append((row, item.old_first_row, n))
        else:
            chunks = item.chunks
            new_rows.extend(range(row, row + len(chunks)))
        docs.append(_with_rows(item.info, row, len(chunks)))
        for chunk in chunks:
            rows_chunks.append((row, chunk))
            titles.append(item.info.title)
            row += 1
    report.documents = len(docs)
    report.chunks = row
    # the texts retrievers index (heading line + body): a list when the encoder needs
    # them all, else made batch by batch for the analyzer (never all held at once)
    texts: Iterable[str] = (
        indexed_text(chunk, title) for (_, chunk), title in zip(rows_chunks, titles, strict=True)
    )

    encoder_info: EncoderInfo | None = None
    if encoder is not None:
        # vectors that fail their recorded size or hash are all embedded again; where only
        # some rows are bad (NaN, not unit length), :func:`_embed` redoes just those
        damaged = any(p.file.name == EMBEDDINGS and not p.rows_only for p in report.repaired)
        texts = list(texts)
        embeddings, report.embedded_chunks = _embed(
            encoder, texts, new_rows, reused, None if damaged else previous, options, stage
        )
        writer.write_embeddings(embeddings)
        encoder_info = EncoderInfo(
            name=encoder_name or encoder.id,
            id=encoder.id,
            fingerprint=encoder.fingerprint(),
            dim=encoder.dim,
            dtype=options.dtype,
            tokenizer=encoder.tokenizer_fingerprint(),
        )

    advance = stage("Lexical index", len(rows_chunks))
    # streamed in compact batches (on every core for a large build): the terms of all
    # chunks are never held as strings
    size = sum(len(chunk.text) for _, chunk in rows_chunks)  # about the texts' length
    batches = analysed_batches(texts, options.analyzer, advance, total_chars=size)
    matrix = build_term_matrix_from_batches(batches)
    writer.write_lexical(matrix, options.bm25)
    writer.add_documents(docs)
    writer.add_chunks(rows_chunks)
    return Manifest(
        analyzer=options.analyzer,
        bm25=options.bm25,
        chunker=options.chunker,
        encoder=encoder_info,
        counts={
            "documents": len(docs),
            "chunks": len(rows_chunks),
            "terms": len(matrix.vocabulary),
            "postings": int(matrix.indices.size),
        },
        twokeys_version=__version__,
        vector_index=options.vector_index,
    )


def _embed(
    encoder: Encoder,
    texts: Sequence[str],
    new_rows: Sequence[int],
    reused: Sequence[tuple[int, int, int]],
    previous: LocalIndex | None,
    options: IndexOptions,
    stage: ProgressFactory,
) -> tuple[npt.NDArray[np.floating], int]:
    """All chunks' vectors, and how many were embedded (not copied from ``previous``)."""
    dtype = np.float16 if options.dtype == "float16" else np.float32
    embeddings = np.zeros((len(texts), encoder.dim), dtype)
    old = _old_embeddings(previous)
    reused_rows = [r for first, _, n in reused for r in range(first, first + n)]
    if old is not None:
        for new_first, old_first, n in reused:
            embeddings[new_first : new_first + n] = old[old_first : old_first + n]
        # a damaged vector (NaN, inf, not unit length) is embedded again from its chunk's text
        if reused_rows:
            valid = _unit_rows(embeddings)
            rows = np.asarray(reused_rows)
            new_rows = sorted([*new_rows, *rows[~valid[rows]].tolist()])
    else:
        new_rows = sorted([*new_rows, *reused_rows])
    if new_rows:
        advance = stage("Embedding", len(new_rows))
        vectors = encoder.encode([texts[r] for r in new_rows], "document", progress=advance)
        embeddings[np.asarray(new_rows)] = vectors.astype(dtype)
    return embeddings, len(new_rows)


def _unit_rows(vectors: npt.NDArray[np.floating]) -> npt.NDArray[np.bool_]:
    """Which rows are finite unit (or zero) vectors, a block at a time (little extra memory)."""
    valid = np.zeros(len(vectors), bool)
    for start in range(0, len(vectors), 16_384):
        block = vectors[start : start + 16_384].astype(np.float32)
        finite = np.asarray(np.isfinite(block).all(axis=1))
        norms = np.linalg.norm(np.where(finite[:, None], block, 0.0), axis=1)
        unit = (np.abs(norms - 1.0) < 1e-2) | (norms == 0.0)  # an encoder may give zeros
        valid[start : start + len(block)] = finite & unit
    return valid


def _old_embeddings(previous: LocalIndex | None) -> npt.NDArray[np.floating] | None:
    """The previous generation's vectors, or None when there are none or they are damaged."""
    if previous is None:
        return None
    try:
        return previous.embeddings()
    except IndexFormatError:
        return None


def update_documents(
    index_path: Path,
    upserts: Sequence[Document] = (),
    deletes: Sequence[str] = (),
    *,
    encoder: Encoder | None = None,
) -> IndexReport:
    """Add or replace ``upserts`` and drop the documents ``deletes`` names, as one commit.

    The index's own settings (analyzer, BM25, chunker, encoder, dtype) are kept; every
    other document keeps its chunks and embeddings, so only the new text is embedded.
    Like :func:`build_index` it writes a whole new generation: a reader sees the index
    before or after the change, never half of it. A document given in both lists is an
    error. ``encoder`` is the index's encoder instance (loaded once by the caller);
    without it the registry's is loaded.
    """
    started = time.perf_counter()
    report = IndexReport()
    ids = [d.id for d in upserts]
    if len(set(ids)) != len(ids):
        raise ConfigError("documents: the same id is given twice")
    both = sorted(set(ids) & set(deletes))
    if both:
        raise ConfigError(f"documents: {both[0]!r} is both added and deleted")
    with write_lock(index_path):
        previous = LocalIndex(index_path)
        try:
            manifest = previous.manifest
            info = manifest.encoder
            options = IndexOptions(
                analyzer=manifest.analyzer,
                bm25=manifest.bm25,
                chunker=manifest.chunker,
                encoder=info.name if info is not None else None,
                dtype=info.dtype if info is not None else "float32",
                vector_index=manifest.vector_index,
            )
            if info is None:
                encoder = None
            elif encoder is None:
                encoder = get_encoder(info.name)
            counter = encoder.count_tokens if encoder is not None else approx_token_counter
            new = {d.id: d for d in upserts}
            gone = set(deletes)
            pending: list[_Pending] = []
            olds = previous.all_documents()
            for old in olds:
                if old.id in gone:
                    report.removed += 1
                elif old.id in new and old.sha256 != new[old.id].sha256:
                    report.changed += 1
                elif old.id in new:  # the same content again: keep it, embed nothing
                    report.unchanged += 1
                    doc = new.pop(old.id)
                    pending.append(
                        _Pending(
                            _with_rows(_info(doc), 0, old.n_chunks), [], old_first_row=old.first_row
                        )
                    )
                else:
                    report.unchanged += 1
                    pending.append(_Pending(replace(old, first_row=0), [], old.first_row))
            unknown = sorted(gone - {d.id for d in olds})
            if unknown:
                raise ConfigError(f"documents: no document {unknown[0]!r} to delete")
            report.added = len(new) - report.changed
            for doc in new.values():
                pending.append(_Pending(_info(doc), chunk_document(doc, counter, options.chunker)))
            pending.sort(key=lambda p: p.info.id)
            writer = GenerationWriter(index_path)
            try:
                written = _write(
                    writer,
                    pending,
                    options,
                    encoder,
                    options.encoder,
                    previous,
                    _noop_progress,
                    report,
                )
                committed = writer.commit(replace(written, source=manifest.source))
            except BaseException:
                writer.abort()
                raise
        finally:
            previous.close()
        remove_stale(index_path)  # the replaced generation, unless a reader holds it
        report.vector_index = chosen_kind(committed)
        if report.vector_index == "hnsw":  # the other derived structures wait for optimize
            _build_derived(index_path, _noop_progress, ("hnsw",))
    report.seconds = time.perf_counter() - started
    return report
