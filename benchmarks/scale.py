"""Scale: cost growth of a twokeys index from 10k to 1M chunks, with bm25s alongside.

Corpus: synthetic documents made by sampling 2-5 sentences at random from the pool of
every sentence of the shared collections (SciFact, Cranfield, CISI, Medline, ADI, CACM)
and joining them, so documents read like the collections but none repeats; each fits
in one chunk. ``python -m benchmarks.scale make --size N`` writes it as BEIR JSONL.

Per size, in a fresh subprocess: ``build_index(IndexOptions(encoder=None))`` with
progress (time, peak RSS, size on disk); in another fresh subprocess, ``open_index`` +
first query (memory-mapped load), then BM25 query latency p50/p95 over the 300 SciFact
test queries, interleaved per query with bm25s (numpy backend, same k1/b) built over
the same texts in that process. The dense side is measured for real only at the sizes
named by ``--hybrid-sizes`` (embedding every chunk with the default encoder costs about
a minute per few thousand chunks on two cores); larger sizes report lexical figures
only (see RESULTS.md for the exact-search latency at 100k from the vectors benchmark).

Run: ``python -m benchmarks scale [--sizes 10000 100000 1000000]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    RESULTS,
    WORK,
    log,
    peak_rss_mb,
    percentiles,
    reset_peak_rss,
    rss_mb,
    run_child,
    save_result,
    version,
)

COLLECTIONS = ("scifact", "cranfield", "cisi", "medline", "adi", "cacm")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
K = 10


def sentence_pool() -> list[str]:
    pool: list[str] = []
    for name in COLLECTIONS:
        path = DATA / name / "corpus.jsonl"
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                record = json.loads(line)
                text = " ".join(str(record.get("text") or "").split())
                for sentence in _SENTENCE_END.split(text):
                    if 4 <= sentence.count(" ") <= 60:
                        pool.append(sentence)
    return pool


def make_corpus(size: int, seed: int = 0) -> Path:
    """Write (or reuse) a synthetic BEIR corpus of ``size`` documents."""
    path = WORK / f"synth-{size}" / "corpus.jsonl"
    if path.exists():
        return path
    pool = sentence_pool()
    log(f"sentence pool: {len(pool)} sentences; writing {size} documents to {path}")
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for i in range(size):
            picks = rng.integers(0, len(pool), int(rng.integers(2, 6)))
            text = " ".join(pool[p] for p in picks)
            fh.write(json.dumps({"_id": f"s{i:07d}", "title": "", "text": text}) + "\n")
    tmp.rename(path)
    return path


def _progress(name: str, total: int | None) -> Callable[[int], None]:
    state = {"done": 0, "next": 0.0, "start": time.perf_counter()}

    def advance(n: int) -> None:
        state["done"] += n
        now = time.perf_counter()
        if now >= state["next"]:
            state["next"] = now + 5.0
            of = f"/{total}" if total else ""
            elapsed = now - state["start"]
            print(f"  {name}: {state['done']}{of} ({elapsed:.0f} s)", file=sys.stderr, flush=True)

    return advance


def build_child(size: int, dense: bool) -> dict[str, Any]:
    from twokeys.indexer import IndexOptions, build_index

    corpus = make_corpus(size)
    index = WORK / f"synth-{size}{'-dense' if dense else ''}.twokeys"
    shutil.rmtree(index, ignore_errors=True)
    reset_peak_rss()
    baseline = rss_mb()
    options = IndexOptions() if dense else IndexOptions(encoder=None)
    start = time.perf_counter()
    report = build_index(corpus, index, options, progress=_progress)
    seconds = time.perf_counter() - start
    files = [f for f in index.rglob("*") if f.is_file()]
    return {
        "build_s": seconds,
        "chunks": report.chunks,
        "documents": report.documents,
        "peak_rss_mb": peak_rss_mb(),
        "build_delta_mb": peak_rss_mb() - baseline,
        "disk_mb": sum(f.stat().st_size for f in files) / 2**20,
        "lexical_disk_mb": sum(f.stat().st_size for f in files if "lexical" in f.name) / 2**20,
    }


def query_child(size: int, dense: bool) -> dict[str, Any]:
    import bm25s
    import Stemmer

    from twokeys.engine import open_index
    from twokeys.evaluation.beir import load_collection

    coll = load_collection(DATA / "scifact")
    queries = [coll.queries[q] for q in sorted(coll.queries)]
    index_path = WORK / f"synth-{size}{'-dense' if dense else ''}.twokeys"
    reset_peak_rss()
    rss_before = rss_mb()
    start = time.perf_counter()
    index = open_index(index_path)
    index.search(queries[0], mode="bm25", k=K)
    load_s = time.perf_counter() - start
    load_rss = peak_rss_mb() - rss_before
    out: dict[str, Any] = {"load_plus_first_query_s": load_s, "load_rss_delta_mb": load_rss}

    lat: dict[str, list[float]] = {"twokeys bm25": []}
    systems: dict[str, Callable[[str], object]] = {
        "twokeys bm25": lambda q: index.search(q, mode="bm25", k=K)
    }
    if dense:
        index.search(queries[0], mode="hybrid", k=K)  # loads the encoder
        systems["twokeys hybrid"] = lambda q: index.search(q, mode="hybrid", k=K)
        systems["twokeys dense"] = lambda q: index.search(q, mode="dense", k=K)
    else:
        with open(WORK / f"synth-{size}" / "corpus.jsonl", encoding="utf-8") as fh:
            texts = [json.loads(line)["text"] for line in fh]
        stemmer = Stemmer.Stemmer("english")
        start = time.perf_counter()
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene", backend="numpy")
        retriever.index(tokens, show_progress=False)
        out["bm25s_build_s"] = time.perf_counter() - start
        del texts, tokens

        def bm25s_search(q: str) -> object:
            qt = bm25s.tokenize(
                [q], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
            )
            return retriever.retrieve(qt, k=K, show_progress=False, n_threads=1)

        systems["bm25s"] = bm25s_search
    lat = {name: [] for name in systems}
    for q in queries[:5]:
        for fn in systems.values():
            fn(q)
    for q in queries:
        for name, fn in systems.items():
            start = time.perf_counter()
            fn(q)
            lat[name].append(time.perf_counter() - start)
    out["latency_ms"] = {
        name: {k: 1000 * v for k, v in percentiles(t).items()} for name, t in lat.items()
    }
    out["qps"] = {name: len(t) / sum(t) for name, t in lat.items()}
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    lexical = [r for r in rows if not r["dense"]]
    sizes = [r["chunks"] for r in lexical]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(sizes, [r["build_s"] for r in lexical], "o-", label="twokeys build_index")
    axes[0].plot(sizes, [r.get("bm25s_build_s") for r in lexical], "s--", label="bm25s index")
    axes[0].set_title("build time (s)")
    for name in ("twokeys bm25", "bm25s"):
        axes[1].plot(sizes, [r["latency_ms"][name]["p50"] for r in lexical], "o-", label=name)
    axes[1].set_title("BM25 query latency p50 (ms)")
    axes[2].plot(sizes, [r["disk_mb"] for r in lexical], "o-", label="index on disk")
    axes[2].plot(sizes, [r["peak_rss_mb"] for r in lexical], "s--", label="peak RSS, build")
    axes[2].set_title("MB")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chunks")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def run(sizes: Sequence[int], hybrid_sizes: Sequence[int]) -> dict[str, Any]:
    rows = []
    for size, dense in [(s, False) for s in sizes] + [(s, True) for s in hybrid_sizes]:
        log(f"size {size}{' with dense vectors' if dense else ''}: corpus")
        make_corpus(size)
        flag = ["--dense"] if dense else []
        log(f"size {size}: build (subprocess)")
        built = run_child("scale", ["build", "--size", str(size), *flag])
        log(f"size {size}: built in {built['build_s']:.1f} s; load + queries (subprocess)")
        queried = run_child("scale", ["query", "--size", str(size), *flag])
        rows.append({"size": size, "dense": dense, **built, **queried})
    # keep rows of sizes measured by an earlier run (e.g. `--sizes 1000000` alone)
    previous = RESULTS / "scale.json"
    if previous.exists():
        done = {(r["size"], r["dense"]) for r in rows}
        old = json.loads(previous.read_text(encoding="utf-8")).get("rows", [])
        rows += [r for r in old if (r["size"], r["dense"]) not in done]
    rows.sort(key=lambda r: (r["dense"], r["size"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    png = plot(rows, RESULTS / "scale.png")
    return {
        "rows": rows,
        "plot": str(png.relative_to(RESULTS.parent)) if png else None,
        "versions": {p: version(p) for p in ("twokeys", "bm25s", "numpy")},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "action", nargs="?", default="all", choices=("all", "make", "build", "query")
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--dense", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--hybrid-sizes", type=int, nargs="*", default=[10_000])
    args = parser.parse_args(argv)
    if args.action == "make":
        print(make_corpus(args.size))
    elif args.action == "build":
        print(json.dumps(build_child(args.size, args.dense)))
    elif args.action == "query":
        print(json.dumps(query_child(args.size, args.dense)))
    else:
        log(f"wrote {save_result('scale', run(args.sizes, args.hybrid_sizes))}")


if __name__ == "__main__":
    main()
