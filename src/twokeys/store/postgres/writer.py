"""Writing an index kept in PostgreSQL: whole documents, one transaction per batch.

A batch adds, replaces and removes whole documents in one transaction that also keeps
the lexical statistics exact: the replaced or removed documents' chunks take their
postings, document frequencies and lengths with them, and the new ones add theirs,
before the commit makes the batch visible at once. A writer that dies mid-way leaves
the index as the last committed batch left it: no partial document is ever visible.
Writers serialise on the ``stats`` row (see :mod:`twokeys.store.postgres.schema`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from twokeys import __version__
from twokeys.analysis import analyzer_for
from twokeys.chunking import indexed_text
from twokeys.errors import ConfigError, IndexFormatError
from twokeys.store.base import DocumentInfo, IndexSpec, Manifest
from twokeys.store.contract import Committed, DocumentChunks, IndexWriter, ProgressFactory
from twokeys.store.postgres.backend import connect_pool, read_spec
from twokeys.store.postgres.location import PostgresLocation
from twokeys.store.postgres.schema import migrate, qualified
from twokeys.types import Chunk


@dataclass(frozen=True)
class PreparedDocument:
    """A document ready to store: its chunks, each chunk's term counts and length, and
    (with an encoder) its chunks' unit vectors; ``rows`` keeps given chunk rows (a copy
    of an embedded index), None takes new ones."""

    info: DocumentInfo
    chunks: tuple[Chunk, ...]
    term_counts: tuple[Mapping[str, int], ...]
    lengths: tuple[int, ...]
    embeddings: npt.NDArray[np.floating] | None = None
    rows: tuple[int, ...] | None = None


def prepare(
    info: DocumentInfo,
    chunks: Sequence[Chunk],
    terms: Sequence[Sequence[str]],
    embeddings: npt.NDArray[np.floating] | None = None,
    rows: Sequence[int] | None = None,
) -> PreparedDocument:
    return PreparedDocument(
        info=info,
        chunks=tuple(chunks),
        term_counts=tuple(Counter(t) for t in terms),
        lengths=tuple(len(t) for t in terms),
        embeddings=embeddings,
        rows=tuple(rows) if rows is not None else None,
    )


def spec_of(manifest: Manifest) -> dict[str, Any]:
    """The settings row: what a build fixed (analyzer, BM25, chunker, encoder, vectors),
    the twokeys that wrote it and the documents' source."""
    return settings(manifest.spec, manifest.source, manifest.twokeys_version)


def settings(spec: IndexSpec, source: str, version: str = __version__) -> dict[str, Any]:
    """The settings row for ``spec``, with the documents' source ("" unknown)."""
    return {**spec.to_dict(), "twokeys_version": version, "source": source}


