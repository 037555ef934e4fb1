"""The local directory backend's :class:`~twokeys.store.contract.IndexWriter`: a session
that ends in one new generation (:class:`~twokeys.store.local.GenerationWriter`).

Opening takes the index folder's write lock (one writer at a time, across processes),
removes what killed builds left, and opens the current generation as the previous one.
A build (a spec given) checks it deeply first: damage is not carried forward (a
damaged database means nothing is reused; damaged vectors are embedded again from
their stored chunks), and a changed chunker, encoder or vector dtype means nothing is
reused either (:meth:`IndexSpec.reuse_conflict`). An update (no spec) trusts it.

:meth:`LocalWriter.commit` assembles the new generation: documents in id order, each
with its chunks on consecutive rows (kept ones copied from the previous generation
with their vectors, put ones as given), the lexical index over all chunks (BM25
weights from :mod:`twokeys.lexical.bm25`), then writes and commits it; when nothing
changed it writes nothing. After a commit it removes the replaced generation (unless
a reader holds it) and builds the HNSW graph when the vector index is HNSW.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from twokeys import __version__
from twokeys.dense.encoder import Encoder, get_encoder
from twokeys.errors import ConfigError, IndexFormatError, TwokeysError
from twokeys.lexical.batches import analysed_matrix
from twokeys.lexical.bm25 import bm25_weights
from twokeys.store.base import DocumentInfo, IndexSpec, Manifest
from twokeys.store.check import Problem, check_generation
from twokeys.store.contract import (
    Committed,
    DocumentChunks,
    IndexWriter,
    ProgressFactory,
)
from twokeys.store.local import (
    DATABASE,
    EMBEDDINGS,
    GenerationWriter,
    LocalIndex,
    check_writable_target,
    is_index,
    read_manifest,
    remove_stale,
    write_lock,
)
from twokeys.store.vectors import build_graph, chosen_kind
from twokeys.text.passages import stream_indexed_texts
from twokeys.types import Chunk


def _noop_progress(_name: str, _total: int | None) -> Callable[[int], None]:
    return lambda _n: None


def open_local_writer(
    location: str,
    spec: IndexSpec | None,
    *,
    encoder: Encoder | None = None,
    progress: ProgressFactory | None = None,
) -> LocalWriter:
    """The writer :func:`twokeys.store.contract.open_writer` opens for a path or a
    ``file://`` URL."""
    path = Path(urlsplit(location).path) if location.startswith("file://") else Path(location)
    return LocalWriter(path, spec, encoder=encoder, progress=progress)


