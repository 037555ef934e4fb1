"""Before switching: twokeys' framework adapters against the frameworks' own hybrids.

What a LangChain or LlamaIndex user would compare: their framework's documented hybrid
retriever (``benchmarks/frameworks_peers.py``: LangChain's ``EnsembleRetriever`` of
``BM25Retriever`` + FAISS with all-MiniLM-L6-v2, LlamaIndex's ``QueryFusionRetriever``
of its BM25 retriever + a ``VectorStoreIndex`` with the same model), each in the peers'
own venv with only their documented packages, against ``twokeys.integrations``'
LangChain and LlamaIndex retrievers over a twokeys index (default options: hybrid,
MiniLM int8, ``explain`` on for the sensors' ranks in the metadata; and
``twokeys-langchain-fast``, the same with ``explain=False``).

Collections: SciFact (``../shared/data/scifact``) and the two documentation collections
of ``benchmarks/techdocs.py`` (``python-docs``, ``git-docs``; build them first with
``python -m benchmarks.techdocs build DIR``). Test-split queries only. Embedding every
chunk with float32 MiniLM on this machine's 2 shared cores takes minutes per thousand
chunks per system, so each collection is cut to a sample: the first ``--queries`` test
queries (by hash of their id) whose relevant documents fit in half of ``--max-chars``,
all of their relevant documents, and other documents (by hash of their id) until the
corpus holds ``--max-chars`` characters. Every system sees the same cut corpus and
queries; the cut is printed and saved.

Quality: nDCG@10 over documents (each system fetches 30 chunks; chunks collapse to their
document at its best chunk, ``twokeys.evaluation.runs.doc_ranking``), by ir-measures.
Speed: the median wall time of one framework call (``invoke`` / ``retrieve``) per query,
after a warm-up query; every system single-threaded (``OMP_NUM_THREADS=1`` ...), run
one after another on the same machine in one run of this script.

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

from benchmarks.common import DATA, REPO, SINGLE_THREAD_ENV, WORK, log, save_result

COLLECTIONS = ("scifact", "python-docs", "git-docs")
PEERS = ("langchain-ensemble", "llamaindex-fusion")
#: ``-fast``: ``explain=False`` (no sensors' ranks in the metadata)
OURS = ("twokeys-langchain", "twokeys-langchain-fast", "twokeys-llamaindex")
DEPTH = 30  # chunks fetched per query
CUTOFF = 10  # documents scored (nDCG@10)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text("utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, {})[doc] = int(score)
    return qrels


def cut(source: Path, out: Path, *, queries: int, max_chars: int) -> dict[str, Any]:
    """A sample of a BEIR collection in ``out``: corpus.jsonl, queries.json, qrels.json."""
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
    qrels = _read_qrels(source / "qrels" / "test.tsv")
    chosen: dict[str, str] = {}
    keep: set[str] = set()
    for qid in sorted(qrels, key=_hash):
        relevant = {d for d in qrels[qid] if d in records}
        if not relevant or qid not in texts:
            continue
        if sum(size[d] for d in keep | relevant) > max_chars // 2:
            continue
        chosen[qid] = texts[qid]
        keep |= relevant
        if len(chosen) == queries:
            break
    total = sum(size[d] for d in keep)
    for doc in sorted(records, key=_hash):
        if total >= max_chars:
            break
        if doc not in keep:
            keep.add(doc)
            total += size[doc]
    shutil.rmtree(out, ignore_errors=True)  # a new cut: no index of an older one
    out.mkdir(parents=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for doc in sorted(keep, key=_hash):
            fh.write(json.dumps(records[doc], ensure_ascii=False) + "\n")
    (out / "queries.json").write_text(json.dumps(chosen), "utf-8")
    kept_qrels = {q: qrels[q] for q in chosen}
    (out / "qrels.json").write_text(json.dumps(kept_qrels), "utf-8")
    return {
        "documents": len(keep),
        "of_documents": len(records),
        "chars": total,
        "queries": len(chosen),
        "of_test_queries": len(qrels),
    }


# -- our side (the project's venv) ------------------------------------------------------


def ours(system: str, workdir: Path) -> dict[str, Any]:
    """Build a twokeys index of the cut corpus (once) and search it through an adapter."""
    from twokeys import IndexOptions, build_index, open_index

    path = workdir / "twokeys-index"
    started = time.perf_counter()
    if not path.exists():
        build_index(workdir / "corpus.jsonl", path, IndexOptions())
    build_s = time.perf_counter() - started
    queries: dict[str, str] = json.loads((workdir / "queries.json").read_text("utf-8"))
    index = open_index(path)
    if system.startswith("twokeys-langchain"):
        from twokeys.integrations.langchain import TwokeysRetriever as LangChainRetriever

        lc = LangChainRetriever(index=index, k=DEPTH, explain=not system.endswith("-fast"))

        def search(query: str) -> list[str]:
            return [d.metadata["doc_id"] for d in lc.invoke(query)]
    else:
        from twokeys.integrations.llamaindex import TwokeysRetriever as LlamaRetriever

        li = LlamaRetriever(index=index, k=DEPTH)

        def search(query: str) -> list[str]:
            return [n.node.metadata["doc_id"] for n in li.retrieve(query)]

    search(next(iter(queries.values())))  # warm-up: the encoder loads lazily
    run: dict[str, list[str]] = {}
    latency: list[float] = []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        run[qid] = search(text)
        latency.append((time.perf_counter() - t0) * 1000)
    chunks = index.info()["counts"]["chunks"]
    return {"run": run, "latency_ms": latency, "build_s": build_s, "chunks": chunks}


# -- the parent ---------------------------------------------------------------------------


def _child(command: list[str]) -> dict[str, Any]:
    env = {**os.environ, **SINGLE_THREAD_ENV, "TOKENIZERS_PARALLELISM": "false"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO)])
    proc = subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed (its stderr is above)")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer-python", default="/work/cache/fw-venv/bin/python")
    parser.add_argument("--techdocs", type=Path, default=WORK / "techdocs")
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--max-chars", type=int, default=600_000)
    parser.add_argument("--child", nargs=2, metavar=("SYSTEM", "WORKDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(ours(args.child[0], Path(args.child[1]))))
        return 0
    results: dict[str, Any] = {
        "settings": {"queries": args.queries, "max_chars": args.max_chars, "depth": DEPTH},
        "collections": {},
    }
    rows = []
    for name in args.collections:
        source = DATA / name if name == "scifact" else args.techdocs / name
        workdir = WORK / "frameworks" / name
        sample = cut(source, workdir, queries=args.queries, max_chars=args.max_chars)
        log(f"{name}: {sample}")
        qrels = json.loads((workdir / "qrels.json").read_text("utf-8"))
        systems: dict[str, Any] = {}
        for system in (*OURS, *PEERS):
            log(f"{name}: {system}")
            if system in OURS:
                command = [sys.executable, "-m", "benchmarks.frameworks", "--child"]
            else:
                command = [args.peer_python, str(REPO / "benchmarks" / "frameworks_peers.py")]
            data = _child([*command, system, str(workdir)])
            systems[system] = {
                "ndcg@10": round(_ndcg(qrels, data["run"]), 4),
                "median_ms": round(statistics.median(data["latency_ms"]), 2),
                "build_s": round(data["build_s"], 1),
                "chunks": data["chunks"],
            }
            log(f"{name}: {system}: {systems[system]}")
        results["collections"][name] = {"sample": sample, "systems": systems}
        for system, figures in systems.items():
            rows.append((name, system, figures))
    results["load_average"] = os.getloadavg()
    print(f"\n{'collection':<12} {'system':<24} {'nDCG@10':>8} {'ms/query':>9} {'build s':>8}")
    for name, system, f in rows:
        print(
            f"{name:<12} {system:<24} {f['ndcg@10']:>8.4f} {f['median_ms']:>9.2f} "
            f"{f['build_s']:>8.1f}"
        )
    print(f"load average at the end: {results['load_average']}")
    save_result("frameworks", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