def _as_written_now(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A settings row as this twokeys writes it: settings added since it was written
    (``chunker.page_tokens``) read as their defaults; a row it cannot read, as stored."""
    try:
        return {**stored, **IndexSpec.from_dict(stored).to_dict()}
    except (KeyError, TypeError, ValueError, ConfigError):
        return dict(stored)


def _analyzer_version(settings_row: Mapping[str, Any]) -> int:
    analyzer = settings_row.get("analyzer")
    version = analyzer.get("version", 1) if isinstance(analyzer, Mapping) else 1
    return version if isinstance(version, int) else 1


def _incompatible(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Why chunks stored under ``old`` can't be kept under ``new`` ('' if they can). An
    older analyzer version is no reason: the chunks are re-analysed in place
    (:meth:`PostgresWriter.configure`)."""
    if _analyzer_version(old) > _analyzer_version(new):
        return (
            f"its analyzer is version {_analyzer_version(old)}, newer than this twokeys' "
            f"{_analyzer_version(new)}"
        )
    for key, what in (
        ("analyzer", "analyzer settings"),
        ("chunker", "chunker settings"),
        ("encoder", "encoder"),
    ):
        before, after = old.get(key), new.get(key)
        if key == "analyzer" and isinstance(before, Mapping) and isinstance(after, Mapping):
            before = {k: v for k, v in before.items() if k != "version"}
            after = {k: v for k, v in after.items() if k != "version"}
        if before != after:
            return f"its {what} differ ({before} -> {after})"
    return ""


class PostgresWriter:
    """Adds, replaces and removes documents of an index in PostgreSQL."""

    def __init__(self, location: str | PostgresLocation) -> None:
        self.location = (
            location if isinstance(location, PostgresLocation) else PostgresLocation.parse(location)
        )
        self.where = self.location.display()
        self._pool = connect_pool(self.location, max_size=2)
        self._s = qualified(self.location.schema)
        self.column_type = "vector"
        try:
            with self._pool.connection() as conn:
                self.upgraded_from = migrate(
                    conn, self.location.schema, create=True, where=self.where
                )
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PostgresWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def configure(self, spec: Mapping[str, Any], *, hnsw_now: bool = True) -> bool:
        """Record the build settings; True when the index was new (had no settings).

        An index built with another analyzer, chunker or encoder is refused (its chunks
        would need re-analysing or re-embedding), except one whose analyzer is an older
        version of this one's: its chunks are re-analysed in place (:meth:`_reanalyse`),
        keeping their rows and vectors. BM25's k1 and b and the vector-index options may
        change, since they are applied at query time. ``hnsw_now=False``
        leaves the HNSW index to :meth:`build_vector_index` (after a bulk load).
        """
        encoder = spec.get("encoder")
        self.column_type = "halfvec" if encoder and encoder["dtype"] == "float16" else "vector"
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(f"SELECT 1 FROM {self._s}.stats FOR UPDATE")
            old = read_spec(conn, self.location.schema)
            if old is not None:
                old = _as_written_now(old)
                why = _incompatible(old, spec)
                if why:
                    raise ConfigError(
                        f"{self.where}: this index can't be updated with these settings: {why}; "
                        "index into another schema (location#name) or drop this one"
                    )
                if _analyzer_version(old) < _analyzer_version(spec):
                    self._reanalyse(conn, IndexSpec.from_dict(spec))
                conn.execute(f"UPDATE {self._s}.settings SET spec = %s", (Jsonb(dict(spec)),))
                return False
            conn.execute(f"INSERT INTO {self._s}.settings (spec) VALUES (%s)", (Jsonb(dict(spec)),))
            if encoder:
                dim = int(encoder["dim"])
                conn.execute(
                    f"ALTER TABLE {self._s}.chunks ADD COLUMN embedding {self.column_type}({dim})"
                )
                if hnsw_now:
                    self._create_hnsw(conn, spec)
        return True

    def _create_hnsw(self, conn: Any, spec: Mapping[str, Any]) -> None:
        hnsw = spec["vector_index"]["hnsw"]
        ops = "halfvec_ip_ops" if self.column_type == "halfvec" else "vector_ip_ops"
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON {self._s}.chunks "
            f"USING hnsw (embedding {ops}) WITH (m = {int(hnsw['m'])}, "
            f"ef_construction = {int(hnsw['ef_construction'])})"
        )

    def build_vector_index(self) -> None:
        """Create the HNSW index (after a bulk load, which is faster than row by row)."""
        with self._pool.connection() as conn, conn.transaction():
            spec = read_spec(conn, self.location.schema)
            if spec and spec.get("encoder"):
                conn.execute("SELECT set_config('maintenance_work_mem', '512MB', true)")
                self._create_hnsw(conn, spec)

    def settings(self) -> dict[str, Any] | None:
        """The stored settings row (None before the first build)."""
        with self._pool.connection() as conn:
            return read_spec(conn, self.location.schema)

    def record_source(self, source: str) -> None:
        """Record the source the documents were read from in the settings row."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                f"UPDATE {self._s}.settings SET spec = spec || %s",
                (Jsonb({"source": source}),),
            )

    def document_hashes(self) -> dict[str, str]:
        """{document id: content hash} of the stored documents."""
        with self._pool.connection() as conn:
            rows = conn.execute(f"SELECT id, sha256 FROM {self._s}.documents").fetchall()
        return {str(i): str(h) for i, h in rows}

    def _reanalyse(self, conn: Any, spec: IndexSpec) -> None:
        """Every stored chunk's terms and length again, by ``spec``'s analyzer (a newer
        version than the one that wrote them), in the caller's transaction: the chunks,
        their rows and vectors stay; the postings, document frequencies, lengths and the
        lexical statistics are replaced, and the generation advances."""
        s = self._s
        analyzer = analyzer_for(spec.analyzer)
        found = conn.execute(
            f"SELECT c.row_id, c.text, c.heading_path, d.title FROM {s}.chunks c "
            f"JOIN {s}.documents d ON d.id = c.doc_id ORDER BY c.row_id"
        ).fetchall()
        postings: list[tuple[str, int, int, int]] = []
        df: Counter[str] = Counter()
        rows: list[int] = []
        lengths: list[int] = []
        for row, text, heading, title in found:
            chunk = Chunk("", 0, text, 0, 0, tuple(heading))
            terms = analyzer.index_terms(indexed_text(chunk, title))
            rows.append(int(row))
            lengths.append(len(terms))
            for term, tf in Counter(terms).items():
                postings.append((term, int(row), tf, len(terms)))
                df[term] += 1
        conn.execute(f"DELETE FROM {s}.postings")
        conn.execute(f"DELETE FROM {s}.terms")
        conn.execute(
            f"UPDATE {s}.chunks c SET length = v.length "
            "FROM unnest(%s::bigint[], %s::int[]) AS v(row_id, length) WHERE c.row_id = v.row_id",
            (rows, lengths),
        )
        postings.sort()
        with conn.cursor().copy(f"COPY {s}.postings (term, row_id, tf, dl) FROM STDIN") as copy:
            for posting in postings:
                copy.write_row(posting)
        terms = sorted(df)
        conn.execute(
            f"INSERT INTO {s}.terms (term, df) SELECT * FROM unnest(%s::text[], %s::int[])",
            (terms, [df[t] for t in terms]),
        )
        conn.execute(
            f"UPDATE {s}.stats SET total_length = %s, n_terms = %s, n_postings = %s, "
            "generation = generation + 1, updated_at = now()",
            (sum(lengths), len(terms), len(postings)),
        )

    def write(self, documents: Sequence[PreparedDocument], remove: Sequence[str] = ()) -> None:
        """Store ``documents`` (replacing those with the same ids) and delete ``remove``,
        in one transaction."""
        s = self._s
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(f"SELECT 1 FROM {s}.stats FOR UPDATE")
            gone_ids = sorted({d.info.id for d in documents} | set(remove))
            d_docs, d_chunks, d_length, d_terms, d_postings = self._delete(conn, gone_ids)
            docs = sorted(documents, key=lambda d: d.info.id)
            n_chunks = sum(len(d.chunks) for d in docs)
            fresh = iter(self._allocate(conn, sum(len(d.chunks) for d in docs if d.rows is None)))
            df: Counter[str] = Counter()
            n_postings = 0
            with conn.cursor().copy(
                f"COPY {s}.documents (id, title, path, kind, mtime, sha256, metadata, n_chunks) "
                "FROM STDIN"
            ) as copy:
                for d in docs:
                    i = d.info
                    copy.write_row(
                        (i.id, i.title, i.path, i.kind, i.mtime, i.sha256, Jsonb(dict(i.metadata)),
                         len(d.chunks))
                    )  # fmt: skip
            columns = "row_id, doc_id, position, text, start_offset, end_offset, heading_path, "
            columns += "length, metadata, locator"
            has_vectors = any(d.embeddings is not None for d in docs)
            if has_vectors:
                columns += ", embedding"
            postings: list[tuple[str, int, int, int]] = []
            with conn.cursor().copy(f"COPY {s}.chunks ({columns}) FROM STDIN") as copy:
                for d in docs:
                    rows = d.rows if d.rows is not None else [next(fresh) for _ in d.chunks]
                    metadata = Jsonb(dict(d.info.metadata))
                    for j, chunk in enumerate(d.chunks):
                        row = rows[j]
                        values: list[Any] = [
                            row, chunk.doc_id, chunk.position, chunk.text, chunk.start,
                            chunk.end, list(chunk.heading_path), d.lengths[j], metadata,
                            Jsonb(chunk.locator.to_dict()) if chunk.locator else None,
                        ]  # fmt: skip
                        if has_vectors:
                            vec = d.embeddings[j] if d.embeddings is not None else None
                            values.append(None if vec is None else _vector_text(vec))
                        copy.write_row(values)
                        for term, tf in d.term_counts[j].items():
                            postings.append((term, row, tf, d.lengths[j]))
                            df[term] += 1
            n_postings = len(postings)
            postings.sort()
            with conn.cursor().copy(f"COPY {s}.postings (term, row_id, tf, dl) FROM STDIN") as copy:
                for posting in postings:
                    copy.write_row(posting)
            new_terms = 0
            if df:
                terms = sorted(df)
                added = conn.execute(
                    f"INSERT INTO {s}.terms AS t (term, df) "
                    "SELECT * FROM unnest(%s::text[], %s::int[]) "
                    "ON CONFLICT (term) DO UPDATE SET df = t.df + EXCLUDED.df "
                    "RETURNING (xmax = 0)",
                    (terms, [df[t] for t in terms]),
                ).fetchall()
                new_terms = sum(1 for (inserted,) in added if inserted)
            length = sum(sum(d.lengths) for d in docs)
            conn.execute(
                f"UPDATE {s}.stats SET n_documents = n_documents + %s, n_chunks = n_chunks + %s, "
                "total_length = total_length + %s, n_terms = n_terms + %s, "
                "n_postings = n_postings + %s, generation = generation + 1, updated_at = now()",
                (
                    len(docs) - d_docs,
                    n_chunks - d_chunks,
                    length - d_length,
                    new_terms - d_terms,
                    n_postings - d_postings,
                ),
            )

    def counts(self) -> dict[str, int]:
        """The committed documents, chunks, terms and postings."""
        with self._pool.connection() as conn:
            row = conn.execute(
                f"SELECT n_documents, n_chunks, n_terms, n_postings FROM {self._s}.stats"
            ).fetchone()
        names = ("documents", "chunks", "terms", "postings")
        return {name: int(v) for name, v in zip(names, row or (0, 0, 0, 0), strict=True)}

    def _allocate(self, conn: Any, n: int) -> list[int]:
        """``n`` new chunk rows, increasing (concurrent writers get disjoint ones)."""
        if n == 0:
            return []
        rows = conn.execute(
            f"SELECT nextval(pg_get_serial_sequence('{self._s}.chunks', 'row_id')) "
            "FROM generate_series(1, %s)",
            (n,),
        ).fetchall()
        return sorted(int(r[0]) for r in rows)

    def _delete(self, conn: Any, ids: Sequence[str]) -> tuple[int, int, int, int, int]:
        """Delete documents with their chunks and postings, taking their statistics off.

        Returns the (documents, chunks, total length, terms, postings) removed.
        """
        if not ids:
            return 0, 0, 0, 0, 0
        s = self._s
        found = conn.execute(
            f"SELECT row_id, length FROM {s}.chunks WHERE doc_id = ANY(%s)", (list(ids),)
        ).fetchall()
        rows = [int(r) for r, _ in found]
        terms_gone = postings_gone = 0
        if rows:
            terms_gone, postings_gone = conn.execute(
                f"WITH x AS (SELECT term, count(*)::int AS n FROM {s}.postings "
                "WHERE row_id = ANY(%s) GROUP BY term ORDER BY term), "
                f"gone AS (DELETE FROM {s}.terms t USING x WHERE t.term = x.term AND t.df = x.n "
                "RETURNING t.term), "
                f"kept AS (UPDATE {s}.terms t SET df = t.df - x.n FROM x "
                "WHERE t.term = x.term AND t.df > x.n RETURNING t.term) "
                "SELECT (SELECT count(*) FROM gone), (SELECT coalesce(sum(n), 0) FROM x)",
                (rows,),
            ).fetchone()
        deleted = conn.execute(
            f"DELETE FROM {s}.documents WHERE id = ANY(%s)", (list(ids),)
        ).rowcount
        return (
            int(deleted),
            len(rows),
            sum(int(n) for _, n in found),
            int(terms_gone),
            int(postings_gone),
        )

    def finish_copy(self) -> None:
        """After rows were given explicitly: the next new row follows the largest one."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{self._s}.chunks', 'row_id'), "
                f"coalesce((SELECT max(row_id) FROM {self._s}.chunks), 0) + 1, false)"
            )

    def verify(self) -> list[str]:
        """Differences between the kept statistics and a recount (none when exact)."""
        s = self._s
        with self._pool.connection() as conn:
            kept = conn.execute(
                f"SELECT n_documents, n_chunks, total_length, n_terms, n_postings FROM {s}.stats"
            ).fetchone()
            counted = conn.execute(
                f"SELECT (SELECT count(*) FROM {s}.documents), (SELECT count(*) FROM {s}.chunks), "
                f"(SELECT coalesce(sum(length), 0) FROM {s}.chunks), "
                f"(SELECT count(*) FROM {s}.terms), (SELECT count(*) FROM {s}.postings)"
            ).fetchone()
            bad_df = conn.execute(
                f"SELECT count(*) FROM {s}.terms t FULL JOIN (SELECT term, count(*) AS n "
                f"FROM {s}.postings GROUP BY term) p ON p.term = t.term "
                "WHERE t.df IS DISTINCT FROM p.n"
            ).fetchone()
            bad_docs = conn.execute(
                f"SELECT count(*) FROM {s}.documents d WHERE d.n_chunks <> "
                f"(SELECT count(*) FROM {s}.chunks c WHERE c.doc_id = d.id)"
            ).fetchone()
        names = ("documents", "chunks", "total length", "terms", "postings")
        problems = [
            f"{name}: kept {a}, counted {b}"
            for name, a, b in zip(names, kept or (), counted or (), strict=True)
            if int(a) != int(b)
        ]
        if bad_df and bad_df[0]:
            problems.append(f"document frequencies: {bad_df[0]} terms differ from their postings")
        if bad_docs and bad_docs[0]:
            problems.append(f"documents: {bad_docs[0]} with a chunk count that differs")
        return problems


