"""Vector search: twokeys' exact search against ANN peers (hnswlib, faiss, usearch).

Data: the 5,183 SciFact documents embedded once with twokeys' default encoder (cached
under ``benchmarks/.tmp``); from them, a base of ``--n`` vectors is made by mixing two
random documents (weight ``a ~ U(0.3, 0.7)``) plus Gaussian noise (sigma 0.01 a
dimension), then L2-normalised: real embedding geometry, no repeated rows. Queries are
the 300 real SciFact test queries. Ground truth is exact float32 search.

Measured, one query at a time on one thread, interleaved per query:

- on ``--n`` vectors: recall@10 against exact, latency and build time of twokeys' own
  HNSW index (:class:`twokeys.dense.ann.HnswVectorIndex`, built on one thread as
  ``twokeys index`` builds it, then saved and reopened memory-mapped) next to
  hnswlib, faiss HNSW and usearch (built with ``--threads``), and exact search;
- by size (``--sizes``, default 10k, 100k, 1M): exact search (float32, float16 as
  twokeys scores it now, and numpy's float16 product as it did before) against twokeys'
  HNSW (built up to ``--hnsw-max``; above it, build time and latency are extrapolated
  from the largest build and marked so), to find the size above which an ANN index pays;
- the quality cost of quantised storage (float16, int8) as recall@10 on the synthetic
  base and nDCG@10 on the real SciFact documents and qrels.

Run: ``python -m benchmarks vectors`` (``--n 5000 --sizes 2000 5000`` for a smoke test).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.common import DATA, WORK, load_corpus, log, percentiles, save_result, version

K = 10
Vectors = npt.NDArray[np.float32]
Search = Callable[[Vectors], npt.NDArray[np.int64]]  # one query -> top-K rows


def scifact_embeddings(
    collection: Path, doc_words: int | None = None
) -> tuple[list[str], Vectors, list[str], Vectors]:
    """Document and test-query embeddings with the default encoder (cached).

    ``doc_words`` embeds only each document's first words (title + start of abstract):
    a cheaper stand-in on a slow machine, recorded in the results.
    """
    from twokeys.dense.onnx_minilm import OnnxMiniLM
    from twokeys.evaluation.beir import load_collection

    corpus = load_corpus(collection / "corpus.jsonl")
    coll = load_collection(collection)
    qids = sorted(coll.queries)
    encoder = OnnxMiniLM()
    suffix = f"-{doc_words}w" if doc_words else ""
    cache = WORK / f"scifact-docs-{encoder.fingerprint()[7:19]}{suffix}.npy"
    if cache.exists():
        docs = np.load(cache)
    else:
        log(f"embedding {len(corpus.ids)} SciFact documents once (cached in {cache})")
        WORK.mkdir(parents=True, exist_ok=True)
        texts = corpus.texts
        if doc_words:
            texts = [" ".join(t.split()[:doc_words]) for t in texts]
        docs = encoder.encode(texts, "document")
        np.save(cache, docs)
    queries = encoder.encode([coll.queries[q] for q in qids], "query")
    return corpus.ids, docs, qids, queries


def synthetic_base(docs: Vectors, n: int, seed: int = 0, block: int = 50_000) -> Vectors:
    """Generated a block at a time (each block seeded by its number), so memory stays
    near the output's and a smaller base is a prefix of a larger one."""
    base = np.empty((n, docs.shape[1]), np.float32)
    for number, start in enumerate(range(0, n, block)):
        rng = np.random.default_rng([seed, number])
        m = min(block, n - start)
        i = rng.integers(0, len(docs), m)
        j = rng.integers(0, len(docs), m)
        a = rng.uniform(0.3, 0.7, (m, 1)).astype(np.float32)
        part = a * docs[i] + (1 - a) * docs[j]
        part += rng.normal(0, 0.01, part.shape).astype(np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        base[start : start + m] = part
    return base


def exact_search(matrix: npt.NDArray[np.floating]) -> Search:
    from twokeys.dense.exact import ExactVectorIndex

    index = ExactVectorIndex(matrix)
    return lambda q: np.array([h.row for h in index.search(q, K)], np.int64)


def numpy_float16_search(matrix: npt.NDArray[np.float16]) -> Search:
    """twokeys' exact float16 search before the fix: numpy's float16 matmul."""
    from twokeys.topk import top_k

    def search(q: Vectors) -> npt.NDArray[np.int64]:
        rows, _ = top_k((matrix @ q.astype(np.float16)).astype(np.float32), K)
        return rows

    return search


def build_twokeys_hnsw(base: Vectors) -> dict[str, Any]:
    """twokeys' HNSW index with its default parameters, built as ``twokeys index`` does
    (one thread), then saved and reopened memory-mapped (what opening an index does)."""
    from twokeys.dense.ann import HnswVectorIndex
    from twokeys.dense.selection import HnswParams

    params = HnswParams()
    start = time.perf_counter()
    built = HnswVectorIndex.build(base, params)
    build_s = time.perf_counter() - start
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"hnsw-{len(base)}.faiss"
    built.save(path)
    header = built.header()
    del built
    start = time.perf_counter()
    HnswVectorIndex.load(path, header, base, params)
    load_s = time.perf_counter() - start
    return {
        "path": path,
        "header": header,
        "params": params,
        "build_s": build_s,
        "load_s": load_s,
        "bytes": path.stat().st_size,
    }


def twokeys_hnsw_search(graph: dict[str, Any], base: Vectors, ef: int) -> Search:
    from dataclasses import replace

    from twokeys.dense.ann import HnswVectorIndex

    params = replace(graph["params"], ef_search=ef)
    index = HnswVectorIndex.load(graph["path"], graph["header"], base, params)
    return lambda q: np.array([h.row for h in index.search(q, K)], np.int64)


def int8_quantise(matrix: Vectors) -> tuple[npt.NDArray[np.int8], Vectors]:
    """Symmetric per-dimension int8 scalar quantisation (scale = max |x| / 127)."""
    scale = np.maximum(np.abs(matrix).max(axis=0), 1e-12) / 127.0
    return np.round(matrix / scale).astype(np.int8), scale.astype(np.float32)


def int8_search(matrix: Vectors) -> Search:
    from twokeys.topk import top_k

    codes, scale = int8_quantise(matrix)
    codes32 = codes.astype(np.float32)  # a real kernel would use int8 dot products

    def search(q: Vectors) -> npt.NDArray[np.int64]:
        rows, _ = top_k(codes32 @ (q * scale), K)
        return rows

    return search


def recall(found: Sequence[npt.NDArray[np.int64]], truth: Sequence[npt.NDArray[np.int64]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth, strict=True)]))


