"""Scale: cost growth of a twokeys index from 10k to 1M chunks, with bm25s alongside.

Corpus: synthetic documents made by sampling 2-5 sentences at random from the pool of
sentences of the shared collections (SciFact, Cranfield, CISI, Medline, ADI, CACM) and
joining them, so documents read like the collections but none repeats; nearly all fit
in one chunk. ``python -m benchmarks.scale make --size N`` writes it as BEIR JSONL.

Dense vectors: embedding every chunk with the default encoder costs hours per 100k
chunks on two cores, so the document side is *derived from real embeddings*: every
pool sentence is embedded once with the default encoder (cached), and a chunk's vector
is the L2-normalised mean of the real vectors of the sentences it is made of
(:class:`DerivedEncoder`, passed to ``build_index`` through its ``encoder`` argument,
so ``src/`` is untouched). Queries are embedded for real, at query time, by the
default encoder. Search cost depends on the vectors' count, dimension and (for an ANN
index) their geometry, which sentence means keep close to that of real passages.

Per size, in a fresh subprocess: ``build_index`` with progress (time per stage, peak
RSS, size on disk), plus the default encoder's passages/s on a sample of the chunks, to
estimate what embedding all of them for real would add. In another fresh subprocess:
``open_index`` + first BM25 query (memory-mapped load), first hybrid query (loads the
vector index), RSS; then over the 300 SciFact test queries: ``Index.search(mode="bm25")``
and bm25s (numpy backend, same k1/b, built over the same texts in that process)
interleaved per query, median of 3 tries; then ``Index.search()`` in the default hybrid
mode (nothing excluded: analyzer, query embedding, BM25, vector search, fusion, SQLite
fetch, hits) interleaved with the same search through timing proxies (:class:`_Timed`)
for a per-stage breakdown.

``python -m benchmarks scale lexical --sizes 10000 100000 1000000``: BM25 alone, on
indexes built without embeddings (minutes, not hours, at 1M): ``Index.search(mode=
"bm25")`` against bm25s' default and numba backends (``results/scale-bm25.json``).

``python -m benchmarks scale chunking --sizes 100000 1000000 --before dda168a``: the
build's "Reading and chunking" stage alone (``_collect`` as ``build_index`` calls it, the
default encoder's token counter; SciFact with none, as its lexical-only build), in fresh
processes, and with ``--before`` an older commit's code in alternating rounds, side by
side, its chunks compared by digest (``results/scale-chunking.json``).

Run: ``python -m benchmarks scale`` (10k and 100k; ``--sizes 1000000`` adds 1M, about
two hours on this machine, mostly chunking and the HNSW graph; rows of earlier runs are
kept). ``--query-only`` re-queries indexes built earlier. The pool's real vectors are
made on the first run (58k short sentences with the default encoder: over an hour on
two busy cores; ``python -m benchmarks.scale embed-pool --workers N`` on a bigger
machine) and cached in ``benchmarks/.tmp``, as are real embeddings of 2,000 documents
for :func:`derived_check`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zlib
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from benchmarks.common import (
    DATA,
    RESULTS,
    WORK,
    log,
    peak_rss_mb,
    percentiles,
    private_rss_mb,
    reset_peak_rss,
    rss_mb,
    run_child,
    save_result,
    version,
)

if TYPE_CHECKING:
    from twokeys.dense.encoder import Encoder, Kind

COLLECTIONS = ("scifact", "cranfield", "cisi", "medline", "adi", "cacm")
CORPUS_VERSION = "v2"  # v2: only whole sentences in the pool, so chunks split back into them
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
_WHOLE_SENTENCE = re.compile(r"[A-Z0-9(].*[.!?]")
K = 10
LEXICAL_ROUNDS = 3  # tries per query for BM25 and bm25s; the median is kept
EMBED_SAMPLE = 64  # chunks embedded for real per size, for the passages/s estimate
Vectors = npt.NDArray[np.float32]


# -- corpus ---------------------------------------------------------------------------


def sentence_pool() -> list[str]:
    """Every distinct sentence of the shared collections of 5-61 words that starts with a
    capital, digit or parenthesis and ends with . ! or ?, in file order.

    Joining such sentences with spaces and splitting the result at ``_SENTENCE_END``
    gives them back, which is how :class:`DerivedEncoder` finds a chunk's sentences.
    """
    pool: dict[str, None] = {}
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
                    if 4 <= sentence.count(" ") <= 60 and _WHOLE_SENTENCE.fullmatch(sentence):
                        pool[sentence] = None
    return list(pool)


def corpus_file(size: int) -> Path:
    return WORK / f"synth-{CORPUS_VERSION}-{size}" / "corpus.jsonl"


def index_dir(size: int) -> Path:
    return WORK / f"synth-{CORPUS_VERSION}-{size}.twokeys"


def make_corpus(size: int, seed: int = 0) -> Path:
    """Write (or reuse) a synthetic BEIR corpus of ``size`` documents.

    Document ``i`` is the same in every size (one random stream), so a smaller corpus
    is a prefix of a larger one.
    """
    path = corpus_file(size)
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


def corpus_texts(size: int) -> list[str]:
    with open(make_corpus(size), encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh if line.strip()]


# -- real sentence embeddings, derived chunk vectors -------------------------------------


def _pool_key(pool: Sequence[str], fingerprint: str) -> str:
    digest = hashlib.sha256(fingerprint.encode())
    for sentence in pool:
        digest.update(sentence.encode("utf-8") + b"\n")
    return digest.hexdigest()[:12]


def _model_hash() -> str:
    """sha256 of the default encoder's model file (what its fingerprint is made of)."""
    from twokeys.dense.onnx_minilm import model_files

    digest = hashlib.sha256()
    with open(model_files()[0], "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sentence_vectors_file(pool: Sequence[str]) -> Path:
    """Cache file of the pool's vectors, keyed by the pool and the model."""
    return WORK / f"sentence-vectors-{_pool_key(pool, _model_hash())}.npy"


def _embed_shard(texts: list[str], threads: int) -> Vectors:
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    return OnnxMiniLM(threads=threads).encode(texts, "document")


def embed_sentences(pool: Sequence[str], workers: int = 1, threads: int = 2) -> Vectors:
    """Real default-encoder embeddings of ``pool``, ``workers`` processes of ``threads``."""
    if workers <= 1:
        from twokeys.dense.onnx_minilm import OnnxMiniLM

        advance = _progress("Embedding sentences", len(pool))
        return OnnxMiniLM(threads=threads).encode(list(pool), "document", progress=advance)
    step = -(-len(pool) // (workers * 8))
    shards = [list(pool[i : i + step]) for i in range(0, len(pool), step)]
    with ProcessPoolExecutor(workers) as ex:
        parts = list(ex.map(_embed_shard, shards, [threads] * len(shards)))
    return np.concatenate(parts).astype(np.float32)


def pool_and_vectors() -> tuple[list[str], Vectors]:
    """The sentence pool and its real embeddings (computed once, then cached)."""
    pool = sentence_pool()
    file = sentence_vectors_file(pool)
    if not file.exists():
        log(f"embedding {len(pool)} pool sentences once with the default encoder ({file})")
        WORK.mkdir(parents=True, exist_ok=True)
        np.save(file, embed_sentences(pool))
    vectors = np.load(file).astype(np.float32)
    if vectors.shape[0] != len(pool):
        raise RuntimeError(f"{file}: {vectors.shape[0]} vectors for {len(pool)} sentences")
    return pool, vectors


def _derived_encoder_class() -> type[Encoder]:
    from twokeys.dense.encoder import Encoder

    class DerivedEncoder(Encoder):
        """Queries: the real default encoder. Documents: vectors derived from real ones.

        A document's vector is the L2-normalised mean of the real embeddings of the pool
        sentences it contains. A text with no pool sentence (a chunk cut mid-sentence)
        gets two random pool vectors mixed plus noise, seeded by the text; the counts
        are kept in ``stats``. The id and fingerprint say the vectors are derived, so
        the index can't be searched with the plain default encoder by mistake.
        """

        def __init__(
            self,
            real: Encoder,
            pool: Callable[[], tuple[list[str], Vectors]] | None,
            model_hash: str,
        ) -> None:
            self.real = real
            self.model_hash = model_hash
            self.id = f"bench-derived:{real.id}"
            self.dim = real.dim
            self.max_tokens = real.max_tokens
            self.batch_size = 4096
            self._pool = pool
            self._lookup: dict[str, int] | None = None
            self._vectors: Vectors | None = None
            self.stats = {"texts": 0, "sentences_found": 0, "pieces_missed": 0, "fallback": 0}

        def fingerprint(self) -> str:
            # the model file that embedded the pool, not the query encoder's fingerprint:
            # that one also covers how its graph is run, which does not change the vectors
            return f"sha256:{self.model_hash}+sentence-mean"

        def count_tokens(self, texts: Sequence[str]) -> list[int]:
            return self.real.count_tokens(texts)

        def encode_query(self, text: str) -> Vectors:
            return self.real.encode_query(text)

        def load(self) -> None:
            if self._lookup is None:
                if self._pool is None:
                    raise RuntimeError("this DerivedEncoder was made for queries only")
                sentences, self._vectors = self._pool()
                self._lookup = {s: i for i, s in enumerate(sentences)}

        def embed_batch(self, texts: Sequence[str], kind: Kind) -> Vectors:
            if kind == "query":
                return self.real.embed_batch(texts, kind)
            self.load()
            assert self._lookup is not None and self._vectors is not None
            out = np.empty((len(texts), self.dim), np.float32)
            for i, text in enumerate(texts):
                ids = []
                for piece in _SENTENCE_END.split(" ".join(text.split())):
                    row = self._lookup.get(piece)
                    if row is None:
                        self.stats["pieces_missed"] += 1
                    else:
                        ids.append(row)
                if ids:
                    out[i] = self._vectors[ids].mean(axis=0)
                    self.stats["sentences_found"] += len(ids)
                else:
                    rng = np.random.default_rng(zlib.crc32(text.encode("utf-8")))
                    a, b = rng.integers(0, len(self._vectors), 2)
                    w = rng.uniform(0.3, 0.7)
                    out[i] = w * self._vectors[a] + (1 - w) * self._vectors[b]
                    out[i] += rng.normal(0, 0.01, self.dim).astype(np.float32)
                    self.stats["fallback"] += 1
            self.stats["texts"] += len(texts)
            return out

    return DerivedEncoder


def derived_encoder(*, for_documents: bool) -> Any:
    from twokeys.dense.onnx_minilm import OnnxMiniLM

    pool = pool_and_vectors if for_documents else None
    return _derived_encoder_class()(OnnxMiniLM(), pool, _model_hash())


def derived_check(n: int = 2000) -> dict[str, Any]:
    """How close derived vectors are to real ones, over the first ``n`` synthetic documents
    (the same in every size): cosine of each document's derived vector with its real
    embedding, and the top-10 overlap of the 300 SciFact queries' exact dense rankings
    over those documents. The real embeddings are cached (slow to make on two cores)."""
    from twokeys.evaluation.beir import load_collection

    encoder = derived_encoder(for_documents=True)
    texts = corpus_texts(max(n, 10_000))[:n]
    cache = WORK / f"real-docs-{CORPUS_VERSION}-{n}-{_model_hash()[:12]}.npy"
    if not cache.exists():
        log(f"embedding {n} synthetic documents for real once ({cache})")
        np.save(cache, encoder.real.encode(texts, "document"))
    real = np.load(cache).astype(np.float32)
    derived = encoder.encode(texts, "document")
    cosine = (real * derived).sum(axis=1)
    coll = load_collection(DATA / "scifact")
    queries = encoder.real.encode([coll.queries[q] for q in sorted(coll.queries)], "query")
    top_real = np.argsort(-(queries @ real.T), axis=1)[:, :K]
    top_derived = np.argsort(-(queries @ derived.T), axis=1)[:, :K]
    overlap = [len(set(a) & set(b)) / K for a, b in zip(top_real, top_derived, strict=True)]
    shuffled = real[np.random.default_rng(0).permutation(n)]
    return {
        "documents": n,
        "cosine_mean": float(cosine.mean()),
        "cosine_p5": float(np.percentile(cosine, 5)),
        "cosine_unrelated_mean": float((real * shuffled).sum(axis=1).mean()),
        "top10_overlap": float(np.mean(overlap)),
        "stats": encoder.stats,
    }


# -- timing proxies ---------------------------------------------------------------------


class _Timed:
    """Forwards attribute access to ``target``; a method call's time goes to ``clock``.

    ``stages`` maps a method name to its stage; other methods go to ``default``. Calls
    the target makes on itself are not seen (and so not counted twice).
    """

    def __init__(
        self,
        target: Any,
        clock: dict[str, float],
        default: str,
        stages: dict[str, str] | None = None,
    ) -> None:
        self._target = target
        self._clock = clock
        self._default = default
        self._stages = stages or {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr
        stage = self._stages.get(name, self._default)
        clock = self._clock

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                clock[stage] += time.perf_counter() - start

        return timed


class _TimedBackend(_Timed):
    """An index backend whose lexical and vector indexes are timed too."""

    def __getattr__(self, name: str) -> Any:
        if name == "lexical":
            return _Timed(self._target.lexical, self._clock, "bm25 explain", {"search": "bm25"})
        if name == "vectors":
            vectors = self._target.vectors
            return None if vectors is None else _Timed(vectors, self._clock, "vector")
        return super().__getattr__(name)


STAGES = ("analyzer", "query embedding", "bm25", "bm25 explain", "vector", "fetch", "other")


def staged_index(index: Any, clock: dict[str, float]) -> Any:
    """A second :class:`twokeys.Index` over the same backend and encoder, with every
    stage timed: analyzer calls, query embedding, BM25 search, BM25 ``explain``/``idf``
    (read by adaptive fusion), vector search, SQLite fetch of chunks and documents."""
    from twokeys.engine import Index

    backend = _TimedBackend(index.backend, clock, "fetch")
    staged = Index(backend, encoder=_Timed(index.encoder, clock, "query embedding"))
    staged.analyzer = _Timed(index.analyzer, clock, "analyzer")
    return staged


# -- children -------------------------------------------------------------------------


#: per build stage (a progress bar's name): seconds from its creation to its last step
STAGE_SECONDS: dict[str, float] = {}


def _progress(name: str, total: int | None) -> Callable[[int], None]:
    state = {"done": 0, "next": 0.0, "start": time.perf_counter()}
    STAGE_SECONDS[name] = 0.0

    def advance(n: int) -> None:
        state["done"] += n
        now = time.perf_counter()
        STAGE_SECONDS[name] = now - state["start"]
        if now >= state["next"] or (total and state["done"] >= total):
            state["next"] = now + 10.0
            of = f"/{total}" if total else ""
            elapsed = now - state["start"]
            print(f"  {name}: {state['done']}{of} ({elapsed:.0f} s)", file=sys.stderr, flush=True)

    return advance


def build_child(size: int) -> dict[str, Any]:
    from twokeys.indexer import IndexOptions, build_index

    corpus = make_corpus(size)
    index = index_dir(size)
    shutil.rmtree(index, ignore_errors=True)
    code = _code()
    encoder = derived_encoder(for_documents=True)
    encoder.load()  # the pool's real vectors: benchmark input, not build work
    reset_peak_rss()
    baseline = rss_mb()
    start = time.perf_counter()
    report = build_index(corpus, index, IndexOptions(), encoder=encoder, progress=_progress)
    seconds = time.perf_counter() - start
    peak = peak_rss_mb()
    files = [f for f in index.rglob("*") if f.is_file()]

    parts: dict[str, float] = defaultdict(float)
    for f in files:
        name = f.name.split(".")
        parts[".".join(name[:2]) if name[0] in ("derived", "") else name[0]] += (
            f.stat().st_size / 2**20
        )

    # what embedding every chunk for real would add: the default encoder on a sample
    from twokeys.engine import open_index

    with open_index(index, encoder=encoder) as opened:
        rows = np.random.default_rng(1).choice(report.chunks, EMBED_SAMPLE, replace=False)
        sample = [c.text for c in opened.backend.chunks([int(r) for r in rows])]
    encoder.real.encode(sample[:8], "document")
    start = time.perf_counter()
    encoder.real.encode(sample, "document")
    rate = len(sample) / (time.perf_counter() - start)
    return {
        "build_s": seconds,
        "chunks": report.chunks,
        "documents": report.documents,
        "peak_rss_mb": peak,
        "build_delta_mb": peak - baseline,
        "disk_mb": sum(f.stat().st_size for f in files) / 2**20,
        "disk_parts_mb": dict(parts),
        "build_stages_s": dict(STAGE_SECONDS),
        "derived_vectors": encoder.stats,
        "real_embed_passages_per_s": rate,
        "real_embed_estimate_s": report.chunks / rate,
        "build_load_average": os.getloadavg(),
        "build_code": code,
    }


def _bm25s(size: int, backend: str = "numpy") -> tuple[Callable[[str], object], dict[str, float]]:
    """bm25s over the same texts, called as its README calls it (``peer_calls.Bm25s``)."""
    from benchmarks.peer_calls import Bm25s

    name = "bm25s" if backend == "numpy" else f"bm25s-{backend}"
    texts = corpus_texts(size)
    before = rss_mb()
    start = time.perf_counter()
    peer = Bm25s(texts, backend=backend)
    built = time.perf_counter() - start
    del texts
    info = {f"{name}_build_s": built, f"{name}_rss_delta_mb": rss_mb() - before}
    return (lambda q: peer.search(q, K)), info


def drop_page_cache() -> bool:
    """Write dirty pages and drop the OS page cache; False where not allowed (not root,
    not Linux)."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
    except OSError:
        return False
    return True


def open_and_first_queries(size: int, encoder: Any, query: str) -> dict[str, float]:
    """Open the index, answer one BM25 query, then one hybrid query: times and RSS."""
    from twokeys.engine import open_index

    reset_peak_rss()
    rss_before, private_before = rss_mb(), private_rss_mb()
    start = time.perf_counter()
    index = open_index(index_dir(size), encoder=encoder)
    index.search(query, mode="bm25", k=K)
    out = {"load_plus_first_query_s": time.perf_counter() - start}
    out["load_rss_mb"] = rss_mb() - rss_before
    out["load_private_mb"] = private_rss_mb() - private_before
    start = time.perf_counter()
    index.search(query, mode="hybrid", k=K)
    out["first_hybrid_query_s"] = time.perf_counter() - start
    out["hybrid_rss_mb"] = rss_mb() - rss_before
    out["hybrid_private_mb"] = private_rss_mb() - private_before
    index.close()
    return out


def cold_child(size: int) -> dict[str, Any] | None:
    """Child process: :func:`open_and_first_queries` from a dropped page cache (as after a
    reboot); None where the OS does not let this process drop it (root on Linux)."""
    from twokeys.evaluation.beir import load_collection

    coll = load_collection(DATA / "scifact")
    first = coll.queries[min(coll.queries)]  # the query the warm measurement opens with
    encoder = derived_encoder(for_documents=False)
    encoder.encode_query("warm up the encoder")
    if not drop_page_cache():
        return None
    return open_and_first_queries(size, encoder, first)


def query_child(size: int, with_bm25s: bool) -> dict[str, Any]:
    from twokeys.engine import open_index
    from twokeys.evaluation.beir import load_collection
    from twokeys.store.pagecache import read_ahead

    code = _code()
    coll = load_collection(DATA / "scifact")
    queries = [coll.queries[q] for q in sorted(coll.queries)]
    start = time.perf_counter()
    encoder = derived_encoder(for_documents=False)
    encoder.encode_query("warm up the encoder")
    out: dict[str, Any] = {"encoder_load_s": time.perf_counter() - start}

    # With the index's files in the page cache (read once before, as after a build or
    # recent use); `cold_child` measures the same from a dropped page cache.
    for path in sorted(index_dir(size).rglob("*")):
        if path.is_file():
            read_ahead(path)
    out.update(open_and_first_queries(size, encoder, queries[0]))
    index = open_index(index_dir(size), encoder=encoder)
    out["vector_index"] = type(index.backend.vectors).__name__

    clock: dict[str, float] = defaultdict(float)
    staged = staged_index(index, clock)
    lexical: dict[str, Callable[[str], object]] = {
        "twokeys bm25": lambda q: index.search(q, mode="bm25", k=K)
    }
    if with_bm25s:
        try:
            lexical["bm25s"], info = _bm25s(size)
            out.update(info)
            out["bm25s_call"] = "readme"  # earlier rows timed retrieve(n_threads=1): issue 11
        except MemoryError as exc:
            out["bm25s_skipped"] = f"MemoryError: {exc}"
    hybrid: dict[str, Callable[[str], object]] = {
        "twokeys hybrid": lambda q: index.search(q, mode="hybrid", k=K),
        "staged hybrid": lambda q: staged.search(q, mode="hybrid", k=K),
    }
    lat: dict[str, list[float]] = {name: [] for name in (*lexical, *hybrid)}
    stages: dict[str, list[float]] = {name: [] for name in STAGES}
    # BM25 systems and hybrid systems in separate loops: onnxruntime's threads spin for
    # a while after each query embedding and would slow whatever runs next. A BM25
    # query's time is the median of LEXICAL_ROUNDS tries (bursts of load elsewhere).
    for systems, rounds in ((lexical, LEXICAL_ROUNDS), (hybrid, 1)):
        for q in queries[:5]:
            for fn in systems.values():
                fn(q)
        for i, q in enumerate(queries):
            tries: dict[str, list[float]] = {name: [] for name in systems}
            for j in range(rounds):
                order = list(systems.items())
                for name, fn in order if (i + j) % 2 == 0 else reversed(order):
                    clock.clear()
                    start = time.perf_counter()
                    fn(q)
                    elapsed = time.perf_counter() - start
                    tries[name].append(elapsed)
                    if name == "staged hybrid":
                        for stage in STAGES[:-1]:
                            stages[stage].append(clock.get(stage, 0.0))
                        stages["other"].append(elapsed - sum(clock.values()))
            for name, times in tries.items():
                lat[name].append(float(np.median(times)))
    out["latency_ms"] = {
        name: {
            **{k: 1000 * v for k, v in percentiles(t).items()},
            "mean": 1000 * float(np.mean(t)),
        }
        for name, t in lat.items()
    }
    out["stages_ms"] = {
        name: {"p50": 1000 * float(np.median(t)), "mean": 1000 * float(np.mean(t))}
        for name, t in stages.items()
    }
    out["qps"] = {name: len(t) / sum(t) for name, t in lat.items()}
    out["query_peak_rss_mb"] = peak_rss_mb()
    out["load_average"] = os.getloadavg()
    out["query_code"] = code
    return out


def lexical_child(size: int) -> dict[str, Any]:
    """Child process: a BM25-only index of the synthetic corpus (``build_index`` with no
    encoder: no embeddings, so 1M chunks build in minutes), then ``Index.search(mode=
    "bm25")`` against bm25s' default and numba backends over the same texts, one query at
    a time, interleaved per query in alternating order, median of LEXICAL_ROUNDS tries."""
    from benchmarks.peer_calls import numba_available
    from twokeys.engine import open_index
    from twokeys.evaluation.beir import load_collection
    from twokeys.indexer import IndexOptions, build_index

    coll = load_collection(DATA / "scifact")
    queries = [coll.queries[q] for q in sorted(coll.queries)]
    corpus = make_corpus(size)
    path = WORK / f"synth-{CORPUS_VERSION}-{size}-bm25.twokeys"
    shutil.rmtree(path, ignore_errors=True)
    reset_peak_rss()
    baseline = rss_mb()
    start = time.perf_counter()
    report = build_index(corpus, path, IndexOptions(encoder=None))
    out: dict[str, Any] = {
        "size": size,
        "chunks": report.chunks,
        "build_s": time.perf_counter() - start,
        "build_delta_mb": peak_rss_mb() - baseline,
        "code": _code(),
    }
    index = open_index(path)
    systems: dict[str, Callable[[str], object]] = {
        "twokeys bm25": lambda q: index.search(q, mode="bm25", k=K)
    }
    for backend in ("numpy", "numba"):
        if backend == "numba" and not numba_available():
            continue
        name = "bm25s" if backend == "numpy" else f"bm25s-{backend}"
        systems[name], info = _bm25s(size, backend)
        out.update(info)
    for q in queries[:5]:
        for fn in systems.values():
            fn(q)
    lat: dict[str, list[float]] = {name: [] for name in systems}
    cpu: dict[str, list[float]] = {name: [] for name in systems}
    for i, q in enumerate(queries):
        tries: dict[str, list[float]] = {name: [] for name in systems}
        cpu_tries: dict[str, list[float]] = {name: [] for name in systems}
        for j in range(LEXICAL_ROUNDS):
            order = list(systems.items())
            for name, fn in order if (i + j) % 2 == 0 else reversed(order):
                start, start_cpu = time.perf_counter(), time.thread_time()
                fn(q)
                tries[name].append(time.perf_counter() - start)
                cpu_tries[name].append(time.thread_time() - start_cpu)
        for name, times in tries.items():
            lat[name].append(float(np.median(times)))
            cpu[name].append(float(np.median(cpu_tries[name])))
    out["latency_ms"] = {
        name: {**{k: 1000 * v for k, v in percentiles(t).items()}, "mean": 1000 * np.mean(t)}
        for name, t in lat.items()
    }
    out["cpu_ms"] = {
        name: {**{k: 1000 * v for k, v in percentiles(t).items()}, "mean": 1000 * np.mean(t)}
        for name, t in cpu.items()
    }
    out["qps"] = {name: len(t) / sum(t) for name, t in lat.items()}
    out["load_average"] = os.getloadavg()
    index.close()
    shutil.rmtree(path, ignore_errors=True)
    return out


def run_lexical(sizes: Sequence[int]) -> dict[str, Any]:
    """BM25 only, per size in a fresh subprocess (``lexical_child``); rows of sizes run
    before are kept."""
    previous = RESULTS / "scale-bm25.json"
    old = (
        json.loads(previous.read_text(encoding="utf-8")).get("rows", [])
        if previous.exists()
        else []
    )
    rows = []
    for size in sizes:
        log(f"size {size}: corpus")
        make_corpus(size)
        log(f"size {size}: BM25-only build and queries (subprocess)")
        rows.append(run_child("scale", ["lexical-child", "--size", str(size)]))
    done = {r["size"] for r in rows}
    rows = sorted(rows + [r for r in old if r["size"] not in done], key=lambda r: r["size"])
    return {
        "rows": rows,
        "versions": {p: version(p) for p in ("twokeys", "bm25s", "numba", "numpy")},
    }


# -- the chunking stage alone --------------------------------------------------------------


class _NoWriter:
    """What ``_collect`` asks of a writer when building a new index: nothing kept."""

    excluded: tuple[Path, ...] = ()

    def keep(self, info: object) -> None:
        del info

    def delete(self, ids: object) -> None:
        del ids


def chunking_child(corpus: Path, counter: str) -> dict[str, Any]:
    """The build's "Reading and chunking" stage alone, in this process: ``_collect`` as
    ``build_index`` calls it for a new index (GC paused), with the default encoder's
    token counter (``counter="encoder"``) or none (``"approx"``: a lexical-only build's
    approximate counter). Wall and CPU seconds (the tokenizer's threads included) and a
    digest of every chunk, so that two versions of the code can be compared."""
    import gc

    from twokeys.indexer import IndexOptions, IndexReport, _collect

    encoder = None
    if counter == "encoder":
        from twokeys.dense.onnx_minilm import OnnxMiniLM

        encoder = OnnxMiniLM()  # loading the model is not chunking
    gc.collect()
    gc.disable()  # as build_index does around the stage
    start, cpu = time.perf_counter(), time.process_time()
    changed = _collect(
        corpus,
        _NoWriter(),  # type: ignore[arg-type]
        {},
        IndexOptions(),
        encoder,
        lambda _name, _total: lambda _n: None,
        lambda _skipped: None,
        IndexReport(),
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    gc.enable()
    digest = hashlib.sha256()
    for _, chunks in changed:
        for c in chunks:
            row = (c.doc_id, c.position, c.start, c.end, c.heading_path, c.text)
            digest.update(repr(row).encode("utf-8") + b"\0")
    known = getattr(getattr(encoder, "_count", None), "_known", None)  # its word counts
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_rss_mb": peak_rss_mb(),
        "words_remembered": len(known) if known is not None else None,
        "documents": len(changed),
        "chunks": sum(len(chunks) for _, chunks in changed),
        "digest": digest.hexdigest(),
        "load_average": os.getloadavg(),
    }


def _code_at(rev: str) -> Path:
    """``src/`` of commit ``rev``, unpacked once under the scratch folder."""
    target = WORK / f"code-{rev}"
    if not (target / "src").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", rev, "src"], cwd=RESULTS.parent.parent, capture_output=True
        )
        if archive.returncode != 0:
            raise RuntimeError(f"git archive {rev}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target / "src"


def run_chunking(sizes: Sequence[int], before: str | None, rounds: int) -> dict[str, Any]:
    """The chunking stage on synthetic corpora of ``sizes`` documents (the default
    encoder's counter, as the scale builds) and on SciFact (no encoder, as its
    lexical-only build), each run in a fresh subprocess; with ``before``, that commit's
    code in alternating rounds, side by side."""
    here = RESULTS.parent.parent / "src"
    codes = {"now": here} | ({f"before ({before})": _code_at(before)} if before else {})
    scifact = DATA / "scifact" / "corpus.jsonl"
    cases = [(f"synthetic {size:,}", make_corpus(size), "encoder") for size in sizes]
    cases += [("scifact, no encoder", scifact, "approx"), ("scifact", scifact, "encoder")]
    rows = []
    for name, corpus, counter in cases:
        runs: dict[str, list[dict[str, Any]]] = {code: [] for code in codes}
        for r in range(rounds):
            order = list(codes) if r % 2 == 0 else list(reversed(codes))
            for code in order:
                log(f"chunking {name}, {code}, round {r + 1}")
                env = {"PYTHONPATH": str(codes[code])}
                args = ["chunking-child", "--corpus", str(corpus), "--counter", counter]
                runs[code].append(run_child("scale", args, env))
        digests = {run["digest"] for code_runs in runs.values() for run in code_runs}
        rows.append(
            {
                "case": name,
                "counter": counter,
                "code": _code(),
                "same_chunks": len(digests) == 1,
                "runs": runs,
                "median_wall_s": {
                    c: statistics.median(x["wall_s"] for x in v) for c, v in runs.items()
                },
                "median_cpu_s": {
                    c: statistics.median(x["cpu_s"] for x in v) for c, v in runs.items()
                },
            }
        )
    previous = RESULTS / "scale-chunking.json"
    if previous.exists():  # keep the rows of corpora not run this time
        done = {r["case"] for r in rows}
        kept = json.loads(previous.read_text(encoding="utf-8")).get("rows", [])
        rows = [r for r in kept if r["case"] not in done] + rows
    rows.sort(key=lambda r: (r["counter"] == "approx", r["runs"]["now"][0]["documents"]))
    return {"rows": rows, "code": _code(), "versions": {p: version(p) for p in ("tokenizers",)}}


# -- run, plot ----------------------------------------------------------------------------


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    sizes = [r["chunks"] for r in rows]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    ax = axes[0][0]
    ax.plot(sizes, [r["build_s"] for r in rows], "o-", label="twokeys build_index")
    ax.plot(
        sizes,
        [r["build_s"] + r["real_embed_estimate_s"] for r in rows],
        "x:",
        label="with real embedding (est.)",
    )
    ax.plot(sizes, [r.get("bm25s_build_s") for r in rows], "s--", label="bm25s index")
    ax.set_title("build time (s)")
    ax = axes[0][1]
    ax.plot(sizes, [r["disk_mb"] for r in rows], "o-", label="index on disk")
    ax.plot(sizes, [r["peak_rss_mb"] for r in rows], "s--", label="peak RSS, build")
    ax.plot(sizes, [r["hybrid_rss_mb"] for r in rows], "^-.", label="RSS after open + hybrid query")
    ax.set_title("memory, disk (MB)")
    ax = axes[0][2]
    ax.plot(
        sizes, [r["load_plus_first_query_s"] for r in rows], "o-", label="open + 1st BM25 query"
    )
    ax.plot(sizes, [r["first_hybrid_query_s"] for r in rows], "s--", label="1st hybrid query")
    ax.axhline(2.0, color="grey", lw=0.8, ls=":", label="goal 2 s")
    ax.set_title("load (s)")
    ax = axes[1][0]
    for name, style in (("twokeys bm25", "o-"), ("bm25s", "s--")):
        ax.plot(
            sizes,
            [
                r["latency_ms"].get(name, {}).get("p50")
                if name != "bm25s" or r.get("bm25s_call") == "readme"  # not a handicapped call
                else None
                for r in rows
            ],
            style,
            label=f"{name} p50",
        )
    ax.set_title("BM25 query latency (ms)")
    ax = axes[1][1]
    hybrid = [r["latency_ms"]["twokeys hybrid"] for r in rows]
    ax.plot(sizes, [h["p50"] for h in hybrid], "o-", label="hybrid p50")
    ax.plot(sizes, [h["p95"] for h in hybrid], "s--", label="hybrid p95")
    ax.plot(sizes, [r["stages_ms"]["vector"]["p50"] for r in rows], "^:", label="vector search p50")
    ax.axhline(20.0, color="grey", lw=0.8, ls=":", label="goal p50 20 ms")
    ax.set_title("hybrid query latency (ms)")
    ax = axes[1][2]
    bottom = np.zeros(len(rows))
    labels = [f"{s:,}" for s in sizes]
    for stage in STAGES:
        means = np.array([r["stages_ms"][stage]["mean"] for r in rows])
        ax.bar(labels, means, bottom=bottom, label=stage)
        bottom += means
    ax.set_title("hybrid stages, mean ms per query")
    ax.set_xlabel("chunks")
    ax.legend(fontsize=7)
    for ax in (*axes[0], axes[1][0], axes[1][1]):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chunks")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _code() -> str:
    """The commit measured, and the files of src/ that differed from it."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=RESULTS.parent.parent, capture_output=True, text=True, check=False
        ).stdout.strip()

    dirty = git("status", "--short", "--", "src").splitlines()
    return git("rev-parse", "--short", "HEAD") + (
        f" + {len(dirty)} changed in src/" if dirty else ""
    )


def run(sizes: Sequence[int], with_bm25s: bool, query_only: bool = False) -> dict[str, Any]:
    """Build and query each size; ``query_only`` re-queries the indexes built by an
    earlier run, keeping that run's build figures."""
    pool, _ = pool_and_vectors()
    log("derived vs real vectors")
    check = derived_check()
    previous = RESULTS / "scale.json"
    old = (
        json.loads(previous.read_text(encoding="utf-8")).get("rows", [])
        if previous.exists()
        else []
    )
    old = [r for r in old if r.get("corpus") == CORPUS_VERSION]
    rows = []
    for size in sizes:
        if query_only:
            built = next((r for r in old if r["size"] == size), None)
            if built is None or not index_dir(size).exists():
                raise SystemExit(f"--query-only: no earlier build of size {size}")
        else:
            log(f"size {size}: corpus")
            make_corpus(size)
            log(f"size {size}: build (subprocess)")
            built = run_child("scale", ["build", "--size", str(size)])
        log(f"size {size}: built in {built['build_s']:.1f} s; load + queries (subprocess)")
        flag = [] if with_bm25s else ["--no-bm25s"]
        cold = run_child("scale", ["cold", "--size", str(size)])
        queried = run_child("scale", ["query", "--size", str(size), *flag])
        rows.append({**built, "size": size, "corpus": CORPUS_VERSION, **queried, "cold_open": cold})
    # keep rows of sizes measured by an earlier run (e.g. `--sizes 1000000` alone)
    done = {r["size"] for r in rows}
    rows += [r for r in old if r["size"] not in done]
    rows.sort(key=lambda r: r["size"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    png = plot(rows, RESULTS / "scale.png")
    return {
        "rows": rows,
        "pool_sentences": len(pool),
        "derived_check": check,
        "plot": str(png.relative_to(RESULTS.parent)) if png else None,
        "versions": {p: version(p) for p in ("twokeys", "bm25s", "numpy", "onnxruntime")},
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "action",
        nargs="?",
        default="all",
        choices=(
            "all",
            "make",
            "embed-pool",
            "build",
            "query",
            "cold",
            "lexical",
            "lexical-child",
            "chunking",
            "chunking-child",
        ),
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--no-bm25s", action="store_true", help="skip bm25s (its memory at 1M)")
    parser.add_argument(
        "--query-only", action="store_true", help="re-query the indexes of an earlier run"
    )
    parser.add_argument("--workers", type=int, default=1, help="embed-pool: processes")
    parser.add_argument(
        "--before", help="chunking: also time this commit's code, side by side (e.g. dda168a)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="chunking: runs of each code")
    parser.add_argument("--corpus", type=Path, help="chunking-child: the corpus")
    parser.add_argument("--counter", choices=("encoder", "approx"), default="encoder")
    args = parser.parse_args(argv)
    if args.action == "make":
        print(make_corpus(args.size))
    elif args.action == "embed-pool":
        pool = sentence_pool()
        file = sentence_vectors_file(pool)
        WORK.mkdir(parents=True, exist_ok=True)
        np.save(file, embed_sentences(pool, args.workers))
        print(file)
    elif args.action == "build":
        print(json.dumps(build_child(args.size)))
    elif args.action == "query":
        print(json.dumps(query_child(args.size, not args.no_bm25s)))
    elif args.action == "cold":
        print(json.dumps(cold_child(args.size)))
    elif args.action == "lexical-child":
        print(json.dumps(lexical_child(args.size)))
    elif args.action == "chunking-child":
        print(json.dumps(chunking_child(args.corpus, args.counter)))
    elif args.action == "chunking":
        result = run_chunking(args.sizes, args.before, args.rounds)
        log(f"wrote {save_result('scale-chunking', result)}")
    elif args.action == "lexical":
        log(f"wrote {save_result('scale-bm25', run_lexical(args.sizes))}")
    else:
        log(f"wrote {save_result('scale', run(args.sizes, not args.no_bm25s, args.query_only))}")


if __name__ == "__main__":
    main()