class PostgresIndexWriter(IndexWriter):
    """The PostgreSQL backend's :class:`~twokeys.store.contract.IndexWriter`.

    Put documents are analysed here and stored :attr:`batch_chunks` chunks at a time,
    each batch (with the deletions asked for so far) one transaction: a reader sees
    whole documents only, and a build that dies keeps the batches it committed. An
    update of a few documents is one transaction, at :meth:`commit`. An index built
    with another analyzer, chunker or encoder is refused (:meth:`PostgresWriter.configure`),
    not rebuilt.
    """

    batch_chunks = 512

    def __init__(
        self,
        location: str,
        spec: IndexSpec | None,
        *,
        encoder: object | None = None,
        progress: ProgressFactory | None = None,
    ) -> None:
        self._writer = PostgresWriter(location)
        try:
            stored = self._writer.settings()
            self.source = str(stored.get("source", "")) if stored else ""
            if spec is None:
                if stored is None:
                    raise IndexFormatError(
                        f"{self._writer.where}: the index has no settings yet (never indexed)"
                    )
                try:
                    spec = IndexSpec.from_dict(stored)
                except (KeyError, TypeError, ValueError, ConfigError) as exc:
                    raise IndexFormatError(
                        f"{self._writer.where}: malformed settings ({exc!r})"
                    ) from exc
                self._writer.column_type = (
                    "halfvec" if spec.encoder and spec.encoder.dtype == "float16" else "vector"
                )
            else:
                self._writer.configure(settings(spec, self.source))
            self.spec = spec
            self._hashes = self._writer.document_hashes()
        except BaseException:
            self._writer.close()
            raise
        self._analyzer = analyzer_for(spec.analyzer)
        self._pending: list[PreparedDocument] = []
        self._pending_chunks = 0
        self._remove: list[str] = []

    def stored(self) -> Mapping[str, str]:
        return self._hashes

    def keep(self, info: DocumentInfo) -> None:
        """Nothing to do: a kept document's rows stay as they are."""

    def put(self, docs: Sequence[DocumentChunks]) -> None:
        for doc in docs:
            texts = [indexed_text(c, doc.info.title) for c in doc.chunks]
            terms = [self._analyzer.index_terms(t) for t in texts]
            self._pending.append(prepare(doc.info, doc.chunks, terms, doc.embeddings))
            self._pending_chunks += len(doc.chunks)
        if self._pending_chunks >= self.batch_chunks:
            self._flush()

    def delete(self, ids: Sequence[str]) -> None:
        self._remove.extend(ids)

    def _flush(self) -> None:
        if self._pending or self._remove:
            self._writer.write(self._pending, remove=self._remove)
        self._pending, self._pending_chunks, self._remove = [], 0, []

    def commit(self, source: str | None = None) -> Committed:
        self._flush()
        if source is not None and source != self.source:
            self._writer.record_source(source)
        counts = self._writer.counts()
        kind = (
            "none" if self.spec.encoder is None else self.spec.vector_index.choose(counts["chunks"])
        )
        return Committed(counts, written=True, vector_index=kind)

    def abort(self) -> None:
        self._pending, self._pending_chunks, self._remove = [], 0, []

    def close(self) -> None:
        self._writer.close()


def _vector_text(vec: npt.NDArray[np.floating]) -> str:
    """pgvector's text form, exact for float32 and float16 values (repr round-trips)."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vec, np.float32)) + "]"


def check_empty(writer: PostgresWriter) -> None:
    if writer.document_hashes():
        raise IndexFormatError(
            f"{writer.where}: already holds documents; copy into an empty index "
            "(another schema: location#name)"
        )
