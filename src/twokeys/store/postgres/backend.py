"""Reading an index kept in PostgreSQL: the same interfaces as the embedded backend.

BM25 is scored at query time in SQL from the postings, the per-term document
frequencies and the chunk count and total length, all read by one statement (one
snapshot), so scores follow every committed write and never go stale. Query terms come
from twokeys' own analyzer (in Python), and k1 and b from the index's settings, so the
scores are the embedded engine's (:mod:`twokeys.lexical.bm25`) computed in double
precision; they are rounded to float32 like the embedded engine's, and ties keep the
embedded order (by chunk row).

Dense search orders by pgvector's inner product over unit vectors (the cosine), with
the HNSW index when the index's vector-index choice (:mod:`twokeys.dense.selection`)
says ``hnsw``, and exactly (ordered by the score, an expression no index matches, so
a scan) when it says ``exact``, as the embedded engine would. The HNSW candidate list
(``hnsw.ef_search``) is the index's ``ef_search`` or ``k + 8``, whichever is larger.

A search is several statements (BM25, the vector search, the idf and matched terms
that fusion and explain read, the hits' chunks). Inside :meth:`PostgresIndex.snapshot`
(the engine opens one around every search) they all run on one connection, in one
read-only ``REPEATABLE READ`` transaction, so they see one committed state: a batch
that replaces a hit's document between two of them is invisible to the search.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError, IndexFormatError, MissingExtraError
from twokeys.filters import Filter, chunk_matches
from twokeys.lexical.bm25 import BM25Params, TermMatrix
from twokeys.store.base import (
    FORMAT_NAME,
    FORMAT_VERSION,
    DocumentInfo,
    LexicalIndex,
    Manifest,
    RowMask,
    VectorIndex,
)
from twokeys.store.contract import IndexReader
from twokeys.store.postgres.location import PostgresLocation
from twokeys.store.postgres.schema import check_readable, qualified
from twokeys.types import Chunk, Locator, ScoredChunk

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover - exercised without the extra
    psycopg = None  # type: ignore[assignment]


def require_psycopg() -> None:
    if psycopg is None:
        raise MissingExtraError(
            "a postgresql:// index needs the postgres extra: pip install 'twokeys[postgres]'"
        )


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """Per connection: pgvector's types (when the extension is there yet)."""
    row = conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone()
    if row is not None:
        register_vector(conn)
    conn.commit()


def connect_pool(location: PostgresLocation, max_size: int = 4) -> ConnectionPool:
    require_psycopg()
    try:
        pool = ConnectionPool(
            location.conninfo,
            min_size=1,
            max_size=max_size,
            configure=configure_connection,
            kwargs={"autocommit": True},  # one statement a read: no BEGIN/COMMIT round trips
            open=False,
            name=f"twokeys:{location.schema}",
        )
        pool.open(wait=True, timeout=30)
    except psycopg.Error as exc:
        raise IndexFormatError(f"{location.display()}: cannot connect ({exc})") from exc
    except Exception as exc:  # the pool's own timeout
        raise IndexFormatError(f"{location.display()}: cannot connect ({exc})") from exc
    return pool


