"""Before switching: twokeys' framework adapters against the frameworks' own hybrids.

What a LangChain or LlamaIndex user would compare: their framework's documented hybrid
retriever (``benchmarks/frameworks_peers.py``: LangChain's ``EnsembleRetriever`` of
``BM25Retriever`` + FAISS with all-MiniLM-L6-v2, LlamaIndex's ``QueryFusionRetriever``
of its BM25 retriever + a ``VectorStoreIndex`` with the same model), each in the peers'
own venv with only their documented packages, against ``twokeys.integrations``'
LangChain and LlamaIndex retrievers over a twokeys index (default options: hybrid,
MiniLM int8, ``explain`` on for the sensors' ranks in the metadata; and
``twokeys-langchain-fast``, the same with ``explain=False``; ``twokeys-langchain-static``,
the same with ``query_encoder="minilm-static"``, the adapters' fast mode;
``twokeys-embedding`` and ``twokeys-static-embedding``, our query embeddings alone, the
floor of our call under the same load).

Collections: SciFact (``../shared/data/scifact``) and the two documentation collections
of ``benchmarks/techdocs.py`` (``python-docs``, ``git-docs``; build them first with
``python -m benchmarks.techdocs build DIR``). Test-split queries only (``--split`` dev or
train is for diagnosis). Whole collections by default; embedding every chunk with
float32 MiniLM takes minutes per thousand chunks per system on one core, so
``--max-chars [COLLECTION=]N`` cuts a corpus to a sample (:func:`cut`). Every system sees
the same corpus and queries; the cut is printed and saved. Each system's build (our
index, the peers' FAISS / LlamaIndex stores) is kept under ``--work`` and reused while
its corpus is unchanged, with the time it took.

Quality: nDCG@10 over documents (each system fetches 30 chunks; chunks collapse to their
document at its best chunk, as ``twokeys.evaluation.runs.doc_ranking`` does), by
ir-measures.

Speed: every system runs in a process of its own, single-threaded (``OMP_NUM_THREADS=1``
for torch, one onnxruntime thread for ours), started and built one after another; then
each query goes to every system in turn (the order rotating by query), so a burst of load
elsewhere falls on all of them alike. Per call (``invoke`` / ``retrieve``, after a
warm-up query that is not a test query): wall time and the process's CPU time, as
median and p95, and each as a ratio to twokeys' LangChain adapter. On a shared machine
CPU time is the steadier measure of the work a call does.

``--profile SYSTEM COLLECTION N`` times the parts of our call (query embedding, BM25,
dense, fusion, ``explain``, the adapter) on N queries and prints a cProfile of it;
``frameworks_peers.py SYSTEM WORKDIR --profile N`` does the same for a peer.

Run: ``python -m benchmarks.frameworks --peer-python /work/cache/fw-venv/bin/python``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import DATA, REPO, RESULTS, SINGLE_THREAD_ENV, WORK, log, save_result

COLLECTIONS = ("scifact", "python-docs", "git-docs")
PEERS = ("langchain-ensemble", "llamaindex-fusion")
#: ``-fast``: ``explain=False`` (no sensors' ranks in the metadata); ``-static``: queries
#: embedded by the static ``minilm-static`` encoder (the adapters' fast mode, same index);
#: ``-embedding``: our query embedding alone (no search: the floor of our call, measured
#: among the others)
OURS = (
    "twokeys-langchain",
    "twokeys-langchain-fast",
    "twokeys-langchain-static",
    "twokeys-llamaindex",
    "twokeys-embedding",
    "twokeys-static-embedding",
)
SYSTEMS = (*OURS, *PEERS)
DEPTH = 30  # chunks fetched per query
CUTOFF = 10  # documents scored (nDCG@10)
THREADS = 1  # every system single-threaded (OMP_NUM_THREADS=1 for the peers' torch)
WARM_UP = "warm-up: what is this collection about?"  # not a test query: no cached vector


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text("utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, {})[doc] = int(score)
    return qrels


def cut(
    source: Path, out: Path, *, queries: int, max_chars: int, split: str = "test"
) -> dict[str, Any]:
    """The collection (``queries`` and ``max_chars`` 0), or a sample of it, in ``out``:
    corpus.jsonl, queries.json, qrels.json. A sample: the first ``queries`` test queries
    (by hash of their id) whose relevant documents fit in half of ``max_chars``, all of
    their relevant documents, and other documents (by hash of their id) until the corpus
    holds ``max_chars`` characters. Files are rewritten only when they change, so the
    systems' stores of an unchanged corpus are reused."""
    records = {}
    with open(source / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            records[str(record["_id"])] = record
    size = {i: len(r.get("title") or "") + len(r.get("text") or "") for i, r in records.items()}
    texts = {}
    for line in (source / "queries.jsonl").read_text("utf-8").splitlines():
        q = json.loads(line)
        texts[str(q["_id"])] = q["text"]
    qrels = _read_qrels(source / "qrels" / f"{split}.tsv")
    limit = max_chars or sum(size.values()) * 2
    chosen: dict[str, str] = {}
    keep: set[str] = set()
    for qid in sorted(qrels, key=_hash):
        relevant = {d for d in qrels[qid] if d in records}
        if not relevant or qid not in texts:
            continue
        if sum(size[d] for d in keep | relevant) > limit // 2:
            continue
        chosen[qid] = texts[qid]
        keep |= relevant
        if len(chosen) == queries:
            break
    total = sum(size[d] for d in keep)
    for doc in sorted(records, key=_hash):
        if max_chars and total >= max_chars:
            break
        if doc not in keep:
            keep.add(doc)
            total += size[doc]
    out.mkdir(parents=True, exist_ok=True)
    corpus = "".join(
        json.dumps(records[doc], ensure_ascii=False) + "\n" for doc in sorted(keep, key=_hash)
    )
    kept_qrels = {q: qrels[q] for q in chosen}
    for name, text in (
        ("corpus.jsonl", corpus),
        ("queries.json", json.dumps(chosen)),
        ("qrels.json", json.dumps(kept_qrels)),
    ):
        path = out / name
        if not path.exists() or path.read_text("utf-8") != text:
            path.write_text(text, "utf-8")
    return {
        "documents": len(keep),
        "of_documents": len(records),
        "chars": total,
        "queries": len(chosen),
        "split": split,
        "of_split_queries": len(qrels),
    }


# -- our side (the project's venv) ------------------------------------------------------


def ours(system: str, workdir: Path) -> tuple[Any, dict[str, Any]]:
    """Build a twokeys index of the corpus (kept while the corpus is unchanged) and an
    adapter's ``search(query) -> doc ids`` over it."""
    from functools import partial

    from twokeys import IndexOptions, build_index, open_index
    from twokeys.dense.encoder import register_encoder
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    # one intra-op thread, as the peers' torch gets from OMP_NUM_THREADS=1
    register_encoder("minilm", partial(OnnxMiniLM, threads=THREADS))
    path = workdir / "twokeys-index"
    digest = _digest(workdir / "corpus.jsonl")
    meta = path / "benchmark-build.json"
    stored = json.loads(meta.read_text("utf-8")) if meta.exists() else {}
    if stored.get("corpus") != digest:
        shutil.rmtree(path, ignore_errors=True)
        started = time.perf_counter()
        build_index(workdir / "corpus.jsonl", path, IndexOptions())
        stored = {"corpus": digest, "build_s": time.perf_counter() - started}
        meta.write_text(json.dumps(stored), "utf-8")
    query_encoder = "minilm-static" if "static" in system else None
    index = open_index(path)
    if system.endswith("-embedding"):
        encoder = open_index(path, query_encoder=query_encoder).query_encoder

        def search(query: str) -> list[str]:
            encoder.encode_one(query)  # uncached, as a search's first embedding of a query
            return []
    elif system.startswith("twokeys-langchain"):
        from twokeys.integrations.langchain import TwokeysRetriever as LangChainRetriever

        lc = LangChainRetriever(
            index=index, k=DEPTH, explain=not system.endswith("-fast"), query_encoder=query_encoder
        )

        def search(query: str) -> list[str]:
            return [d.metadata["doc_id"] for d in lc.invoke(query)]
    else:
        from twokeys.integrations.llamaindex import TwokeysRetriever as LlamaRetriever

        li = LlamaRetriever(index=index, k=DEPTH)

        def search(query: str) -> list[str]:
            return [n.node.metadata["doc_id"] for n in li.retrieve(query)]

    chunks = index.info()["counts"]["chunks"]
    return search, {"build_s": stored["build_s"], "chunks": chunks}


def serve(system: str, workdir: Path) -> int:
    """The child's loop (the protocol of ``frameworks_peers.py``)."""
    protocol, sys.stdout = sys.stdout, sys.stderr  # what libraries print goes to stderr

    def emit(data: dict[str, Any]) -> None:
        protocol.write(json.dumps(data) + "\n")
        protocol.flush()

    search, ready = ours(system, workdir)
    emit({"ready": True, **ready})
    for line in sys.stdin:
        query = json.loads(line)["query"]
        t0, c0 = time.perf_counter(), time.process_time()
        ids = search(query)
        emit(
            {
                "ids": ids,
                "ms": (time.perf_counter() - t0) * 1000,
                "cpu_ms": (time.process_time() - c0) * 1000,
            }
        )
    return 0


def profile(system: str, workdir: Path, count: int) -> int:
    """Median times of the parts of our call on ``count`` queries (the query vector's cache
    emptied before each), then a cProfile of the adapter's call, to stderr."""
    import cProfile
    import io
    import pstats

    # one thread, as the benchmark gives its children: numpy's BLAS reads this when it is
    # first imported (by ``ours``); with its threads, a loaded machine's two cores made a
    # dense search of the Python docs cost 8 ms of CPU instead of 0.3
    if "numpy" in sys.modules:
        log("--profile: numpy was imported before the thread limits were set")
    os.environ.update(SINGLE_THREAD_ENV)
    from twokeys import open_index

    search, _ = ours(system, workdir)
    query_encoder = "minilm-static" if "static" in system else None
    index = open_index(workdir / "twokeys-index", query_encoder=query_encoder)
    encoder = index.query_encoder
    queries = list(json.loads((workdir / "queries.json").read_text("utf-8")).values())[:count]

    def fresh() -> None:
        encoder._query_cache().vectors.clear()

    parts: dict[str, Any] = {
        "query embedding (encode_query)": encoder.encode_query,
        "bm25 search (k=30)": lambda q: index.search(q, mode="bm25", k=DEPTH),
        "dense search (k=30, embedding included)": lambda q: index.search(q, mode="dense", k=DEPTH),
        "hybrid search (k=30)": lambda q: index.search(q, k=DEPTH),
        "hybrid search (k=30, explain)": lambda q: index.search(q, k=DEPTH, explain=True),
        f"adapter call ({system})": search,
    }
    search(WARM_UP)
    for name, part in parts.items():
        times: list[float] = []
        cpu: list[float] = []
        for query in queries:
            fresh()
            t0, c0 = time.perf_counter(), time.process_time()
            part(query)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        print(
            f"{name:<42} median {statistics.median(times):7.2f} ms wall, "
            f"{statistics.median(cpu):7.2f} ms CPU",
            file=sys.stderr,
        )
    profiler = cProfile.Profile(time.process_time)  # CPU time: preemption is not a cost
    for query in queries:
        fresh()
        profiler.enable()
        search(query)
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
    print(out.getvalue(), file=sys.stderr)
    return 0


# -- the parent ---------------------------------------------------------------------------


class Child:
    """A system in a process of its own: built on start, then asked one query at a time."""

    def __init__(self, command: list[str]) -> None:
        env = {**os.environ, **SINGLE_THREAD_ENV, "TOKENIZERS_PARALLELISM": "false"}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
        self.command = command
        self.proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait()
                raise RuntimeError(f"{' '.join(self.command)} failed (its stderr is above)")
            if line.startswith("{"):
                data: dict[str, Any] = json.loads(line)
                return data
            sys.stderr.write(line)  # printed by native code straight to the stream

    def ask(self, query: str) -> tuple[list[str], float, float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"query": query}) + "\n")
        self.proc.stdin.flush()
        data = self._read()
        return data["ids"], data["ms"], data["cpu_ms"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ndcg(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> float:
    from twokeys.evaluation.runs import evaluate

    scored: dict[str, dict[str, float]] = {}
    for qid, ids in run.items():
        ranking: dict[str, float] = {}
        for doc in ids:
            if doc not in ranking:
                ranking[doc] = float(CUTOFF - len(ranking))
                if len(ranking) == CUTOFF:
                    break
        scored[qid] = ranking
    return evaluate(qrels, scored, [f"nDCG@{CUTOFF}"])[f"nDCG@{CUTOFF}"]


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def measure(name: str, workdir: Path, peer_python: str) -> dict[str, Any]:
    """Start every system (one after another: builds don't share the cores), then ask
    them each query in turn, the order rotating by query, so load elsewhere falls on all
    of them alike."""
    queries: dict[str, str] = json.loads((workdir / "queries.json").read_text("utf-8"))
    qrels = json.loads((workdir / "qrels.json").read_text("utf-8"))
    children: dict[str, Child] = {}
    try:
        for system in SYSTEMS:
            log(f"{name}: starting {system}")
            if system in OURS:
                command = [sys.executable, "-m", "benchmarks.frameworks", "--child"]
            else:
                command = [peer_python, str(REPO / "benchmarks" / "frameworks_peers.py")]
            children[system] = Child([*command, system, str(workdir)])
            log(f"{name}: {system} ready: {children[system].ready}")
        for child in children.values():  # warm-up: lazy loading is not a query's cost
            child.ask(WARM_UP)
        runs: dict[str, dict[str, list[str]]] = {s: {} for s in children}
        latency: dict[str, list[float]] = {s: [] for s in children}
        cpu: dict[str, list[float]] = {s: [] for s in children}
        order = list(children)
        for turn, (qid, text) in enumerate(queries.items()):
            for system in order[turn % len(order) :] + order[: turn % len(order)]:
                ids, ms, cpu_ms = children[system].ask(text)
                runs[system][qid] = ids
                latency[system].append(ms)
                cpu[system].append(cpu_ms)
    finally:
        for child in children.values():
            child.close()
    systems: dict[str, Any] = {}
    for system, child in children.items():
        systems[system] = {
            "ndcg@10": round(_ndcg(qrels, runs[system]), 4),
            "median_ms": round(statistics.median(latency[system]), 2),
            "p95_ms": round(_p95(latency[system]), 2),
            "median_cpu_ms": round(statistics.median(cpu[system]), 2),
            "p95_cpu_ms": round(_p95(cpu[system]), 2),
            "build_s": round(child.ready["build_s"], 1),
            "chunks": child.ready["chunks"],
            "per_query_ndcg@10": _per_query(qrels, runs[system]),
        }
    return systems


def _per_query(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> dict[str, float]:
    return {qid: round(_ndcg({qid: qrels[qid]}, {qid: run[qid]}), 4) for qid in run}


def _keep_others(results: dict[str, Any]) -> None:
    """Collections measured by an earlier run (of this version: with CPU times) and not by
    this one stay in the results, each with its own run's settings and load."""
    try:
        earlier = json.loads((RESULTS / "frameworks.json").read_text("utf-8"))
    except (OSError, ValueError):
        return
    for name, entry in earlier.get("collections", {}).items():
        measured = entry.get("systems", {}).get(OURS[0], {})
        if name not in results["collections"] and "median_cpu_ms" in measured:
            results["collections"][name] = entry
    for entry in results["collections"].values():
        entry.setdefault("settings", results["settings"])
        entry.setdefault("load_average", results["load_average"])


def _max_chars(values: list[str]) -> dict[str, int]:
    out = {}
    for value in values:
        name, _, number = value.rpartition("=")
        out[name or "*"] = int(number)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", default="/work/cache/fw-venv/bin/python")
    parser.add_argument("--techdocs", type=Path, default=WORK / "techdocs")
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--queries", type=int, default=0, help="0: every test query")
    parser.add_argument(
        "--max-chars",
        nargs="*",
        default=[],
        metavar="[COLLECTION=]N",
        help="cut the corpus (of every collection, or of one) to N characters; default: whole",
    )
    parser.add_argument("--work", type=Path, default=WORK / "frameworks", help="scratch folder")
    parser.add_argument("--split", default="test", help="dev or train: for diagnosis only")
    parser.add_argument("--prepare", action="store_true", help="only write the collections")
    parser.add_argument("--profile", nargs=3, metavar=("SYSTEM", "COLLECTION", "QUERIES"))
    parser.add_argument("--child", nargs=2, metavar=("SYSTEM", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    max_chars = _max_chars(args.max_chars)
    if args.child:
        return serve(args.child[0], Path(args.child[1]))
    if args.profile:
        system, name, count = args.profile
        return profile(system, args.work / name, int(count))
    results: dict[str, Any] = {
        "settings": {
            "queries": args.queries or "all",
            "max_chars": max_chars or "all",
            "depth": DEPTH,
            "threads": THREADS,
        },
        "collections": {},
    }
    rows = []
    for name in args.collections:
        source = DATA / name if name == "scifact" else args.techdocs / name
        workdir = args.work / name
        sample = cut(
            source,
            workdir,
            queries=args.queries,
            max_chars=max_chars.get(name, max_chars.get("*", 0)),
            split=args.split,
        )
        log(f"{name}: {sample}")
        if args.prepare:
            continue
        systems = measure(name, workdir, args.peer_python)
        results["collections"][name] = {"sample": sample, "systems": systems}
        for system, figures in systems.items():
            rows.append((name, system, figures))
    if args.prepare:
        return 0
    results["load_average"] = os.getloadavg()
    _keep_others(results)
    print(
        f"\n{'collection':<12} {'system':<24} {'nDCG@10':>8} {'median ms':>9} {'p95 ms':>8} "
        f"{'x ours':>7} {'CPU ms':>7} {'x ours':>7} {'build s':>8} {'chunks':>7}"
    )
    for name, system, f in rows:
        base = results["collections"][name]["systems"][OURS[0]]
        print(
            f"{name:<12} {system:<24} {f['ndcg@10']:>8.4f} {f['median_ms']:>9.2f} "
            f"{f['p95_ms']:>8.2f} {f['median_ms'] / base['median_ms']:>7.2f} "
            f"{f['median_cpu_ms']:>7.2f} {f['median_cpu_ms'] / base['median_cpu_ms']:>7.2f} "
            f"{f['build_s']:>8.1f} {f['chunks']:>7}"
        )
    print(f"load average at the end: {results['load_average']}")
    save_result("frameworks", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