def time_queries(systems: dict[str, Search], queries: Vectors) -> dict[str, Any]:
    """Run every query through every system, interleaved per query."""
    results: dict[str, list[npt.NDArray[np.int64]]] = {name: [] for name in systems}
    lat: dict[str, list[float]] = {name: [] for name in systems}
    for fn in systems.values():
        fn(queries[0])
    for q in queries:
        for name, fn in systems.items():
            start = time.perf_counter()
            results[name].append(fn(q))
            lat[name].append(time.perf_counter() - start)
    return {"results": results, "latency": lat}


def build_ann(base: Vectors, threads: int, m: int, ef_construction: int) -> dict[str, Any]:
    """Build each available ANN peer; returns name -> (search, build seconds, note)."""
    built: dict[str, Any] = {}
    dim = base.shape[1]
    try:
        import hnswlib

        start = time.perf_counter()
        index = hnswlib.Index(space="ip", dim=dim)
        index.init_index(max_elements=len(base), M=m, ef_construction=ef_construction)
        index.set_num_threads(threads)
        index.add_items(base)
        seconds = time.perf_counter() - start
        index.set_num_threads(1)
        for ef in (32, 64, 128):

            def hnsw_search(q: Vectors, ef: int = ef) -> npt.NDArray[np.int64]:
                index.set_ef(ef)
                return index.knn_query(q, k=K)[0][0].astype(np.int64)

            built[f"hnswlib M={m} ef={ef}"] = (hnsw_search, seconds)
    except ImportError as exc:
        built["hnswlib"] = (None, f"not installed: {exc}")
    try:
        import faiss

        faiss.omp_set_num_threads(threads)
        start = time.perf_counter()
        findex = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
        findex.hnsw.efConstruction = ef_construction
        findex.add(base)
        seconds = time.perf_counter() - start
        faiss.omp_set_num_threads(1)
        for ef in (32, 64, 128):

            def faiss_search(q: Vectors, ef: int = ef) -> npt.NDArray[np.int64]:
                findex.hnsw.efSearch = ef
                return findex.search(q[None, :], K)[1][0].astype(np.int64)

            built[f"faiss HNSW M={m} ef={ef}"] = (faiss_search, seconds)
        flat = faiss.IndexFlatIP(dim)
        flat.add(base)
        built["faiss exact (IndexFlatIP)"] = (
            lambda q: flat.search(q[None, :], K)[1][0].astype(np.int64),
            0.0,
        )
    except ImportError as exc:
        built["faiss"] = (None, f"not installed: {exc}")
    try:
        from usearch.index import Index as UIndex

        for dtype in ("f32", "i8"):
            start = time.perf_counter()
            uindex = UIndex(
                ndim=dim,
                metric="cos",
                dtype=dtype,
                connectivity=m,
                expansion_add=ef_construction,
                expansion_search=64,
            )
            uindex.add(np.arange(len(base)), base, threads=threads)
            seconds = time.perf_counter() - start

            def usearch_search(q: Vectors, ix: Any = uindex) -> npt.NDArray[np.int64]:
                return np.asarray(ix.search(q, K, threads=1).keys, np.int64)

            built[f"usearch {dtype} M={m} ef=64"] = (usearch_search, seconds)
    except ImportError as exc:
        built["usearch"] = (None, f"not installed: {exc}")
    return built