class _Snapshot:
    """The connection one search's statements share, taken from the pool (and its
    transaction begun) at the first statement, so a search that issues none costs none."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool
        self.conn: psycopg.Connection[Any] | None = None


# the snapshot open in this thread (or task), if any
_OPEN: ContextVar[_Snapshot | None] = ContextVar("twokeys_postgres_snapshot", default=None)


class Connections:
    """Where a reader's statements run: on the connection of the snapshot open in this
    thread, else on any of the pool's (each statement then sees the latest commit)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        held = _OPEN.get()
        if held is None or held.pool is not self.pool:
            with self.pool.connection() as conn:
                yield conn
            return
        if held.conn is None:
            conn = self.pool.getconn()
            try:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            except BaseException:
                self.pool.putconn(conn)
                raise
            held.conn = conn
        yield held.conn

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every statement inside sees the same committed state (nested: the outer one's)."""
        held = _OPEN.get()
        if held is not None and held.pool is self.pool:
            yield
            return
        snap = _Snapshot(self.pool)
        token = _OPEN.set(snap)
        done = False
        try:
            yield
            done = True
        finally:
            _OPEN.reset(token)
            if snap.conn is not None:
                try:
                    if done:
                        snap.conn.execute("COMMIT")
                    else:  # the search failed: end the transaction, keep its error
                        with contextlib.suppress(psycopg.Error):
                            snap.conn.execute("ROLLBACK")
                finally:
                    self.pool.putconn(snap.conn)


# BM25 of the query terms (Lucene's formula, as twokeys.lexical.bm25), one snapshot. Per
# term, idf and the length normalisation's two constants are computed once (c0 + c1 * dl
# is k1 * (1 - b + b * dl / avgdl)), so each posting costs one division.
_BM25 = """
WITH s AS (
    SELECT n_chunks::float8 AS n,
           CASE WHEN n_chunks > 0 AND total_length > 0
                THEN total_length::float8 / n_chunks ELSE 1.0 END AS avgdl
    FROM {s}.stats
),
w AS (
    SELECT t.term, q.qtf * ln(1.0 + (s.n - t.df + 0.5) / (t.df + 0.5::float8)) AS qidf,
           %(k1)s * (1.0 - %(b)s) AS c0, %(k1)s * %(b)s / s.avgdl AS c1
    FROM unnest(%(terms)s::text[], %(qtf)s::float8[]) AS q (term, qtf)
    JOIN {s}.terms t ON t.term = q.term
    CROSS JOIN s
)
SELECT p.row_id, sum(w.qidf * p.tf / (p.tf + w.c0 + w.c1 * p.dl)) AS score
FROM w JOIN {s}.postings p ON p.term = w.term {where}
GROUP BY p.row_id
ORDER BY score DESC, p.row_id
LIMIT %(k)s
"""

# Each matched term's contribution to each of several chunks' scores.
_EXPLAIN_MANY = """
WITH q AS (SELECT term, qtf FROM unnest(%(terms)s::text[], %(qtf)s::float8[]) AS q (term, qtf)),
s AS (
    SELECT n_chunks::float8 AS n,
           CASE WHEN n_chunks > 0 AND total_length > 0
                THEN total_length::float8 / n_chunks ELSE 1.0 END AS avgdl
    FROM {s}.stats
)
SELECT p.row_id, q.term, q.qtf * ln(1.0 + (s.n - t.df + 0.5) / (t.df + 0.5::float8))
       * p.tf / (p.tf + %(k1)s * (1.0 - %(b)s + %(b)s * p.dl / s.avgdl))
FROM q JOIN {s}.terms t ON t.term = q.term
JOIN {s}.postings p ON p.term = q.term AND p.row_id = ANY(%(rows)s::bigint[])
CROSS JOIN s
"""


def _query_counts(terms: Sequence[str]) -> tuple[list[str], list[float]]:
    counts = Counter(terms)
    ordered = sorted(counts)
    return ordered, [float(counts[t]) for t in ordered]


def _explained(names: Sequence[str], parts: Sequence[float]) -> tuple[tuple[str, float], ...]:
    """(term, share) of the matched terms, as float32, largest first (as the embedded)."""
    out = [(str(t), float(np.float32(w))) for t, w in zip(names, parts, strict=True) if w > 0]
    return tuple(sorted(out, key=lambda tw: (-tw[1], tw[0])))


def _rows(allowed: RowMask) -> list[int]:
    """The rows a mask allows, as a list for ``= ANY(...)``."""
    return [int(r) for r in np.flatnonzero(allowed)]


def _ranked(rows: Sequence[tuple[int, float]], k: int) -> list[ScoredChunk]:
    """Scores as float32 (the embedded engine's precision), ordered by (-score, row)."""
    scored = sorted(
        ((int(r), float(np.float32(s))) for r, s in rows), key=lambda rs: (-rs[1], rs[0])
    )
    return [ScoredChunk(row=r, score=s, rank=i + 1) for i, (r, s) in enumerate(scored[:k])]


class PgLexicalIndex(LexicalIndex):
    """BM25 in SQL over ``postings``, ``terms`` and ``stats`` (see the module docstring)."""

    def __init__(self, connections: Connections, schema: str, params: BM25Params) -> None:
        self._db = connections
        self._s = qualified(schema)
        self._params = params

    def _args(self, terms: Sequence[str]) -> dict[str, Any]:
        ordered, qtf = _query_counts(terms)
        return {"terms": ordered, "qtf": qtf, "k1": self._params.k1, "b": self._params.b}

    def search(
        self, terms: Sequence[str], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        if not terms:
            return []
        # a few rows beyond k: float32 rounding may reorder scores within 1 ulp of the cut
        args = {**self._args(terms), "k": k + 8}
        where = ""
        if allowed is not None:  # a filter, pushed into the SQL: only these rows rank
            args["rows"] = _rows(allowed)
            if not args["rows"]:
                return []
            where = "WHERE p.row_id = ANY(%(rows)s::bigint[])"
        with self._db.connection() as conn:
            rows = conn.execute(_BM25.format(s=self._s, where=where), args).fetchall()
        return _ranked([(r, s) for r, s in rows if s > 0], k)

    def explain(self, terms: Sequence[str], row: int) -> tuple[tuple[str, float], ...]:
        return self.explain_many(terms, [row])[0]

    def explain_many(
        self, terms: Sequence[str], rows: Sequence[int]
    ) -> list[tuple[tuple[str, float], ...]]:
        """:meth:`explain` for each row, in one statement."""
        if not terms or not rows:
            return [() for _ in rows]
        args = {**self._args(terms), "rows": [int(r) for r in rows]}
        with self._db.connection() as conn:
            found = conn.execute(_EXPLAIN_MANY.format(s=self._s), args).fetchall()
        by_row: dict[int, list[tuple[str, float]]] = {}
        for row, term, weight in found:
            by_row.setdefault(int(row), []).append((str(term), float(weight)))
        return [
            _explained([t for t, _ in by_row.get(r, [])], [w for _, w in by_row.get(r, [])])
            for r in rows
        ]

    def has_term(self, term: str) -> bool:
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT 1 FROM {self._s}.terms WHERE term = %s", (term,))
            return row.fetchone() is not None

    def idf(self, terms: Sequence[str]) -> list[float]:
        if not terms:
            return []
        dfs, n = self._frequencies(terms)
        return [float(np.log1p((n - d + 0.5) / (d + 0.5))) for d in dfs]

    def document_frequencies(self, terms: Sequence[str]) -> tuple[list[int], int] | None:
        return self._frequencies(terms)

    def _frequencies(self, terms: Sequence[str]) -> tuple[list[int], int]:
        """Each term's chunk count and the number of chunks, in one statement."""
        if not terms:
            with self._db.connection() as conn:
                row = conn.execute(f"SELECT n_chunks FROM {self._s}.stats").fetchone()
            return [], int(row[0]) if row else 0
        with self._db.connection() as conn:  # N and every df in one statement
            found = conn.execute(
                f"SELECT (SELECT n_chunks FROM {self._s}.stats), q.term, coalesce(t.df, 0) "
                f"FROM unnest(%s::text[]) AS q (term) LEFT JOIN {self._s}.terms t USING (term)",
                (list(terms),),
            ).fetchall()
        n = int(found[0][0]) if found else 0
        df: dict[str, int] = {str(t): int(d) for _, t, d in found}
        return [df[t] for t in terms], n


class PgVectorIndex(VectorIndex):
    """Cosine search in pgvector: HNSW or exact, as the index's settings choose."""

    def __init__(
        self, connections: Connections, schema: str, *, kind: str, ef_search: int, column_type: str
    ) -> None:
        self._db = connections
        self._s = qualified(schema)
        self._kind = kind
        self._ef_search = ef_search
        self._type = column_type  # vector or halfvec
        self._mean: tuple[int, npt.NDArray[np.float32]] | None = None  # (generation, mean)

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        q = np.asarray(query, np.float32)
        where, params = "", []
        if allowed is not None:  # a filter, pushed into the SQL (HNSW scans on until k)
            params = [_rows(allowed)]
            if not params[0]:
                return []
            where = "AND row_id = ANY(%s::bigint[])"
        distance = f"embedding <#> %s::{self._type}"  # the HNSW index's expression
        # the score in float32, whatever the storage (a halfvec query would be rounded)
        head = f"SELECT row_id, -(embedding::vector <#> %s::vector) AS score FROM {self._s}.chunks "
        head += f"WHERE embedding IS NOT NULL {where} "
        with self._db.connection() as conn:
            if self._kind == "hnsw":  # the operator expression itself: the HNSW index
                # a few beyond k, so that ties at the cut are broken by row, as exactly
                ef = str(min(1000, max(self._ef_search, k + 8)))
                with conn.pipeline():  # the settings and the search in one round trip
                    conn.execute(
                        "SELECT set_config('hnsw.ef_search', %s, false), "
                        "set_config('hnsw.iterative_scan', 'relaxed_order', false)",
                        (ef,),
                    )
                    cur = conn.execute(
                        head + f"ORDER BY {distance} LIMIT %s", (q, *params, q, k + 8)
                    )
            else:  # ordered by the score, which no index matches: an exact scan
                cur = conn.execute(head + "ORDER BY score DESC, row_id LIMIT %s", (q, *params, k))
            rows = cur.fetchall()
        return _ranked(rows, k)

    def similarity(self, query: npt.NDArray[np.float32], row: int) -> float:
        q = np.asarray(query, np.float32)
        with self._db.connection() as conn:
            found = conn.execute(
                f"SELECT -(embedding::vector <#> %s::vector) FROM {self._s}.chunks "
                "WHERE row_id = %s",
                (q, row),
            ).fetchone()
        return float(found[0]) if found and found[0] is not None else 0.0

    def similarities(
        self, query: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        q = np.asarray(query, np.float32)
        wanted = [int(r) for r in rows]
        with self._db.connection() as conn:
            found = dict(
                conn.execute(
                    f"SELECT row_id, -(embedding::vector <#> %s::vector) FROM {self._s}.chunks "
                    "WHERE row_id = ANY(%s)",
                    (q, wanted),
                ).fetchall()
            )
        return np.array(
            [float(found[r]) if found.get(r) is not None else 0.0 for r in wanted], np.float64
        )

    def mean_similarity(self, query: npt.NDArray[np.float32]) -> float:
        """The query times the mean chunk vector, kept until a write changes the
        index's generation (as the embedded index keeps it while it is open)."""
        q = np.asarray(query, np.float32)
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT generation FROM {self._s}.stats").fetchone()
            generation = int(row[0]) if row else 0
            kept = self._mean
            if kept is None or kept[0] != generation:
                found = conn.execute(
                    f"SELECT avg(embedding::vector)::real[] FROM {self._s}.chunks "
                    "WHERE embedding IS NOT NULL"
                ).fetchone()
                mean = (
                    np.asarray(found[0], np.float32)
                    if found and found[0] is not None
                    else np.zeros(len(q), np.float32)
                )
                kept = self._mean = (generation, mean)
        return float(kept[1] @ q)


def manifest_from(
    spec: dict[str, Any], stats: dict[str, Any], where: str, size: int = 0
) -> Manifest:
    """The manifest the engine reads: the settings row plus live counts; ``files`` holds
    the tables' size in the database (with their indexes and TOAST)."""
    data = {
        **spec,
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "generation": str(stats["generation"]),
        "created_at": str(spec.get("created_at", "")),
        "counts": {
            "documents": int(stats["n_documents"]),
            "chunks": int(stats["n_chunks"]),
            "terms": int(stats["n_terms"]),
            "postings": int(stats["n_postings"]),
        },
        "files": {"postgres tables": int(size)},
    }
    return Manifest.from_dict(data, where)


def read_spec(conn: psycopg.Connection[Any], schema: str) -> dict[str, Any] | None:
    row = conn.execute(f"SELECT spec FROM {qualified(schema)}.settings").fetchone()
    if row is None:
        return None
    spec = row[0]
    return dict(spec) if isinstance(spec, dict) else dict(json.loads(spec))


def read_stats(conn: psycopg.Connection[Any], schema: str) -> dict[str, Any]:
    cur = conn.execute(
        f"SELECT n_documents, n_chunks, total_length, n_terms, n_postings, generation "
        f"FROM {qualified(schema)}.stats"
    )
    names = [d.name for d in cur.description or ()]
    row = cur.fetchone()
    assert row is not None  # the migration inserts the one row
    return dict(zip(names, row, strict=True))


_CHUNK_COLUMNS = "row_id, doc_id, position, text, start_offset, end_offset, heading_path, locator"


def _chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(
        doc_id=row[1],
        position=int(row[2]),
        text=row[3],
        start=int(row[4]),
        end=int(row[5]),
        heading_path=tuple(row[6]),
        locator=Locator.from_dict(row[7]) if row[7] else None,
    )


class PostgresIndex(IndexReader):
    """An index in a PostgreSQL schema (``postgresql://...[#schema]``), read-only."""

    rows_change = True  # other processes write to it while it is open

    def __init__(self, location: str | PostgresLocation, *, pool_size: int = 4) -> None:
        self.location = (
            location if isinstance(location, PostgresLocation) else PostgresLocation.parse(location)
        )
        self.path = self.location.display()
        self._pool = connect_pool(self.location, pool_size)
        schema = self.location.schema
        try:
            with self._pool.connection() as conn:
                check_readable(conn, schema, self.path)
                spec = read_spec(conn, schema)
                stats = read_stats(conn, schema)
                size_row = conn.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind = 'r'",
                    (schema,),
                ).fetchone()
        except BaseException:
            self._pool.close()
            raise
        if spec is None:
            self._pool.close()
            raise IndexFormatError(f"{self.path}: the index has no settings yet (never indexed)")
        self.manifest = manifest_from(spec, stats, self.path, int(size_row[0]) if size_row else 0)
        self._db = Connections(self._pool)
        self._lexical = PgLexicalIndex(self._db, schema, self.manifest.bm25)
        self._vectors: PgVectorIndex | None = None
        encoder = self.manifest.encoder
        if encoder is not None:
            n = int(self.manifest.counts.get("chunks", 0))
            self._vectors = PgVectorIndex(
                self._db,
                schema,
                kind=self.manifest.vector_index.choose(n),
                ef_search=self.manifest.vector_index.hnsw.ef_search,
                column_type="halfvec" if encoder.dtype == "float16" else "vector",
            )
        self._s = qualified(schema)
        self._masks: dict[tuple[Filter, ...], tuple[int, RowMask]] = {}
        self._lock = threading.Lock()

    @property
    def lexical(self) -> LexicalIndex:
        return self._lexical

    @property
    def vectors(self) -> VectorIndex | None:
        return self._vectors

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection: the open snapshot's, else one of the pool's."""
        with self._db.connection() as conn:
            yield conn

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """One read-only ``REPEATABLE READ`` transaction for every statement inside, on
        one connection (held from the first statement to the end of the block)."""
        return self._db.snapshot()

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        return [chunk for chunk, _, _ in self.chunks_with_source(rows)]

    def chunks_with_source(self, rows: Sequence[int]) -> list[tuple[Chunk, str, str]]:
        if not rows:
            return []
        with self._db.connection() as conn:
            found = conn.execute(
                f"SELECT c.row_id, c.doc_id, c.position, c.text, c.start_offset, c.end_offset, "
                f"c.heading_path, c.locator, d.title, d.path FROM {self._s}.chunks c "
                f"JOIN {self._s}.documents d ON d.id = c.doc_id WHERE c.row_id = ANY(%s)",
                (list(rows),),
            ).fetchall()
        by_row = {int(r[0]): (_chunk(r), str(r[8]), str(r[9])) for r in found}
        missing = [r for r in rows if r not in by_row]
        if missing:
            raise IndexFormatError(f"{self.path}: no chunk with row {missing[0]} (deleted since?)")
        return [by_row[r] for r in rows]

    def version(self) -> str:
        """The stats row's generation, bumped by every committed write (any process)."""
        with self._pool.connection() as conn:
            row = conn.execute(f"SELECT generation FROM {self._s}.stats").fetchone()
        return str(row[0]) if row else ""

    def allowed_rows(self, filters: Sequence[Filter]) -> RowMask:
        """The rows of the documents ``filters`` allow, as of the last committed write.

        Documents are matched by the filters themselves (the embedded engine's rules, to
        the letter), and the mask is kept until a write changes the index's generation.
        """
        key = tuple(filters)
        with self._db.connection() as conn:
            row = conn.execute(f"SELECT generation FROM {self._s}.stats").fetchone()
        generation = int(row[0]) if row else 0
        kept = self._masks.get(key)
        if kept is not None and kept[0] == generation:
            return kept[1]
        per_doc = [f for f in filters if not f.on_chunks]
        per_chunk = [f for f in filters if f.on_chunks]
        docs = {d.id: d for d in self.all_documents() if all(f.matches(d) for f in per_doc)}
        with self._db.connection() as conn:
            found = conn.execute(
                f"SELECT row_id, doc_id, locator FROM {self._s}.chunks WHERE doc_id = ANY(%s)",
                (list(docs),),
            ).fetchall()
            top = conn.execute(f"SELECT coalesce(max(row_id), -1) FROM {self._s}.chunks")
            size = int(top.fetchone()[0]) + 1  # type: ignore[index]
        mask = np.zeros(size, np.bool_)
        for row, doc_id, stored in found:
            locator = Locator.from_dict(stored) if stored else None
            mask[int(row)] = all(chunk_matches(f, locator, docs[doc_id]) for f in per_chunk)
        with self._lock:
            if len(self._masks) >= 64:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = (generation, mask)
        return mask

    def row_locators(self) -> Mapping[int, Locator]:
        with self._db.connection() as conn:
            found = conn.execute(
                f"SELECT row_id, locator FROM {self._s}.chunks WHERE locator IS NOT NULL"
            ).fetchall()
        return {int(row): Locator.from_dict(stored) for row, stored in found}

    def info(self) -> dict[str, Any]:
        data = super().info()
        data["path"] = self.path
        data["size_bytes"] = sum(self.manifest.files.values())
        n = int(self.manifest.counts.get("chunks", 0))
        options = self.manifest.vector_index
        if self.manifest.encoder is None:
            data["vector_search"] = {"used": "none", "reason": "no dense vectors"}
        else:
            used = options.choose(n)
            how = "pgvector HNSW index" if used == "hnsw" else "pgvector exact scan"
            data["vector_search"] = {"used": used, "reason": f"{options.reason(n)}; {how}"}
            if used == "hnsw":
                data["vector_search"]["hnsw"] = options.hnsw.to_dict()
        return data

    def term_matrix(self) -> TermMatrix:
        """The term-frequency matrix the classic modes read (tfidf, bm25+, bm25l, boolean,
        lsi), built from the postings as they are now and kept by those modes while the
        index is open. Its columns are chunk rows, so it needs rows 0 .. n-1: an index
        whose documents were replaced or deleted has gaps, and is refused."""
        with self._db.connection() as conn:
            n, top = conn.execute(
                f"SELECT count(*), coalesce(max(row_id), -1) FROM {self._s}.chunks"
            ).fetchone() or (0, -1)
            if int(top) + 1 != int(n):
                raise ConfigError(
                    f"{self.path}: the classic modes need chunk rows 0..{int(n) - 1}, and "
                    "documents replaced or deleted left gaps; use bm25, dense or hybrid, or "
                    "re-index into a new schema"
                )
            lengths = conn.execute(
                f"SELECT length FROM {self._s}.chunks ORDER BY row_id"
            ).fetchall()
            postings = conn.execute(
                f'SELECT term, row_id, tf FROM {self._s}.postings ORDER BY term COLLATE "C", row_id'
            ).fetchall()
        counts = Counter(term for term, _, _ in postings)
        vocabulary = list(counts)  # in the postings' order: code-point order, as sorted()
        bounds = np.zeros(len(vocabulary) + 1, np.int64)
        np.cumsum([counts[t] for t in vocabulary], out=bounds[1:])
        return TermMatrix(
            vocabulary=vocabulary,
            indptr=bounds,
            indices=np.fromiter((r for _, r, _ in postings), np.int32, len(postings)),
            tf=np.fromiter((tf for _, _, tf in postings), np.float32, len(postings)),
            lengths=np.fromiter((ln for (ln,) in lengths), np.float32, len(lengths)),
        )

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by stable id (``<document id>#<position>``, the ``chunk_id`` column);
        ids the index no longer has are absent."""
        if not chunk_ids:
            return {}
        with self._db.connection() as conn:
            found = conn.execute(
                f"SELECT {_CHUNK_COLUMNS}, chunk_id FROM {self._s}.chunks WHERE chunk_id = ANY(%s)",
                (list(chunk_ids),),
            ).fetchall()
        return {str(r[8]): _chunk(r) for r in found}

    def documents(self, ids: Sequence[str]) -> dict[str, DocumentInfo]:
        if not ids:
            return {}
        return {d.id: d for d in self._documents("WHERE d.id = ANY(%s)", (list(ids),))}

    def all_documents(self) -> list[DocumentInfo]:
        return self._documents("", ())

    def _documents(self, where: str, params: Sequence[Any]) -> list[DocumentInfo]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT d.id, d.title, d.path, d.kind, d.mtime, d.sha256, d.n_chunks, d.metadata, "
                f"(SELECT min(c.row_id) FROM {self._s}.chunks c WHERE c.doc_id = d.id) "
                f"FROM {self._s}.documents d {where} ORDER BY d.id",
                params,
            ).fetchall()
        return [
            DocumentInfo(
                id=r[0],
                title=r[1],
                path=r[2],
                kind=r[3],
                mtime=float(r[4]),
                sha256=r[5],
                first_row=int(r[8]) if r[8] is not None else -1,
                n_chunks=int(r[6]),
                metadata=dict(r[7] or {}),
            )
            for r in rows
        ]

    def close(self) -> None:
        self._pool.close()
