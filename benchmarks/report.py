"""Turn ``benchmarks/results/*.json`` into ``benchmarks/RESULTS.md``.

Every ratio is computed from figures measured in one process run (see ``common``);
each goal of the benchmark issue is listed as met, missed (by how much) or not measured.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import BENCH_DIR, RESULTS, machine_info, version
from twokeys.dense.selection import DEFAULT_THRESHOLD

COMMANDS = """\
make bench                                   # venv + peers + every part + this file
benchmarks/.venv/bin/python -m benchmarks bm25        # or: cold-start, bm25-build, embedding, ...
benchmarks/.venv/bin/python -m benchmarks vectors --doc-words 32   # as in the table below
benchmarks/.venv/bin/python -m benchmarks scale --sizes 10000 100000 1000000
benchmarks/.venv/bin/python -m benchmarks scale --sizes 10000 100000 1000000 --query-only
benchmarks/.venv/bin/python -m benchmarks scale lexical --sizes 10000 100000   # BM25 only
benchmarks/.venv/bin/python -m benchmarks scale chunking --sizes 100000 1000000 --before dda168a
benchmarks/.venv/bin/python -m benchmarks report      # rewrite this file from results/
"""


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _mb_private(row: dict[str, Any], stage: str) -> str:
    total = f"{row[f'{stage}_rss_mb']:,.0f}"
    private = row.get(f"{stage}_private_mb")
    return total if private is None else f"{total} ({private:,.0f})"


def _cold(row: dict[str, Any]) -> str:
    cold = row.get("cold_open")
    if not cold:
        return "-"
    return f"{cold['load_plus_first_query_s']:.2f} / {cold['first_hybrid_query_s']:.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    def cell(value: object) -> str:
        if value is None:
            return "-"
        if isinstance(value, float):
            return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
        return str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def _goal(name: str, met: bool | None, detail: str) -> tuple[str, str, str]:
    verdict = "not measured" if met is None else ("met" if met else "**missed**")
    return (name, verdict, detail)


def _memory_goal(mem: dict[str, Any]) -> tuple[str, str, str]:
    """The build's peak-memory goal: traced peak and peak RSS both at most bm25s', for
    `build_index` and for whole documents."""

    def ratio(name: str, key: str) -> float:
        return float(mem[name][key]) / max(float(mem["bm25s"][key]), 1e-9)

    return _goal(
        "peak memory <= bm25s",
        max(
            ratio(n, key)
            for n in ("twokeys-index", "twokeys-docs")
            for key in ("traced_build_peak_mb", "build_delta_mb")
        )
        <= 1.0,
        "traced build peak: `build_index` "
        f"{ratio('twokeys-index', 'traced_build_peak_mb'):.2f}x, whole documents "
        f"{ratio('twokeys-docs', 'traced_build_peak_mb'):.2f}x bm25s; peak RSS Δ "
        f"{ratio('twokeys-index', 'build_delta_mb'):.2f}x and "
        f"{ratio('twokeys-docs', 'build_delta_mb'):.2f}x",
    )


def bm25_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    single = data["single_query"]
    out = [
        "## BM25: twokeys vs bm25s vs rank_bm25 (SciFact)",
        "",
        f"{data['documents']:,} documents (title + text), {data['queries']} test queries; "
        f"twokeys' `build_index` chunks them into {data['twokeys_chunks']:,} chunks. "
        f"k1 = {data['params']['k1']}, b = {data['params']['b']}, top-{data['params']['k_speed']}"
        f", one thread (OMP/OPENBLAS/MKL = 1), median of {data['params']['rounds']} "
        "interleaved rounds; a query's time includes tokenising it. Versions: "
        + ", ".join(f"{k} {v}" for k, v in data["versions"].items())
        + ".",
        "",
        "- `twokeys-index`: `build_index(IndexOptions(encoder=None))` + `Index.search(mode='bm25')`"
        " (chunks; `Hit` objects with each chunk's text, title and path): what a user calls.",
        "- `twokeys-docs`: twokeys' analyzer + `build_term_matrix` + `bm25_weights` + "
        "`ArrayLexicalIndex` on whole documents: like for like with bm25s; its batch mode is "
        "`ArrayLexicalIndex.search_many`.",
        "- `bm25s`: called as its README calls it, with its defaults (`BM25()`: numpy backend, "
        "`method='lucene'`, k1 1.5, b 0.75; `tokenize(query, stemmer=stemmer)` then "
        "`retrieve(query_tokens, k=10)`, the default `n_threads=0`), progress bars off; corpus "
        "with its English stopwords and PyStemmer Porter2. `bm25s-numba`: the same with "
        "`BM25(backend='numba')`, its documented faster mode. `rank_bm25`: `BM25Okapi` on "
        "twokeys analyzer tokens.",
        "",
    ]
    check = data.get("peer_call_slowdown_vs_readme")
    if check:
        out += [
            "Peer check, same run: the benchmark's bm25s call took "
            + ", ".join(f"{v:.2f}x ({k})" for k, v in check.items())
            + " the time of bm25s' README lines written out separately "
            "(`benchmarks/peer_calls.py`; `tests/integration/test_peer_calls.py` fails above "
            "1.5x).",
            "",
        ]
    ref = single["bm25s"]["qps"]
    mem = data["memory"]
    rows = []
    for name in ("twokeys-index", "twokeys-docs", "bm25s", "bm25s-numba", "rank_bm25"):
        if name not in single:
            continue
        rows.append(
            (
                name,
                single[name]["qps"],
                single[name]["ms_per_query"],
                single[name]["qps"] / ref,
                single[name].get("cpu_ms_per_query"),
                (single["bm25s"]["cpu_ms_per_query"] / single[name]["cpu_ms_per_query"])
                if "cpu_ms_per_query" in single[name]
                else None,
                mem[name]["traced_retained_mb"],
            )
        )
    out += _table(
        (
            "system",
            "queries/s",
            "ms/query",
            "speed ÷ bm25s",
            "CPU ms/query",
            "CPU speed ÷ bm25s",
            "index held MB",
        ),
        rows,
    )
    out += [
        "",
        "Index held: tracemalloc's count of the Python + numpy memory the built index (with "
        "its tokenizer/analyzer state) still holds after the build, in a fresh subprocess per "
        "system. Build time and build memory are measured on their own, cold and in "
        "interleaved rounds, in the next section (`benchmarks bm25-build`): this run builds "
        "each system once, as set-up for its queries.",
        "",
        f"Batch mode (all {data['queries']} queries at once; `search_many` gives the same "
        "hits as one query at a time). CPU ÷ wall: this process's CPU seconds per second "
        "during the mode, above 1 when both cores worked at once (other load on the machine "
        "keeps it below 2)"
        + (f"; measured {data['batch_measured']}" if data.get("batch_measured") else "")
        + ":",
        "",
    ]
    batch = data["batch"]
    bref_name = max(
        (n for n in batch if n.startswith("bm25s")), key=lambda n: float(batch[n]["qps"])
    )
    bref = batch[bref_name]["qps"]
    out += _table(
        ("mode", "queries/s", f"÷ {bref_name}", "CPU ÷ wall"),
        [(name, b["qps"], b["qps"] / bref, b.get("cpu_per_wall")) for name, b in batch.items()],
    )
    out += ["", "Quality (nDCG@10 and R@100 over documents; chunk hits collapsed):", ""]
    out += _table(
        ("system", "nDCG@10", "R@100"),
        [(n, q["nDCG@10"], q["R@100"]) for n, q in data["quality"].items()],
    )
    pys = data.get("pyserini", {})
    out += ["", f"Pyserini: {pys.get('status', 'not run')}."]
    if "build_s" in pys:
        out.append(
            f"Lucene index build {pys['build_s']:.1f} s (JVM start included, 1 thread), "
            f"search of all queries at depth 100 {pys['search_s']:.1f} s ({pys.get('jar')})."
        )
    out.append("")

    def cpu_ratio(name: str, peer: str) -> str:
        if "cpu_ms_per_query" not in single[name]:
            return ""
        a, b = single[name]["cpu_ms_per_query"], single[peer]["cpu_ms_per_query"]
        return f"; CPU time {b / a:.2f}x ({1000 * a:.0f} vs {1000 * b:.0f} µs)"

    speed_user = single["twokeys-index"]["qps"] / ref
    tk = single["twokeys-index"]["ms_per_query"], single["bm25s"]["ms_per_query"]
    goals.append(
        _goal(
            "BM25 `Index.search` (hits with text) >= 1.5x bm25s' default (SciFact, one query "
            "at a time)",
            speed_user >= 1.5,
            f"{speed_user:.2f}x ({1000 * tk[0]:.0f} µs vs {1000 * tk[1]:.0f} µs a query)"
            + cpu_ratio("twokeys-index", "bm25s"),
        )
    )
    if "bm25s-numba" in single:
        numba_ref = single["bm25s-numba"]["qps"]
        speed = single["twokeys-docs"]["qps"] / numba_ref
        ms = single["twokeys-docs"]["ms_per_query"], single["bm25s-numba"]["ms_per_query"]
        goals.append(
            _goal(
                "BM25 arrays (`ArrayLexicalIndex`, whole documents) >= 1.5x bm25s' numba backend",
                speed >= 1.5,
                f"{speed:.2f}x ({1000 * ms[0]:.0f} µs vs {1000 * ms[1]:.0f} µs a query)"
                + cpu_ratio("twokeys-docs", "bm25s-numba")
                + f"; {single['twokeys-docs']['qps'] / ref:.2f}x bm25s' default",
            )
        )
    many_1 = batch.get("twokeys-docs search_many, 1 thread")
    many_2 = batch.get("twokeys-docs search_many, 2 threads")
    user_many = batch.get("twokeys-index Index.search_many")
    if many_1 and many_2 and user_many:
        scaling = many_2["qps"] / many_1["qps"]
        cpu = many_2.get("cpu_per_wall", 0.0)
        goals.append(
            _goal(
                "batch query mode using both cores, faster than the peer's batch",
                (scaling >= 1.2 or cpu >= 1.2) and many_2["qps"] >= bref,
                f"`search_many` on 2 threads: {many_2['qps'] / bref:.2f}x bm25s' fastest "
                f"batch ({bref_name}), {scaling:.2f}x its own 1 thread (CPU ÷ wall {cpu:.2f}); "
                f"`Index.search_many` {user_many['qps'] / bref:.2f}x",
            )
        )
    else:
        goals.append(_goal("batch query mode using both cores", None, "no twokeys batch run"))
    if _load("bm25-build") is None:  # else the build section sets these goals
        build = data["build_s"]["twokeys-docs"] / data["build_s"]["bm25s"]
        build_user = data["build_s"]["twokeys-index"] / data["build_s"]["bm25s"]
        goals.append(
            _goal(
                "index build time <= bm25s",
                max(build, build_user) <= 1.0,
                f"twokeys-docs {build:.2f}x, twokeys-index (chunk + SQLite) {build_user:.2f}x "
                "bm25s' time",
            )
        )

        goals.append(_memory_goal(mem))
    q = data["quality"]
    if "pyserini (Lucene)" in q:
        lucene = q["pyserini (Lucene)"]["nDCG@10"]
        match = q["twokeys-docs@lucene-analyzer"]["nDCG@10"]
        default = q["twokeys-docs"]["nDCG@10"]
        goals.append(
            _goal(
                "nDCG@10 within 0.005 of Pyserini (matching analyzer settings)",
                abs(match - lucene) <= 0.005,
                f"Lucene {lucene:.4f}; twokeys Porter + Lucene stopwords {match:.4f} "
                f"({match - lucene:+.4f}); twokeys default {default:.4f} ({default - lucene:+.4f})",
            )
        )
    else:
        goals.append(_goal("nDCG@10 within 0.005 of Pyserini", None, pys.get("status", "")))
    return out


def bm25_build_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    wall, mem = data["median_wall_s"], data["memory"]
    cpu_med = data["median_cpu_s"]
    ref_wall, ref_cpu = wall["bm25s"], cpu_med["bm25s"]
    load = ", ".join(f"{x:.1f}" for x in data["load_average"])
    rows = [
        (
            name,
            wall[name],
            wall[name] / ref_wall,
            cpu_med[name],
            cpu_med[name] / ref_cpu,
            " / ".join(f"{w:.2f}" for w in data["wall_s"][name]),
            mem[name]["build_delta_mb"],
            mem[name]["traced_build_peak_mb"],
        )
        for name in wall
    ]
    stages = ", ".join(f"{k} {v:.2f} s" for k, v in data["stages_s"].items())
    out = [
        "## BM25 index build: twokeys vs bm25s (SciFact)",
        "",
        f"{data['documents']:,} documents; every build cold (twokeys' shared analyzer and its "
        f"term caches dropped first, as in a fresh process), {data['rounds']} interleaved rounds "
        "in one process, order alternating; medians. Every system builds in one process. "
        "`twokeys-index`: `build_index(IndexOptions(encoder=None))` (read, chunk, analyse, "
        "lexical arrays, SQLite + hit files, commit); `twokeys-docs`: the build's analysis "
        "(`analysed_matrix`) + weights on whole documents in memory; "
        "`bm25s`: `tokenize` + `BM25().index` as its README calls them (numpy backend, "
        f"its default), `bm25s-numba` its numba backend. Load average at the end: {load} "
        "(two cores). Versions: "
        + ", ".join(f"{k} {v}" for k, v in data["versions"].items())
        + ".",
        "",
        *_table(
            (
                "system",
                "build s",
                "÷ bm25s",
                "CPU s",
                "CPU ÷ bm25s",
                "each round s",
                "peak RSS Δ MB",
                "traced peak MB",
            ),
            rows,
        ),
        "",
        f"`twokeys-index` stages (median, from each stage's start to its last step): {stages}; "
        f"the rest, {wall['twokeys-index'] - sum(data['stages_s'].values()):.2f} s, is opening "
        "the index, laying out the postings, the weights, SQLite, the hit files and the commit.",
        "",
    ]
    user, docs = wall["twokeys-index"] / ref_wall, wall["twokeys-docs"] / ref_wall
    user_cpu = cpu_med["twokeys-index"] / ref_cpu
    goals.append(
        _goal(
            "index build time <= bm25s",
            max(user, docs) <= 1.0,
            f"`build_index` {user:.2f}x bm25s' time (CPU {user_cpu:.2f}x), whole-document "
            f"arrays {docs:.2f}x (CPU {cpu_med['twokeys-docs'] / ref_cpu:.2f}x); cold builds, "
            f"load {data['load_average'][0]:.1f} on two cores",
        )
    )

    goals.append(_memory_goal(mem))
    return out


def embedding_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    corpus = data["corpus"]
    lat = data["query_latency_ms"]
    agree = data["agreement"]
    st = corpus["sentence-transformers"]
    default = "twokeys-onnx-int8"
    out = [
        "## Embedding: default ONNX encoder vs sentence-transformers (all-MiniLM-L6-v2)",
        "",
        f"{data.get('passage_source', str(data['passages']) + ' SciFact documents')} "
        "(title + text, truncated at 256 tokens), "
        f"{data['threads']} threads each, each library's default batches (sentence-transformers "
        f"{data['batch_size']} texts), systems taking turns over "
        f"{data.get('slices', data.get('rounds', 1))} slices of the passages; "
        f"{data['queries']} queries embedded one at a time, interleaved. Versions: "
        + ", ".join(f"{k} {v}" for k, v in data["versions"].items())
        + ".",
        "",
    ]
    settings = data.get("settings")
    if settings:
        out += [
            f"`{default}` (the default encoder): "
            + "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in settings.items())
            + ".",
            "",
        ]
    out += _table(
        (
            "encoder",
            "passages/s",
            "÷ sentence-transformers",
            "÷ s-t, CPU time",
            "query p50 ms",
            "query p95 ms",
        ),
        [
            (
                name,
                c["passages_per_s"],
                c["passages_per_s"] / st["passages_per_s"],
                c["passages_per_cpu_s"] / st["passages_per_cpu_s"]
                if "passages_per_cpu_s" in c
                else None,
                lat[name]["p50"] if name in lat else None,
                lat[name]["p95"] if name in lat else None,
            )
            for name, c in corpus.items()
        ],
    )
    out += [
        "",
        f"Agreement ({default} vs float32 PyTorch): passage cosine mean "
        f"{agree['passage_cosine_mean']:.4f}, 5th percentile {agree['passage_cosine_p5']:.4f}, "
        f"min {agree['passage_cosine_min']:.4f}; top-10 overlap of the queries' passage "
        f"rankings {agree['query_top10_overlap_mean']:.3f}.",
    ]
    for key, what in (
        ("agreement_with_float32_graph", "the same fused graph all in float32"),
        ("agreement_with_shipped_graph", "the package's own graph"),
    ):
        other = data.get(key)
        if other:
            out.append(
                f"Against {what}: passage cosine mean {other['passage_cosine_mean']:.4f}, "
                f"min {other['passage_cosine_min']:.4f}, top-10 overlap "
                f"{other['query_top10_overlap_mean']:.3f}."
            )
    quality = data.get("quality", {})
    if quality.get("ndcg_at_10"):
        out += [
            "",
            f"nDCG@10 of exact dense search on {quality['collection']} (whole documents):",
            "",
            *_table(("encoder", "nDCG@10"), list(quality["ndcg_at_10"].items())),
        ]
    out.append("")
    ratio = data["corpus_ratio_onnx_over_st"]
    before = data.get("corpus_ratio_default_over_before")
    mix = _load("embedding-mix")
    mix_text = ""
    if mix is not None:
        mix_speed = {n: c["passages_per_s"] for n, c in mix["corpus"].items()}
        mix_ratio = mix["corpus_ratio_onnx_over_st"]
        # a run from before the int8 graph has no float32 row: its default was float32
        older = "agreement_with_float32_graph" not in mix
        was = " (float32 graph, the default then; not re-run)" if older else ""
        out += [
            f"A second run, over a mixed corpus ({mix['passage_source']}; "
            "`--mix`, results/embedding-mix.json), the kind of texts a knowledge base holds"
            + (
                ", measured before the default graph's int8 products: its first row is the "
                "float32 graph"
                if older
                else ""
            )
            + ":",
            "",
            *_table(
                ("encoder", "passages/s", "÷ sentence-transformers"),
                [(n, v, v / mix_speed[ST_NAME]) for n, v in mix_speed.items()],
            ),
            "",
        ]
        mix_text = f"; {mix_ratio:.2f}x on the mixed corpus of the six collections{was}"
    goals.append(
        _goal(
            "corpus embedding throughput >= 1.5x sentence-transformers",
            ratio >= 1.5,
            f"{ratio:.2f}x on SciFact documents (nearly all cut at 256 tokens)"
            + (f" ({before:.2f}x the float32 graph, the default before)" if before else "")
            + mix_text
            + f"; query latency p50 {lat[default]['p50']:.1f} ms "
            f"vs {lat['sentence-transformers']['p50']:.1f} ms",
        )
    )
    return out


ST_NAME = "sentence-transformers"


def vectors_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    hnsw = data.get("twokeys_hnsw", {})
    out = [
        "## Vector search: exact vs twokeys HNSW vs ANN peers",
        "",
        f"{data['n']:,} vectors of dimension {data['dim']} made from real SciFact embeddings "
        + (
            f"(of each document's first {data['doc_words']} words, to save time) "
            if data.get("doc_words")
            else ""
        )
        + "(two documents mixed + noise, normalised); the 300 real SciFact test queries; "
        f"recall@10 against exact float32; one query at a time, one thread. twokeys HNSW "
        f"(`twokeys.dense.ann`, faiss' IndexHNSWFlat inside) is built as `twokeys index` "
        f"builds it: one "
        f"thread, M = {hnsw.get('m')}, ef_construction = {hnsw.get('ef_construction')}, "
        f"then saved and reopened memory-mapped; its times include re-scoring the candidates and "
        f"building `ScoredChunk` rows. Peers are built with {data['build_threads']} threads, "
        f"HNSW M = {data['hnsw']['M']}, ef_construction = {data['hnsw']['ef_construction']}. "
        "Versions: " + ", ".join(f"{k} {v}" for k, v in data["versions"].items()) + ".",
        "",
    ]
    out += _table(
        ("system", "recall@10", "p50 ms", "p95 ms", "build s"),
        [(n, s["recall@10"], s["p50"], s["p95"], s["build_s"]) for n, s in data["systems"].items()],
    )
    if hnsw:
        out += [
            "",
            f"twokeys HNSW at {data['n']:,} vectors: graph {hnsw['graph_mb']:,.0f} MB on disk "
            f"(faiss keeps its own float32 copy of the vectors, memory-mapped), opened in "
            f"{hnsw['load_s']:.2f} s.",
        ]
    if data.get("unavailable"):
        out += [
            "",
            "Not measured: " + "; ".join(f"{k}: {v}" for k, v in data["unavailable"].items()),
        ]
    by_size = data.get("by_size_ms", {})
    estimates = data.get("hnsw_estimates", {})
    out += [
        "",
        f"Exact search vs twokeys HNSW (ef = {hnsw.get('ef_search')}) by size, first "
        f"{data.get('by_size_queries', 100)} queries (ms). `float16 before`: numpy's float16 "
        "product, as twokeys searched float16 storage before (20 queries); `est.`: "
        "extrapolated from the largest HNSW build (build n log n, latency log n), not run:",
        "",
    ]
    rows = []
    for size, v in by_size.items():
        h = v.get("twokeys HNSW")
        est = estimates.get(size)
        rows.append(
            (
                f"{int(size):,}",
                v["exact float32"]["p50"],
                v["exact float32"]["p95"],
                v["exact float16"]["p50"],
                v.get("numpy float16 (before)", {}).get("p50"),
                h["p50"] if h else (f"{est['p50']:.2f} est." if est else None),
                h["p95"] if h else None,
                h["recall@10"] if h else None,
                h["build_s"] if h else (f"{est['build_s']:,.0f} est." if est else None),
            )
        )
    out += _table(
        (
            "vectors",
            "exact f32 p50",
            "exact f32 p95",
            "exact f16 p50",
            "f16 before p50",
            "HNSW p50",
            "HNSW p95",
            "HNSW recall@10",
            "HNSW build s (1 thread)",
        ),
        rows,
    )
    quality = data["scifact_storage_quality"]
    out += ["", "Quantised storage, real SciFact documents and qrels, exact search:", ""]
    base = quality["float32"]["nDCG@10"]
    out += _table(
        ("storage", "nDCG@10", "Δ vs float32", "recall@10 on the synthetic base"),
        [
            (
                name,
                q["nDCG@10"],
                q["nDCG@10"] - base,
                {
                    "float32": 1.0,
                    "float16": data["systems"]["twokeys exact float16"]["recall@10"],
                }.get(name, data["systems"].get("exact int8 (per-dim scale)", {}).get("recall@10")),
            )
            for name, q in quality.items()
        ],
    )
    out.append("")
    exact = data["systems"]["twokeys exact float32"]
    ours = data["systems"].get(f"twokeys HNSW M={hnsw.get('m')} ef={hnsw.get('ef_search')}")
    if ours is not None:
        detail = (
            f"twokeys HNSW (default M={hnsw['m']}, ef={hnsw['ef_search']}): recall "
            f"{ours['recall@10']:.3f}, p50 {ours['p50']:.2f} ms vs exact {exact['p50']:.2f} ms "
            f"at {data['n']:,} vectors; `auto` uses it from {DEFAULT_THRESHOLD:,} vectors"
        )
        met = ours["recall@10"] >= 0.95
    else:
        detail, met = "twokeys HNSW not measured", None
    goals.append(_goal("ANN above a size threshold with recall@10 >= 0.95", met, detail))
    f16 = quality["float16"]["nDCG@10"] - base
    int8 = quality["int8 (per-dim scale)"]["nDCG@10"] - base
    speed = data["systems"]["twokeys exact float16"]["p50"] / exact["p50"]
    before = [
        (int(size), v["numpy float16 (before)"]["p50"] / v["exact float32"]["p50"])
        for size, v in by_size.items()
        if "numpy float16 (before)" in v
    ]
    goals.append(
        _goal(
            "quantised storage option with measured quality cost",
            True,
            f"float16 (`--float16`): nDCG@10 {f16:+.4f}, recall@10 "
            f"{data['systems']['twokeys exact float16']['recall@10']:.3f}; exact float16 search "
            f"{speed:.2f}x float32's time"
            + (
                f" (numpy's float16 product, before: {before[-1][1]:.0f}x at {before[-1][0]:,})"
                if before
                else ""
            )
            + f"; int8 measured here only ({int8:+.4f})",
        )
    )
    return out


def _scale_goals(rows: list[dict[str, Any]], goals: list[tuple[str, str, str]]) -> None:
    biggest = rows[-1]
    at_1m = biggest["chunks"] >= 1_000_000
    where = f"at {biggest['chunks']:,} chunks" + ("" if at_1m else " (1M not run: see notes)")
    goals.append(
        _goal(
            "1M-chunk index builds in one command with progress; memory reported",
            True if at_1m else None,
            f"{biggest['build_s']:,.0f} s, build peak RSS {biggest['peak_rss_mb']:,.0f} MB, "
            f"{biggest['disk_mb']:,.0f} MB on disk {where} (vectors derived, not embedded)",
        )
    )
    load = biggest["load_plus_first_query_s"]
    first_hybrid = biggest["first_hybrid_query_s"]
    cold = biggest.get("cold_open")
    cold_text = (
        f"; from a cold page cache (dropped first, as after a reboot) "
        f"{cold['load_plus_first_query_s']:.2f} s + {cold['first_hybrid_query_s']:.2f} s = "
        f"{cold['load_plus_first_query_s'] + cold['first_hybrid_query_s']:.2f} s"
        if cold
        else "; a cold page cache was not measured (dropping it needs root)"
        if "cold_open" in biggest
        else ""
    )
    goals.append(
        _goal(
            "1M-chunk index loads memory-mapped in < 2 s",
            (load + first_hybrid < 2.0) if at_1m else None,
            f"files in the page cache (as after a build or recent use): open + first BM25 "
            f"query {load:.2f} s {where} (lexical arrays memory-mapped), then the first "
            f"hybrid query {first_hybrid:.2f} s, which opens the {biggest['vector_index']} "
            f"(an HNSW graph: links read, vectors memory-mapped): "
            f"{load + first_hybrid:.2f} s to a first hybrid answer" + cold_text,
        )
    )
    hybrid = biggest["latency_ms"]["twokeys hybrid"]
    goals.append(
        _goal(
            "hybrid p50 <= 20 ms at 1M chunks, nothing excluded",
            (hybrid["p50"] <= 20.0) if at_1m else None,
            f"p50 {hybrid['p50']:.0f} ms {where} ({hybrid['p50'] / 20:.1f}x the goal); "
            + ", ".join(
                f"{r['chunks']:,}: {r['latency_ms']['twokeys hybrid']['p50']:.0f} / "
                f"{r['latency_ms']['twokeys hybrid']['p95']:.0f} ms"
                for r in rows
            )
            + " (p50 / p95)",
        )
    )


def scale_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    rows = [r for r in data["rows"] if "stages_ms" in r]  # rows of the current layout
    if not rows:
        return ["## Scale: 10k to 1M chunks", "", "No rows of the current layout.", ""]
    check = data["derived_check"]
    out = [
        "## Scale: 10k to 1M chunks",
        "",
        f"Synthetic corpus: documents of 2-5 sentences sampled from the "
        f"{data['pool_sentences']:,} whole sentences of the six shared collections (no "
        "document repeated; nearly all one chunk). Each size is built by one `build_index` "
        "call (default options, progress on stderr) in a fresh subprocess, then opened and "
        "queried in another; the 300 SciFact test queries, top-10.",
        "",
        "**Dense vectors are derived, not embedded.** Embedding every chunk for real would "
        "take hours per 100k chunks here (the last column of the first table), so every pool "
        "sentence was embedded once with the default encoder and a chunk's vector is the "
        "normalised mean of its sentences' real vectors. Checked against real embeddings "
        f"of {check['documents']:,} synthetic documents: cosine {check['cosine_mean']:.3f} "
        f"mean ({check['cosine_p5']:.3f} at the 5th percentile; two unrelated documents: "
        f"{check['cosine_unrelated_mean']:.3f}), top-10 overlap of the queries' exact "
        f"dense rankings {check['top10_overlap']:.2f}. Queries are embedded for real, at "
        "query time, by the default encoder. Build times therefore exclude embedding; "
        "search cost depends on the vectors' number, dimension and geometry, not on "
        "where they came from.",
        "",
        "Cost by size (build: chunking with the encoder's tokenizer, derived vectors, "
        "lexical index, SQLite (the rest), HNSW graph where used; peak RSS of the build process, Δ "
        "over its RSS before the build, which holds the encoder and the pool's vectors; "
        "load: `open_index` + first BM25 query, then the first hybrid query, which loads "
        "the vector index, with the index's files in the page cache; cold: the same from a "
        "dropped page cache; RSS after: growth over the RSS before opening, and in brackets "
        "its private part (the rest is pages of memory-mapped files, shared with the page "
        "cache)):",
        "",
    ]
    table = []
    for r in rows:
        stages = r.get("build_stages_s", {})
        split = [
            next((v for k, v in stages.items() if k.startswith(prefix)), 0.0)
            for prefix in ("Reading", "Embedding", "Lexical", "Vector index")
        ]
        table.append(
            (
                f"{r['chunks']:,}",
                r["build_s"],
                " / ".join(f"{v:,.0f}" for v in split),
                f"{r['peak_rss_mb']:,.0f} ({r['build_delta_mb']:,.0f})",
                r["disk_mb"],
                r["load_plus_first_query_s"],
                _mb_private(r, "load"),
                r["first_hybrid_query_s"],
                _mb_private(r, "hybrid"),
                _cold(r),
                r["vector_index"],
                r["real_embed_estimate_s"] / 3600,
            )
        )
    out += _table(
        (
            "chunks",
            "build s",
            "of which chunking / vectors / lexical / HNSW s",
            "build peak RSS MB (Δ)",
            "disk MB",
            "open + 1st BM25 query s",
            "RSS after MB",
            "1st hybrid query s",
            "RSS after MB",
            "cold: open + 1st BM25 / 1st hybrid s",
            "vector index",
            "real embedding would add (h)",
        ),
        table,
    )
    out += [
        "",
        "Query latency (ms). BM25 (`Index.search(mode='bm25')`: analyzer, scoring, "
        "hits) and bm25s (its tokenizer + `retrieve`, over the same texts) interleaved "
        "per query, a query's time the median of 3 tries; then the hybrid "
        "(`Index.search()`, default fusion, one try). queries/s is 300 / the sum of the "
        "300 times, so slow queries count. bm25s columns are empty for rows measured "
        "before issue 11, which timed bm25s through `retrieve(n_threads=1)` (a thread "
        "pool built per query); BM25 against bm25s at scale is the next section's:",
        "",
    ]
    table = []
    for r in rows:
        lat = r["latency_ms"]
        fair = r.get("bm25s_call") == "readme"  # earlier runs timed retrieve(n_threads=1)
        tk, hy = lat["twokeys bm25"], lat["twokeys hybrid"]
        b = lat.get("bm25s", {}) if fair else {}
        table.append(
            (
                f"{r['chunks']:,}",
                tk["p50"],
                tk["p95"],
                b.get("p50"),
                b.get("p95"),
                (r["qps"]["twokeys bm25"] / r["qps"]["bm25s"]) if b else None,
                (b["p50"] / tk["p50"]) if b else None,
                r.get("bm25s_build_s"),
                r.get("bm25s_rss_delta_mb"),
                hy["p50"],
                hy["p95"],
                " / ".join(f"{x:.1f}" for x in r["load_average"]),
            )
        )
    out += _table(
        (
            "chunks",
            "BM25 p50",
            "BM25 p95",
            "bm25s p50",
            "bm25s p95",
            "BM25 queries/s ÷ bm25s",
            "bm25s p50 ÷ BM25 p50",
            "bm25s build s",
            "bm25s RSS Δ MB",
            "**hybrid p50**",
            "**hybrid p95**",
            "load avg 1/5/15 min",
        ),
        table,
    )
    out += [
        "",
        "Where a hybrid query's time goes (ms, p50 / mean over the queries; the same "
        "`Index.search(mode='hybrid')` through timing proxies; `bm25 explain` is the "
        "lexical index's `explain`/`idf`/`has_term` calls: the matched terms of each of the "
        "100 BM25 candidates and the idf that adaptive fusion reads; "
        "`other` is fusion, `Hit` objects and the proxies):",
        "",
    ]
    from benchmarks.scale import STAGES

    out += _table(
        ("chunks", *STAGES, "total"),
        [
            (
                f"{r['chunks']:,}",
                *(
                    f"{r['stages_ms'][s]['p50']:.1f} / {r['stages_ms'][s]['mean']:.1f}"
                    for s in STAGES
                ),
                f"{r['latency_ms']['staged hybrid']['p50']:.1f} / "
                f"{r['latency_ms']['staged hybrid']['mean']:.1f}",
            )
            for r in rows
        ],
    )
    if data.get("plot"):
        out += ["", f"![cost growth with corpus size]({data['plot']})"]
    out += [
        "",
        "Measured code (commit, and files of `src/` changed from it): "
        + "; ".join(
            f"{r['chunks']:,}: built {r.get('build_code', '?')}, queried {r.get('query_code', '?')}"
            for r in rows
        )
        + ".",
        "",
    ]
    _scale_goals(rows, goals)
    return out


def scale_bm25_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    rows = data["rows"]
    out = [
        "## BM25 at scale: twokeys vs bm25s (BM25-only indexes)",
        "",
        "The synthetic corpus of the scale section, indexed without embeddings "
        "(`build_index(IndexOptions(encoder=None))`, one fresh subprocess per size), and "
        "bm25s over the same texts called as its README calls it (`benchmarks/"
        "peer_calls.py`: default numpy backend, and `backend='numba'`). The 300 SciFact "
        "test queries one at a time, top-10, one thread, interleaved per query in "
        "alternating order, a query's time the median of 3 tries; twokeys' time is "
        "`Index.search(mode='bm25')`, hits with text. queries/s is 300 / the sum of the "
        "300 times. Versions: " + ", ".join(f"{k} {v}" for k, v in data["versions"].items()),
        "",
    ]
    table = []
    for r in rows:
        lat, qps = r["latency_ms"], r["qps"]
        tk = lat["twokeys bm25"]
        table.append(
            (
                f"{r['chunks']:,}",
                r["build_s"],
                r.get("bm25s_build_s"),
                tk["p50"],
                tk["p95"],
                lat["bm25s"]["p50"],
                lat["bm25s"]["p95"],
                qps["twokeys bm25"] / qps["bm25s"],
                lat["bm25s"]["p50"] / tk["p50"],
                (r["cpu_ms"]["bm25s"]["mean"] / r["cpu_ms"]["twokeys bm25"]["mean"])
                if "cpu_ms" in r
                else None,
                lat.get("bm25s-numba", {}).get("p50"),
                (qps["twokeys bm25"] / qps["bm25s-numba"]) if "bm25s-numba" in qps else None,
                " / ".join(f"{x:.1f}" for x in r["load_average"]),
                r.get("code", "?"),
            )
        )
    out += _table(
        (
            "chunks",
            "twokeys build s",
            "bm25s build s",
            "twokeys p50 ms",
            "twokeys p95 ms",
            "bm25s p50 ms",
            "bm25s p95 ms",
            "queries/s ÷ bm25s",
            "p50 ÷ (bm25s / twokeys)",
            "mean CPU time ÷ (bm25s / twokeys)",
            "bm25s-numba p50 ms",
            "queries/s ÷ bm25s-numba",
            "load avg",
            "code",
        ),
        table,
    )
    out.append("")
    biggest = rows[-1]
    at_1m = biggest["chunks"] >= 1_000_000
    ratio = biggest["qps"]["twokeys bm25"] / biggest["qps"]["bm25s"]
    lat = biggest["latency_ms"]
    goals.append(
        _goal(
            "BM25 `Index.search` >= 1.5x bm25s' default on a 1M-chunk corpus",
            (ratio >= 1.5) if at_1m else None,
            "; ".join(
                f"{r['chunks']:,} chunks: p50 "
                f"{r['latency_ms']['bm25s']['p50'] / r['latency_ms']['twokeys bm25']['p50']:.2f}x "
                f"({r['latency_ms']['twokeys bm25']['p50']:.2f} vs "
                f"{r['latency_ms']['bm25s']['p50']:.2f} ms), queries/s "
                f"{r['qps']['twokeys bm25'] / r['qps']['bm25s']:.2f}x"
                for r in rows
            )
            + ("" if at_1m else "; 1M not re-run (see notes), so not measured")
            + (
                f"; at {biggest['chunks']:,} bm25s' numpy top-k has a slow tail (p95 "
                f"{lat['bm25s']['p95']:.0f} ms; notes)"
                if lat["bm25s"]["p95"] > 10 * lat["bm25s"]["p50"]
                else ""
            ),
        )
    )
    return out


def scale_chunking_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    rows = data["rows"]
    codes = list(rows[0]["median_wall_s"])
    before = next((c for c in codes if c != "now"), None)
    out = [
        "## Chunking stage: the build's reading and chunking alone",
        "",
        '`scale chunking`: the build\'s "Reading and chunking" stage alone (`_collect` as '
        "`build_index` calls it for a new index, GC paused), each run in a fresh process: the "
        "synthetic corpora with the default encoder's token counter (as the scale builds), "
        "SciFact with it (real text, the counter's word memory empty at the start) and "
        "without an encoder (as its lexical-only build: the approximate counter). "
        + (
            f"`{before}` is that commit's code, run in alternating rounds with this one, side "
            "by side; `same chunks`: every chunk's offsets, heading path and text hashed, one "
            "digest for all runs. "
            if before
            else ""
        )
        + "Medians of each code's runs; CPU includes the tokenizer's threads.",
        "",
    ]
    header = ["corpus", "documents", "chunks", "runs"]
    if before:
        header += ["before wall s", "before CPU s"]
    header += ["now wall s", "now CPU s"]
    if before:
        header += ["wall ÷", "CPU ÷", "same chunks"]
    header += ["now peak RSS MB", "words remembered", "load avg (1 min)", "code"]
    table = []
    for r in rows:
        now = r["runs"]["now"]
        row: list[object] = [
            r["case"],
            f"{now[0]['documents']:,}",
            f"{now[0]['chunks']:,}",
            len(now),
        ]
        wall, cpu = r["median_wall_s"], r["median_cpu_s"]
        if before:
            row += [wall[before], cpu[before]]
        row += [wall["now"], cpu["now"]]
        if before:
            row += [
                f"{wall[before] / wall['now']:.2f}x",
                f"{cpu[before] / cpu['now']:.2f}x",
                "yes" if r["same_chunks"] else "**no**",
            ]
        words = max((x.get("words_remembered") or 0) for x in now)
        loads = sorted(x["load_average"][0] for runs in r["runs"].values() for x in runs)
        row += [
            max(x.get("peak_rss_mb", 0.0) for x in now),
            f"{words:,}" if words else "-",
            f"{loads[0]:.1f}-{loads[-1]:.1f}",
            r.get("code", data["code"]),
        ]
        table.append(row)
    out += [*_table(header, table), ""]
    big = max(
        (r for r in rows if r["counter"] == "encoder"),
        key=lambda r: r["runs"]["now"][0]["chunks"],
        default=None,
    )
    if big is not None:
        chunks = big["runs"]["now"][0]["chunks"]
        wall = big["median_wall_s"]["now"]
        at_1m = chunks >= 1_000_000
        goals.append(
            _goal(
                "1M-chunk build: the chunking stage under 300 s",
                wall < 300 if at_1m else None,
                f"{wall:,.0f} s wall, {big['median_cpu_s']['now']:,.0f} s CPU at {chunks:,} "
                f"chunks ({wall / 300:.2f}x the goal)"
                + (
                    f"; {before}: {big['median_wall_s'][before]:,.0f} s wall, "
                    f"{big['median_cpu_s'][before]:,.0f} s CPU in the same run"
                    if before
                    else ""
                )
                + ("" if at_1m else " (1M not run)"),
            )
        )
    return out


def cold_start_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    """Whole processes on the example KB (``cold_start.py``)."""
    rows = {r["command"]: r for r in data["rows"]}
    base = rows["python -c pass"]
    for name, row_name in (
        ("help", "twokeys --help"),
        ("bm25", "search --mode bm25"),
        ("hybrid", "search (hybrid)"),
    ):
        # judged on CPU time: a start is one thread's work, which on an idle machine
        # takes its CPU time as wall time; the shared machine's load stretches wall time
        row, limit = rows[row_name], data["goals_ms"][name]
        goals.append(
            _goal(
                f"`twokeys {row_name.removeprefix('twokeys ')}` <= {limit:.0f} ms (CPU)",
                row["cpu_ms"] <= limit,
                f"{row['cpu_ms']:.0f} ms CPU, {row['wall_ms']:.0f} ms wall "
                f"(python -c pass: {base['cpu_ms']:.0f} / {base['wall_ms']:.0f} ms)"
                + (
                    f"; the tree before: {before['cpu_ms']:.0f} ms CPU"
                    if (before := rows.get(f"{row_name} (base)"))
                    else ""
                ),
            )
        )
    load = ", ".join(f"{x:.1f}" for x in data.get("load_average", ()))
    return [
        "## cold-start",
        "",
        f"Medians of {data['runs']} processes per command, run in interleaved rounds; CPU is "
        "user + system time of the process (steadier than wall time on a loaded machine); "
        f"peak is the largest resident set seen. Load average at the end: {load}."
        + (
            f" Rows marked (base) ran the source tree {data['base']} in the same rounds."
            if data.get("base")
            else ""
        ),
        "",
        *_table(
            ("command", "wall ms", "CPU ms", "peak MiB"),
            [
                (r["command"], f"{r['wall_ms']:.0f}", f"{r['cpu_ms']:.0f}", f"{r['peak_mb']:.0f}")
                for r in data["rows"]
            ],
        ),
        "",
    ]


def bm25_clean_section(data: dict[str, Any], goals: list[tuple[str, str, str]]) -> list[str]:
    """twokeys against bm25s in its own clean environment (``bm25_clean.py``)."""
    out = [
        "## bm25-clean: BM25 against bm25s in its own environment",
        "",
        f"bm25s installed alone (`pip install {' '.join(data['install'])}`; no tqdm) and "
        "driven in a child process; every documented setup a row; bm25s in twokeys' "
        "environment as second rows. One thread each, every system answering all queries "
        'once per round, rounds interleaved; medians. "twokeys x" is how many times '
        "faster `Index.search` (hits with their text) is than the row, in CPU time (wall "
        "time in brackets).",
        "",
    ]
    for name, part in data["corpora"].items():
        fastest = part["fastest_clean"]
        goals.append(
            _goal(
                f"BM25 `Index.search` >= {part['goal']}x bm25s' fastest setup in its own "
                f"environment ({name})",
                part["speedup_vs_fastest_clean_cpu"] >= part["goal"],
                f"{part['speedup_vs_fastest_clean_cpu']:.2f}x in CPU time "
                f"({part['speedup_vs_fastest_clean']:.2f}x wall) against {fastest}",
            )
        )
        load = ", ".join(f"{x:.1f}" for x in part.get("load_average", ()))
        out += [
            f"### {name}: {part['chunks']:,} twokeys chunks, {part['queries']} queries, "
            f"{part.get('rounds', data['rounds'])} rounds (load {load})",
            "",
            *_table(
                ("system", "µs/query", "CPU µs/query", "twokeys x"),
                [
                    (
                        system,
                        f"{row['us_per_query']:.1f}",
                        f"{row['cpu_us_per_query']:.1f}",
                        f"{row['twokeys_speedup_cpu']:.2f}x ({row['twokeys_speedup']:.2f}x)",
                    )
                    for system, row in part["rows"].items()
                ],
            ),
            "",
            _same_rows_line(part),
            "",
        ]
    return out


def _same_rows_line(part: dict[str, Any]) -> str:
    """Which call was checked for the same rows in both environments, and the packages.
    A run of chosen setups (``--setups``) checks the numba backend's call when the
    Quickstart call is not among them."""
    packages = f"clean environment: {', '.join(part['clean_packages'])}."
    same = part.get("same_top10_as_twokeys_venv")
    if same is None:
        return f"No setup ran in both environments; {packages}"
    call = "the Quickstart call" if "bm25s, clean venv" in part["rows"] else "the numba backend"
    return (
        f"Top-10 rows of {call} identical in both environments on {100 * same:.0f}% of "
        f"the first 50 queries; {packages}"
    )


def write_report(path: Path | None = None) -> Path:
    path = path or BENCH_DIR / "RESULTS.md"
    goals: list[tuple[str, str, str]] = []
    machine = machine_info()
    body: list[str] = []
    for name, section in (
        ("cold-start", cold_start_section),
        ("bm25-clean", bm25_clean_section),
        ("bm25", bm25_section),
        ("bm25-build", bm25_build_section),
        ("embedding", embedding_section),
        ("vectors", vectors_section),
        ("scale", scale_section),
        ("scale-bm25", scale_bm25_section),
        ("scale-chunking", scale_chunking_section),
    ):
        data = _load(name)
        if data is None:
            body += [f"## {name}", "", f"Not run: no `results/{name}.json`.", ""]
            continue
        body += section(data, goals)
    notes_file = BENCH_DIR / "NOTES.md"
    lines = [
        "# twokeys benchmarks: results",
        "",
        "Generated by `python -m benchmarks report` from `benchmarks/results/*.json`; "
        "do not edit by hand (analysis lives in `benchmarks/NOTES.md`, included below). "
        "The machine is shared and noisy: speeds are only compared as ratios measured in "
        "one process run, never across runs.",
        "",
        "Machine: "
        + "; ".join(f"{k} {v}" for k, v in machine.items())
        + f"; twokeys {version('twokeys')}.",
        "",
        "Commands:",
        "",
        "```console",
        COMMANDS.rstrip(),
        "```",
        "",
        "## Goals",
        "",
        *_table(("goal", "verdict", "measured"), goals),
        "",
        *body,
    ]
    if notes_file.exists():
        lines += [notes_file.read_text(encoding="utf-8").rstrip(), ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