class LocalWriter(IndexWriter):
    """One session on a local index; see the module docstring."""

    batch_chunks = None  # one generation: everything is embedded in one call

    def __init__(
        self,
        path: Path,
        spec: IndexSpec | None,
        *,
        encoder: Encoder | None = None,
        progress: ProgressFactory | None = None,
        lock: bool = True,
        repaired: Sequence[Problem] | None = None,
    ) -> None:
        """``lock=False``: the caller holds :func:`write_lock`; ``repaired``: damage the
        caller found already (skips the deep check)."""
        self.path = path
        self.excluded = (path,)
        self._encoder = encoder
        self._stage = progress or _noop_progress
        if spec is None:
            read_manifest(path)  # no index: say so before creating a folder for the lock
        else:
            check_writable_target(path)
        self._stack = ExitStack()
        self._previous: LocalIndex | None = None
        self._generation: GenerationWriter | None = None
        try:
            if lock:
                self._stack.enter_context(write_lock(path))
            remove_stale(path)  # what killed builds left; the lock rules out a live one
            self._previous = self._open_previous(spec, repaired)
            if spec is None:
                if self._previous is None:  # pragma: no cover - read_manifest raised
                    raise IndexFormatError(f"no index at {path}")
                spec = self._previous.manifest.spec
            self.spec = spec
            self._old: dict[str, DocumentInfo] = (
                {d.id: d for d in self._previous.all_documents()} if self._previous else {}
            )
            self._kept: dict[str, DocumentInfo] = {}
            self._put: dict[str, DocumentChunks] = {}
            self._deleted: set[str] = set()
            self._generation = GenerationWriter(path)
        except BaseException:
            self.close()
            raise

    def _open_previous(
        self, spec: IndexSpec | None, repaired: Sequence[Problem] | None
    ) -> LocalIndex | None:
        if not is_index(self.path):
            return None
        try:
            previous = LocalIndex(self.path)
        except (IndexFormatError, ConfigError) as exc:
            if spec is None:
                raise
            self.rebuild_reason = f"existing index unreadable ({exc})"
            return None
        self.source = previous.manifest.source
        if spec is None and repaired is None:
            return previous  # an update trusts the index it writes to
        found = (
            list(repaired)
            if repaired is not None
            else check_generation(previous.manifest, previous.gen_dir, deep=True)
        )
        self.repaired = found
        database = [p for p in found if p.file.name == DATABASE]
        if database:
            reason = f"existing index damaged ({database[0]}); re-reading the sources"
        else:
            reason = spec.reuse_conflict(previous.manifest.spec) if spec is not None else ""
        if reason:
            self.rebuild_reason = reason
            previous.close()
            return None
        return previous

    # -- the session ---------------------------------------------------------------

    def stored(self) -> Mapping[str, str]:
        # a document stored without chunks is never unchanged: it is chunked again
        return {d.id: d.sha256 if d.n_chunks > 0 else "" for d in self._old.values()}

    def keep(self, info: DocumentInfo) -> None:
        if info.id not in self._old:
            raise ConfigError(f"documents: no stored document {info.id!r} to keep")
        self._kept[info.id] = info

    def put(self, docs: Sequence[DocumentChunks]) -> None:
        for doc in docs:
            self._put[doc.info.id] = doc
            self._kept.pop(doc.info.id, None)

    def delete(self, ids: Sequence[str]) -> None:
        unknown = sorted(set(ids) - set(self._old))
        if unknown:
            raise ConfigError(f"documents: no document {unknown[0]!r} to delete")
        self._deleted.update(ids)

    def abort(self) -> None:
        if self._generation is not None:
            self._generation.abort()
            self._generation = None

    def close(self) -> None:
        try:
            self.abort()
            if self._previous is not None:
                self._previous.close()
                self._previous = None
        finally:
            self._stack.close()

    def commit(self, source: str | None = None) -> Committed:
        writer = self._generation
        if writer is None:
            raise TwokeysError(f"{self.path}: this writing session has ended")
        previous = self._previous
        if previous is not None and self._nothing_changed(previous.manifest):
            self.abort()
            old = previous.manifest
            return Committed(old.counts, written=False, vector_index=chosen_kind(old))
        manifest, embedded = self._write(writer, source)
        self._generation = None
        if previous is not None:
            previous.close()
            self._previous = None
        remove_stale(self.path)  # the replaced generation, unless a reader holds it
        kind = chosen_kind(manifest)
        if kind == "hnsw":
            self._build_graph(int(manifest.counts["chunks"]))
        return Committed(manifest.counts, written=True, vector_index=kind, embedded=embedded)

    def _nothing_changed(self, old: Manifest) -> bool:
        """Whether the new generation would equal the previous one, which is undamaged."""
        if self._put or self._deleted or self.repaired:
            return False
        if (old.analyzer, old.bm25, old.vector_index) != (
            self.spec.analyzer,
            self.spec.bm25,
            self.spec.vector_index,
        ):
            return False
        return all(_same_record(info, self._old[doc_id]) for doc_id, info in self._kept.items())

    def _build_graph(self, n_chunks: int) -> None:
        """The committed generation's HNSW graph (an interrupted build leaves a valid
        index that searches exactly until ``twokeys optimize``)."""
        index = LocalIndex(self.path)
        try:
            build_graph(index, self._stage("Vector index (HNSW)", n_chunks))
        except OSError as exc:
            raise TwokeysError(f"{self.path}: cannot save the hnsw structure ({exc})") from exc
        finally:
            index.close()

    # -- assembling the generation ---------------------------------------------------

    def _write(self, writer: GenerationWriter, source: str | None) -> tuple[Manifest, int]:
        previous = self._previous
        # Rows in document-id order: kept documents' chunks come from the previous
        # generation, put ones as given.
        ids = sorted(
            (set(self._old) - self._deleted - set(self._put)) | set(self._put),
        )
        docs: list[DocumentInfo] = []
        rows_chunks: list[tuple[int, Chunk]] = []
        titles: list[str] = []
        reused: list[tuple[int, int, int]] = []  # (new first row, old first row, count)
        given: list[tuple[int, npt.NDArray[np.floating] | None, int]] = []
        row = 0
        for doc_id in ids:
            if doc_id in self._put:
                item = self._put[doc_id]
                chunks: Sequence[Chunk] = item.chunks
                info = item.info
                given.append((row, item.embeddings, len(chunks)))
            else:
                assert previous is not None
                old = self._old[doc_id]
                info = self._kept.get(doc_id, old)
                chunks = previous.chunks(range(old.first_row, old.first_row + old.n_chunks))
                reused.append((row, old.first_row, old.n_chunks))
            docs.append(replace(info, first_row=row, n_chunks=len(chunks)))
            for chunk in chunks:
                rows_chunks.append((row, chunk))
                titles.append(info.title)
                row += 1
        # the texts retrievers index (heading line + body): a list when the encoder needs
        # them all, else made batch by batch for the analyzer (never all held at once)
        texts: Iterable[str] = stream_indexed_texts(
            zip((chunk for _, chunk in rows_chunks), titles, strict=True)
        )

        embedded = 0
        encoder_info = self.spec.encoder
        if encoder_info is not None:
            listed = list(texts)
            texts = listed
            embeddings, embedded = self._embeddings(listed, given, reused)
            writer.write_embeddings(embeddings)

        advance = self._stage("Lexical index", len(rows_chunks))
        # streamed in batches of term ids: the terms of all chunks are never held as strings
        matrix = analysed_matrix(texts, self.spec.analyzer, advance)
        writer.write_lexical(matrix, bm25_weights(matrix, self.spec.bm25))
        writer.add_documents(docs)
        writer.add_chunks(rows_chunks)
        recorded = self.source if source is None else source
        committed = writer.commit(
            Manifest(
                spec=self.spec,
                counts={
                    "documents": len(docs),
                    "chunks": len(rows_chunks),
                    "terms": len(matrix.vocabulary),
                    "postings": int(matrix.indices.size),
                },
                twokeys_version=__version__,
                source=recorded,
            )
        )
        return committed, embedded

    def _embeddings(
        self,
        texts: Sequence[str],
        given: Sequence[tuple[int, npt.NDArray[np.floating] | None, int]],
        reused: Sequence[tuple[int, int, int]],
    ) -> tuple[npt.NDArray[np.floating], int]:
        """All chunks' vectors, and how many stored chunks were embedded again.

        Vectors that fail their recorded size or hash are all embedded again; where
        only some rows are bad (NaN, not unit length), just those are.
        """
        info = self.spec.encoder
        assert info is not None
        dtype = np.float16 if info.dtype == "float16" else np.float32
        embeddings = np.zeros((len(texts), info.dim), dtype)
        for first, vectors, n in given:
            if n:
                if vectors is None or len(vectors) != n:
                    raise ValueError("put: a document's embeddings do not match its chunks")
                embeddings[first : first + n] = vectors.astype(dtype)
        reused_rows = [r for first, _, n in reused for r in range(first, first + n)]
        damaged = any(p.file.name == EMBEDDINGS and not p.rows_only for p in self.repaired)
        old = None if damaged else self._old_embeddings()
        if old is not None:
            for new_first, old_first, n in reused:
                embeddings[new_first : new_first + n] = old[old_first : old_first + n]
            # a damaged vector (NaN, inf, not unit length) is embedded again from its text
            redo: list[int] = []
            if reused_rows:
                valid = _unit_rows(embeddings)
                rows = np.asarray(reused_rows)
                redo = sorted(rows[~valid[rows]].tolist())
        else:
            redo = reused_rows
        if redo:
            encoder = self._encoder or get_encoder(info.name)
            advance = self._stage("Embedding", len(redo))
            vectors = encoder.encode([texts[r] for r in redo], "document", progress=advance)
            embeddings[np.asarray(redo)] = vectors.astype(dtype)
        return embeddings, len(redo)

    def _old_embeddings(self) -> npt.NDArray[Any] | None:
        """The previous generation's vectors, or None when there are none or they are
        damaged."""
        if self._previous is None:
            return None
        try:
            return self._previous.embeddings()
        except IndexFormatError:
            return None


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