def scifact_quality(
    collection: Path, ids: list[str], docs: Vectors, qids: list[str], queries: Vectors
) -> dict[str, dict[str, float]]:
    """nDCG@10 of exact dense search on real SciFact with each storage type."""
    from twokeys.evaluation.beir import load_collection
    from twokeys.evaluation.runs import evaluate

    qrels = load_collection(collection).qrels
    systems = {
        "float32": exact_search(docs),
        "float16": exact_search(docs.astype(np.float16)),
        "int8 (per-dim scale)": int8_search(docs),
    }
    out = {}
    for name, search in systems.items():
        run = {}
        for qid, q in zip(qids, queries, strict=True):
            run[qid] = {ids[r]: float(K - i) for i, r in enumerate(search(q))}
        out[name] = evaluate(qrels, run, ["nDCG@10"])
    return out


def exact_vs_ann_by_size(
    base: Vectors,
    queries: Vectors,
    sizes: Sequence[int],
    graphs: dict[int, dict[str, Any]],
    before_max: int,
) -> dict[int, dict[str, Any]]:
    """Exact (float32, float16 now and before) and twokeys HNSW latency at each size."""
    out: dict[int, dict[str, Any]] = {}
    for size in sizes:
        log(f"exact vs HNSW at {size:,} vectors")
        part = base[:size]
        half = part.astype(np.float16)
        systems: dict[str, Search] = {
            "exact float32": exact_search(part),
            "exact float16": exact_search(half),
        }
        if size in graphs:
            systems["twokeys HNSW"] = twokeys_hnsw_search(
                graphs[size], part, graphs[size]["params"].ef_search
            )
        timed = time_queries(systems, queries)
        truth = timed["results"]["exact float32"]
        row: dict[str, Any] = {
            name: {
                "recall@10": recall(timed["results"][name], truth),
                **{k: 1000 * v for k, v in percentiles(t).items()},
            }
            for name, t in timed["latency"].items()
        }
        if size in graphs:
            g = graphs[size]
            row["twokeys HNSW"].update(
                build_s=g["build_s"], load_s=g["load_s"], graph_mb=g["bytes"] / 1e6
            )
        if size <= before_max:  # slow: a few queries suffice
            before = time_queries({"numpy float16": numpy_float16_search(half)}, queries[:20])
            row["numpy float16 (before)"] = {
                k: 1000 * v for k, v in percentiles(before["latency"]["numpy float16"]).items()
            }
        out[size] = row
        del half
    return out


