"""BM25: twokeys against bm25s, rank_bm25 and (for quality) Pyserini, on SciFact.

Every system indexes the same 5,183 documents (title + text) and answers the same 300
test queries; a query's time runs from its text to its top-10 ids, tokenisation
included. Systems:

* ``twokeys-index``: the user-facing path, ``build_index(IndexOptions(encoder=None))``
  then ``Index.search(mode="bm25")``; twokeys chunks documents, so it indexes chunks and
  each hit is a materialised ``Hit`` with its chunk's text, title and path.
* ``twokeys-docs``: twokeys' own lexical arrays built on whole documents
  (``build_term_matrix`` + ``bm25_weights`` + ``ArrayLexicalIndex``, twokeys analyzer):
  the like-for-like comparison with bm25s, which also returns document rows.
* ``bm25s``: called as its README calls it, defaults included (``BM25()``: numpy
  backend, method "lucene", k1 1.5, b 0.75; ``tokenize(query, stemmer=stemmer)`` then
  ``retrieve(query_tokens, k=k)``, progress bars off): ``benchmarks/peer_calls.py``,
  whose speed against the README's own lines ``tests/integration/test_peer_calls.py``
  guards. Corpus: its English stopwords and the Porter2 (PyStemmer "english") stemmer.
* ``bm25s-numba``: the same with ``BM25(backend="numba")``, bm25s' documented faster
  mode (what ``backend="auto"`` picks when numba is installed).
* ``rank_bm25``: ``BM25Okapi`` with the same k1/b over twokeys analyzer tokens (it has no
  tokenizer of its own).
* batch mode: bm25s ``retrieve`` of every query at once with its default ``n_threads=0``
  (sequential) and with ``n_threads=2``, bm25s-numba's default; twokeys-docs
  ``ArrayLexicalIndex.search_many(threads=1 or 2)``; twokeys-index ``Index.search_many``
  (every core), each with the CPU seconds the process used per wall-clock second.
* quality only: ``bm25s@k1=0.9,b=0.4`` (bm25s at twokeys' parameters),
  ``bm25s@twokeys-tokens`` (bm25s over twokeys' analyzer: same scores
  expected, a parity check), ``twokeys-docs@lucene-analyzer`` (Porter 1 stemming,
  Lucene's 33 stopwords: the nearest twokeys setting to Lucene's EnglishAnalyzer) and
  Pyserini 1.6.0 Lucene BM25 when a Java 21+ runtime is found.

Run: ``python -m benchmarks bm25`` (or ``python -m benchmarks.bm25_peers``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    SINGLE_THREAD_ENV,
    WORK,
    interleaved,
    load_corpus,
    log,
    median,
    peak_rss_mb,
    reset_peak_rss,
    rss_mb,
    run_child,
    save_result,
    version,
)

K1, B = 0.9, 0.4
K_SPEED = 10
K_QUALITY = 100
Searcher = Callable[[str, int], list[str]]  # query text, k -> doc ids, best first
SPEED_SYSTEMS = ("twokeys-index", "twokeys-docs", "bm25s", "bm25s-numba", "rank_bm25")
JAVA_CANDIDATES = ("/usr/lib/jvm/temurin-25-jdk-amd64", "/usr/lib/jvm/temurin-21-jdk-amd64")


# -- systems: each builder indexes the corpus and returns a searcher -------------------


def build_twokeys_index(collection: Path) -> Searcher:
    from twokeys.engine import open_index
    from twokeys.evaluation.runs import doc_ranking
    from twokeys.indexer import IndexOptions, build_index

    path = WORK / "scifact-bm25.twokeys"
    shutil.rmtree(path, ignore_errors=True)
    build_index(collection / "corpus.jsonl", path, IndexOptions(encoder=None))
    index = open_index(path)

    def search(query: str, k: int) -> list[str]:
        # chunk hits collapse to documents: ask for more chunks than documents wanted
        hits = index.search(query, mode="bm25", k=k if k <= K_SPEED else 3 * k)
        return list(doc_ranking(hits, k))

    def batch(queries: list[str], k: int, threads: int) -> list[list[str]]:
        # Index.search_many uses every core; threads is not a knob of the user API
        runs = index.search_many(queries, mode="bm25", k=k if k <= K_SPEED else 3 * k)
        return [list(doc_ranking(hits, k)) for hits in runs]

    search.n_chunks = int(index.manifest.counts["chunks"])  # type: ignore[attr-defined]
    search.batch = batch  # type: ignore[attr-defined]
    return search


def build_twokeys_docs(collection: Path, analyzer_spec: Any = None) -> Searcher:
    from twokeys.analysis import Analyzer, AnalyzerSpec
    from twokeys.lexical.bm25 import BM25Params, bm25_weights, build_term_matrix
    from twokeys.lexical.index import ArrayLexicalIndex

    corpus = load_corpus(collection / "corpus.jsonl")
    analyzer = Analyzer(analyzer_spec or AnalyzerSpec())
    matrix = build_term_matrix(analyzer.index_terms(t) for t in corpus.texts)
    weights = bm25_weights(matrix, BM25Params(k1=K1, b=B))
    vocabulary = {term: i for i, term in enumerate(matrix.vocabulary)}
    index = ArrayLexicalIndex(vocabulary, matrix.indptr, matrix.indices, weights, matrix.n_docs)
    ids = corpus.ids

    def search(query: str, k: int) -> list[str]:
        return [ids[hit.row] for hit in index.search(analyzer.query_terms(query), k)]

    def batch(queries: list[str], k: int, threads: int) -> list[list[str]]:
        runs = index.search_many([analyzer.query_terms(q) for q in queries], k, threads=threads)
        return [[ids[hit.row] for hit in run] for run in runs]

    search.batch = batch  # type: ignore[attr-defined]
    return search


def build_twokeys_docs_lucene(collection: Path) -> Searcher:
    from twokeys.analysis import AnalyzerSpec

    return build_twokeys_docs(collection, AnalyzerSpec(stemmer="porter", stopwords="lucene"))


def build_bm25s(collection: Path, backend: str = "numpy", params: Any = None) -> Searcher:
    """bm25s as its README calls it (``benchmarks/peer_calls.py``), defaults included."""
    from benchmarks.peer_calls import Bm25s

    corpus = load_corpus(collection / "corpus.jsonl")
    peer = Bm25s(corpus.texts, backend=backend, params=params)
    ids = np.asarray(corpus.ids)

    def search(query: str, k: int) -> list[str]:
        rows, _ = peer.search(query, k)
        return ids[rows].tolist()  # type: ignore[no-any-return]

    def batch(queries: list[str], k: int, threads: int) -> list[list[str]]:
        rows, _ = peer.search_many(queries, k, n_threads=threads)
        return [ids[r].tolist() for r in rows]

    search.batch = batch  # type: ignore[attr-defined]
    return search


def build_bm25s_numba(collection: Path) -> Searcher:
    return build_bm25s(collection, backend="numba")


def build_bm25s_flat(collection: Path) -> Searcher:
    """bm25s at twokeys' (Anserini's BEIR "flat") k1 and b, for quality only."""
    return build_bm25s(collection, params={"k1": K1, "b": B})


def build_bm25s_twokeys_tokens(collection: Path) -> Searcher:
    import bm25s

    from twokeys.analysis import Analyzer

    corpus = load_corpus(collection / "corpus.jsonl")
    analyzer = Analyzer()
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene", backend="numpy")
    retriever.index([analyzer.index_terms(t) for t in corpus.texts], show_progress=False)
    ids = np.asarray(corpus.ids)

    def search(query: str, k: int) -> list[str]:
        terms = [t for t in analyzer.query_terms(query) if t in retriever.vocab_dict]
        if not terms:
            return []
        rows, scores = retriever.retrieve([terms], k=k, show_progress=False)
        return ids[rows[0][scores[0] > 0]].tolist()

    return search


def build_rank_bm25(collection: Path) -> Searcher:
    from rank_bm25 import BM25Okapi

    from twokeys.analysis import Analyzer

    corpus = load_corpus(collection / "corpus.jsonl")
    analyzer = Analyzer()
    bm25 = BM25Okapi([analyzer.index_terms(t) for t in corpus.texts], k1=K1, b=B)
    ids = corpus.ids

    def search(query: str, k: int) -> list[str]:
        scores = bm25.get_scores(analyzer.query_terms(query))
        top = np.argpartition(-scores, k)[:k]
        return [ids[i] for i in top[np.lexsort((top, -scores[top]))]]

    return search


BUILDERS: dict[str, Callable[[Path], Searcher]] = {
    "twokeys-index": build_twokeys_index,
    "twokeys-docs": build_twokeys_docs,
    "bm25s": build_bm25s,
    "bm25s-numba": build_bm25s_numba,
    "rank_bm25": build_rank_bm25,
    "bm25s@k1=0.9,b=0.4": build_bm25s_flat,
    "bm25s@twokeys-tokens": build_bm25s_twokeys_tokens,
    "twokeys-docs@lucene-analyzer": build_twokeys_docs_lucene,
}


# -- Pyserini (Lucene) ---------------------------------------------------------------


def find_java() -> tuple[str | None, str]:
    """A JAVA_HOME with Java 21+, or None and the reason."""
    candidates = [os.environ.get("JAVA_HOME", ""), *JAVA_CANDIDATES]
    for home in filter(None, candidates):
        java = Path(home) / "bin" / "java"
        if not java.exists():
            continue
        out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        try:
            major = int(out.split('"')[1].split(".")[0])
        except (IndexError, ValueError):
            continue
        if major >= 21:
            return home, f"Java {major} at {home}"
    return None, "no Java 21+ runtime found (Pyserini 1.x / Anserini needs 21+; 17 fails)"


def pyserini_run(collection: Path, queries: dict[str, str]) -> dict[str, Any]:
    """Child process: index with Lucene's default English analyzer, search BM25.

    Pyserini's Python search package imports its encoders (openai, torch, ...) at import
    time, so this drives the Anserini fat jar it ships directly: ``IndexCollection`` on
    the JVM for indexing, ``SimpleSearcher`` (what ``LuceneSearcher`` wraps) via pyjnius.
    """
    import pyserini

    jars = sorted((Path(pyserini.__file__).parent / "resources" / "jars").glob("*fatjar*.jar"))
    corpus = load_corpus(collection / "corpus.jsonl")
    docs_dir = WORK / "pyserini-docs"
    index_dir = WORK / "pyserini-index"
    shutil.rmtree(docs_dir, ignore_errors=True)
    shutil.rmtree(index_dir, ignore_errors=True)
    docs_dir.mkdir(parents=True)
    with open(docs_dir / "docs.jsonl", "w", encoding="utf-8") as fh:
        for doc_id, text in zip(corpus.ids, corpus.texts, strict=True):
            fh.write(json.dumps({"id": doc_id, "contents": text}) + "\n")
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
    start = time.perf_counter()
    subprocess.run(
        [
            str(java),
            "--add-modules",
            "jdk.incubator.vector",
            "-cp",
            str(jars[-1]),
            "io.anserini.index.IndexCollection",
            "-collection",
            "JsonCollection",
            "-input",
            str(docs_dir),
            "-index",
            str(index_dir),
            "-generator",
            "DefaultLuceneDocumentGenerator",
            "-threads",
            "1",
        ],
        check=True,
        capture_output=True,
    )
    build_s = time.perf_counter() - start
    from pyserini.pyclass import JString, autoclass

    searcher = autoclass("io.anserini.search.SimpleSearcher")(JString(str(index_dir)))
    searcher.set_bm25(float(K1), float(B))
    run: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    for qid, text in queries.items():
        hits = searcher.search(JString(text), K_QUALITY)
        run[qid] = {h.docid: float(K_QUALITY - i) for i, h in enumerate(hits)}
    search_s = time.perf_counter() - start
    return {"run": run, "build_s": build_s, "search_s": search_s, "jar": jars[-1].name}


# -- measurements ----------------------------------------------------------------------


def cpu_per_wall(fn: Callable[[], None], repeats: int) -> float:
    """This process's CPU seconds per wall-clock second over ``repeats`` calls of ``fn``:
    above 1 when more than one core worked at once."""
    before, start = os.times(), time.perf_counter()
    for _ in range(repeats):
        fn()
    after, wall = os.times(), time.perf_counter() - start
    return (after.user - before.user + after.system - before.system) / wall


def memory_child(system: str, collection: Path, queries: Sequence[str]) -> dict[str, float]:
    """Child process: memory of building one system, then of 50 queries.

    Two readings: the rise of the kernel's peak RSS over the RSS before the build (what
    a user sees; includes allocator slack and imports done lazily by the build), and
    tracemalloc's peak of Python + numpy allocations during a second, identical build
    (deterministic) with what the built index still holds afterwards.
    """
    import gc
    import tracemalloc

    from twokeys.analysis import analyzer_for

    reset_peak_rss()
    before = rss_mb()
    search = BUILDERS[system](collection)
    build_peak = peak_rss_mb()
    for q in queries[:50]:
        search(q, K_SPEED)
    query_peak = peak_rss_mb()
    del search
    analyzer_for.cache_clear()  # build_index's shared analyzer: its caches count again
    gc.collect()
    tracemalloc.start()
    search = BUILDERS[system](collection)
    current, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del search
    return {
        "rss_before_mb": before,
        "build_peak_rss_mb": build_peak,
        "build_delta_mb": build_peak - before,
        "query_peak_rss_mb": query_peak,
        "traced_build_peak_mb": traced_peak / 2**20,
        "traced_retained_mb": current / 2**20,
    }


def _preload(system: str) -> None:
    """Import a system's modules before the baseline, so imports aren't counted."""
    import twokeys.analysis
    import twokeys.lexical.index

    if system == "twokeys-index":
        import twokeys.engine
        import twokeys.indexer  # noqa: F401
    if system.startswith("bm25s"):
        import bm25s  # noqa: F401
    if system == "bm25s-numba":
        import numba  # noqa: F401
    if system == "rank_bm25":
        import rank_bm25  # noqa: F401


def run(collection: Path, rounds: int, *, pyserini: bool = True) -> dict[str, Any]:
    from twokeys.evaluation.beir import load_collection
    from twokeys.evaluation.runs import evaluate

    coll = load_collection(collection)
    qids = sorted(coll.queries)
    queries = [coll.queries[q] for q in qids]
    WORK.mkdir(parents=True, exist_ok=True)

    log("building every system (interleaved build rounds)")
    searchers: dict[str, Searcher] = {}
    build_times: dict[str, list[float]] = {name: [] for name in BUILDERS}
    for _ in range(2):
        for name, builder in BUILDERS.items():
            start = time.perf_counter()
            searchers[name] = builder(collection)
            build_times[name].append(time.perf_counter() - start)
    build_s = {name: min(times) for name, times in build_times.items()}

    log("quality: nDCG@10 and R@100 of every system")
    quality: dict[str, dict[str, float]] = {}
    for name, search in searchers.items():
        run_ = {
            qid: {d: float(K_QUALITY - i) for i, d in enumerate(search(q, K_QUALITY))}
            for qid, q in zip(qids, queries, strict=True)
        }
        quality[name] = evaluate(coll.qrels, run_, ["nDCG@10", "R@100"])

    log(f"single-query throughput, one thread, {rounds} interleaved rounds of {len(queries)}")

    def all_queries(search: Searcher) -> Callable[[], None]:
        return lambda: [search(q, K_SPEED) for q in queries] and None

    cpu: dict[str, list[float]] = {}
    systems = {name: all_queries(searchers[name]) for name in SPEED_SYSTEMS}
    times = interleaved(systems, rounds, cpu=cpu)
    single = {
        name: {
            "qps": len(queries) / median(t),
            "ms_per_query": 1000 * median(t) / len(queries),
            "cpu_ms_per_query": 1000 * median(cpu[name]) / len(queries),
            "rounds_s": t,
        }
        for name, t in times.items()
    }

    log("batch mode: all queries at once, 1 and 2 threads")
    # bm25s' numba batch on 2 threads is left out: numba's thread count is capped by
    # NUMBA_NUM_THREADS=1 here (SINGLE_THREAD_ENV), and its pool would need it raised

    def batched(name: str, threads: int) -> Callable[[], None]:
        return lambda: searchers[name].batch(queries, K_SPEED, threads) and None  # type: ignore[attr-defined]

    batch_modes = {
        "bm25s batch, default (sequential)": batched("bm25s", 0),
        "bm25s batch, n_threads=2": batched("bm25s", 2),
        "bm25s-numba batch, default": batched("bm25s-numba", 0),
        "twokeys-docs, sequential": all_queries(searchers["twokeys-docs"]),
        "twokeys-docs search_many, 1 thread": batched("twokeys-docs", 1),
        "twokeys-docs search_many, 2 threads": batched("twokeys-docs", 2),
        "twokeys-index, sequential": all_queries(searchers["twokeys-index"]),
        "twokeys-index Index.search_many": batched("twokeys-index", 2),
    }
    batch_times = interleaved(batch_modes, rounds)
    batch = {name: {"qps": len(queries) / median(t)} for name, t in batch_times.items()}
    for name, fn in batch_modes.items():
        batch[name]["cpu_per_wall"] = cpu_per_wall(fn, rounds)

    log("peer check: the benchmark's bm25s calls against bm25s' README lines")
    from benchmarks.peer_calls import BACKENDS, Bm25s, numba_available, readme_search, slowdown

    texts = load_corpus(collection / "corpus.jsonl").texts
    peer_check = {
        backend: slowdown(
            Bm25s(texts, backend=backend).search, readme_search(texts, backend=backend), queries
        )
        for backend in BACKENDS
        if backend == "numpy" or numba_available()
    }

    log("peak memory: one subprocess per system")
    memory: dict[str, dict[str, float]] = {}
    for name in SPEED_SYSTEMS:
        memory[name] = run_child("bm25_peers", ["--memory", name, "--collection", str(collection)])

    pyserini_info: dict[str, Any] = {"status": "skipped: --no-pyserini"}
    if pyserini:
        pyserini_info = run_pyserini(collection, coll.queries, coll.qrels, evaluate)
        if "nDCG@10" in pyserini_info:
            quality["pyserini (Lucene)"] = {
                "nDCG@10": pyserini_info["nDCG@10"],
                "R@100": pyserini_info["R@100"],
            }

    n_chunks = getattr(searchers["twokeys-index"], "n_chunks", None)
    return {
        "collection": str(collection),
        "documents": len(load_corpus(collection / "corpus.jsonl").ids),
        "twokeys_chunks": n_chunks,
        "queries": len(queries),
        "params": {"k1": K1, "b": B, "k_speed": K_SPEED, "rounds": rounds},
        "threads_env": SINGLE_THREAD_ENV,
        "versions": {
            p: version(p) for p in ("twokeys", "bm25s", "numba", "rank-bm25", "numpy", "scipy")
        },
        "build_s": build_s,
        "single_query": single,
        "batch": batch,
        "peer_call_slowdown_vs_readme": peer_check,
        "memory": memory,
        "quality": quality,
        "pyserini": {k: v for k, v in pyserini_info.items() if k != "run"},
    }


def run_pyserini(
    collection: Path,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    evaluate: Callable[..., dict[str, float]],
) -> dict[str, Any]:
    java_home, reason = find_java()
    if java_home is None:
        return {"status": f"skipped: {reason}"}
    try:
        import pyserini  # noqa: F401  (only its jar and pyjnius glue are used)
    except ImportError as exc:
        return {"status": f"skipped: pyserini not importable ({exc})"}
    log(f"Pyserini: {reason}")
    try:
        out = run_child(
            "bm25_peers",
            ["--pyserini", "--collection", str(collection)],
            env={"JAVA_HOME": java_home, "PATH": f"{java_home}/bin:{os.environ['PATH']}"},
        )
    except RuntimeError as exc:
        return {"status": f"failed: {str(exc)[-600:]}"}
    scores = evaluate(qrels, out["run"], ["nDCG@10", "R@100"])
    return {
        "status": f"ran: pyserini {version('pyserini')}, {reason}",
        "build_s": out["build_s"],
        "search_s": out["search_s"],
        "jar": out["jar"],
        **scores,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-pyserini", action="store_true")
    parser.add_argument("--memory", choices=SPEED_SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--pyserini", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory:
        from twokeys.evaluation.beir import load_collection

        _preload(args.memory)
        coll = load_collection(args.collection)
        print(json.dumps(memory_child(args.memory, args.collection, list(coll.queries.values()))))
        return
    if args.pyserini:
        from twokeys.evaluation.beir import load_collection

        coll = load_collection(args.collection)
        print(json.dumps(pyserini_run(args.collection, coll.queries)))
        return
    result = run(args.collection, args.rounds, pyserini=not args.no_pyserini)
    path = save_result("bm25", result)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