def extrapolate_hnsw(rows: dict[int, dict[str, Any]], size: int) -> dict[str, float] | None:
    """HNSW cost at ``size`` from the largest measured build: build time grows as
    n log n, query latency as log n, graph size linearly (Malkov & Yashunin 2018)."""
    measured = [s for s, r in rows.items() if "build_s" in r.get("twokeys HNSW", {})]
    if not measured:
        return None
    ref = max(measured)
    hnsw = rows[ref]["twokeys HNSW"]
    grow = np.log(size) / np.log(ref)
    return {
        "from_size": ref,
        "build_s": hnsw["build_s"] * size / ref * grow,
        "p50": hnsw["p50"] * grow,
        "graph_mb": hnsw["graph_mb"] * size / ref,
    }


def run(
    collection: Path,
    n: int,
    sizes: Sequence[int],
    hnsw_max: int,
    threads: int,
    m: int,
    efc: int,
    doc_words: int | None,
) -> Any:
    ids, docs, qids, queries = scifact_embeddings(collection, doc_words)
    quality = scifact_quality(collection, ids, docs, qids, queries)
    biggest = max(n, *sizes)
    log(f"synthetic base of {biggest:,} vectors from {len(docs)} real embeddings")
    full = synthetic_base(docs, biggest)
    base = full[:n].copy()

    graphs: dict[int, dict[str, Any]] = {}
    for size in sorted({n, *(s for s in sizes if s <= hnsw_max)}):
        log(f"building twokeys HNSW on {size:,} vectors (one thread)")
        graphs[size] = build_twokeys_hnsw(full[:size])
        log(f"  {graphs[size]['build_s']:.1f} s")
    by_size = exact_vs_ann_by_size(full, queries[:100], sizes, graphs, before_max=100_000)
    estimates = {
        size: est
        for size in sizes
        if size not in graphs and (est := extrapolate_hnsw(by_size, size)) is not None
    }
    del full

    log(f"building ANN peers on {n:,} vectors ({threads} build threads)")
    built = build_ann(base, threads, m, efc)
    systems: dict[str, Search] = {
        "twokeys exact float32": exact_search(base),
        "twokeys exact float16": exact_search(base.astype(np.float16)),
        "exact int8 (per-dim scale)": int8_search(base),
    }
    build_s: dict[str, float | None] = {}
    graph = graphs[n]
    for ef in (32, 64, 128):
        name = f"twokeys HNSW M={graph['params'].m} ef={ef}"
        systems[name] = twokeys_hnsw_search(graph, base, ef)
        build_s[name] = graph["build_s"]
    notes = {}
    for name, (search, info) in built.items():
        if search is None:
            notes[name] = info
        else:
            systems[name] = search
            build_s[name] = info
    log(f"querying {len(queries)} queries through {len(systems)} systems")
    timed = time_queries(systems, queries)
    truth = timed["results"]["twokeys exact float32"]
    table = {
        name: {
            "recall@10": recall(timed["results"][name], truth),
            **{k: 1000 * v for k, v in percentiles(timed["latency"][name]).items()},
            "build_s": build_s.get(name),
        }
        for name in systems
    }
    return {
        "n": n,
        "doc_words": doc_words,
        "dim": int(base.shape[1]),
        "queries": len(queries),
        "build_threads": threads,
        "hnsw": {"M": m, "ef_construction": efc},
        "twokeys_hnsw": {
            **graph["params"].to_dict(),
            "build_threads": 1,
            "load_s": graph["load_s"],
            "graph_mb": graph["bytes"] / 1e6,
        },
        "versions": {p: version(p) for p in ("numpy", "hnswlib", "faiss-cpu", "usearch")},
        "by_size_queries": min(100, len(queries)),
        "by_size_ms": by_size,
        "hnsw_estimates": estimates,
        "systems": table,
        "unavailable": notes,
        "scifact_storage_quality": quality,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--hnsw-max", type=int, default=100_000, help="build twokeys HNSW up to this size"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=100)
    parser.add_argument(
        "--doc-words",
        type=int,
        default=32,
        help="embed only each document's first N words (0: whole documents, about an "
        "hour on two shared cores)",
    )
    args = parser.parse_args(argv)
    result = run(
        args.collection,
        args.n,
        args.sizes,
        args.hnsw_max,
        args.threads,
        args.m,
        args.ef_construction,
        args.doc_words or None,
    )
    log(f"wrote {save_result('vectors', result)}")


if __name__ == "__main__":
    main()
