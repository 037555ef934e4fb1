"""The framework adapters in each framework's own composition, against the real packages:
a LangChain LCEL chain with its fake chat model, a LlamaIndex ``RetrieverQueryEngine``
with its ``MockLLM``, a Haystack ``Pipeline``; on the example support KB with the real
MiniLM encoder (the paraphrase needs the dense sensor), locally and through a running
``twokeys serve``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra")
pytest.importorskip("llama_index.core", reason="needs the llamaindex extra")
pytest.importorskip("haystack", reason="needs the haystack extra")
pytest.importorskip("fastapi", reason="needs the serve extra")

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # nothing leaves the machine

from haystack import Pipeline
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from conftest import SUPPORT_KB
from serverutil import running
from twokeys import IndexOptions, build_index, open_index
from twokeys.client import Client
from twokeys.errors import ConfigError
from twokeys.integrations import haystack as hs
from twokeys.integrations import langchain as lc
from twokeys.integrations import llamaindex as li
from twokeys.server.app import create_app
from twokeys.server.service import IndexService

pytestmark = pytest.mark.slow

ZX = "What does error code ZX-4821 mean?"
REFUND = "Can I get my money back if the item arrived broken?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The support KB with the default (MiniLM) encoder, built once for this module."""
    path = tmp_path_factory.mktemp("frameworks") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions())
    return path


@pytest.fixture(scope="module")
def url(kb: Path) -> Iterator[str]:
    service = IndexService(kb)
    with running(create_app(service)) as base:
        yield base
    service.close()


@pytest.fixture(scope="module", params=["index", "client"])
def where(request: pytest.FixtureRequest, kb: Path, url: str) -> Iterator[dict[str, Any]]:
    """Each adapter is built the same two ways: over a local index or a server."""
    if request.param == "index":
        yield {"index": kb}
    else:
        with Client(url) as client:
            yield {"client": client}


def test_langchain_lcel_chain(where: dict[str, Any]) -> None:
    retriever = lc.TwokeysRetriever(**where, k=3)
    seen: list[list[Any]] = []

    def context(docs: list[Any]) -> str:
        seen.append(docs)
        return "\n".join(f"[{d.metadata['cite']}] {d.page_content}" for d in docs)

    prompt = ChatPromptTemplate.from_template("Answer from:\n{context}\n\nQuestion: {question}")
    llm = FakeListChatModel(responses=["ZX-4821 is a power undervoltage.", "Yes, a refund."])
    chain = (
        {"context": retriever | context, "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    assert chain.invoke(ZX) == "ZX-4821 is a power undervoltage."
    assert chain.invoke(REFUND) == "Yes, a refund."
    zx, refund = seen
    assert zx[0].metadata["source"] == "errors/zx-4821.md"
    assert zx[0].metadata["bm25_rank"] == 1  # the exact code: the lexical sensor's
    assert refund[0].metadata["source"] == "policies/refund-policy.md"
    assert refund[0].metadata["dense_rank"] == 1  # the paraphrase: the dense sensor's
    first = zx[0].metadata
    assert first["chunk_id"] == zx[0].id and first["cite"] == "errors/zx-4821.md"
    assert set(first) >= {"source", "locator", "score", "rank", "title", "heading"}
    # async, with a per-call k and a LangChain filter dict
    docs = asyncio.run(
        retriever.ainvoke(REFUND, k=2, filter={"source": {"$in": ["policies/warranty.md"]}})
    )
    assert len(docs) == 2 and {d.metadata["source"] for d in docs} == {"policies/warranty.md"}
    fixed = lc.TwokeysRetriever(**where, k=5, mode="bm25", filter={"kind": "markdown"})
    assert fixed.invoke("refund")[0].metadata["bm25_rank"] == 1


def test_llamaindex_query_engine(where: dict[str, Any]) -> None:
    retriever = li.TwokeysRetriever(**where, k=3)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    zx = engine.query(ZX)
    refund = engine.query(REFUND)
    assert zx.source_nodes[0].node.metadata["source"] == "errors/zx-4821.md"
    assert zx.source_nodes[0].node.node_id == "errors/zx-4821.md#0"
    assert refund.source_nodes[0].node.metadata["source"] == "policies/refund-policy.md"
    assert "ZX-4821" in str(zx)  # MockLLM echoes the prompt: the passage reached it
    only = MetadataFilters(
        filters=[
            MetadataFilter(key="source", value=["policies/warranty.md"], operator=FilterOperator.IN)
        ]
    )
    nodes = li.TwokeysRetriever(**where, k=2, filters=only).retrieve(REFUND)
    assert {n.node.metadata["source"] for n in nodes} == {"policies/warranty.md"}
    nodes = asyncio.run(li.TwokeysRetriever(**where, k=2).aretrieve(ZX))
    assert nodes[0].node.metadata["source"] == "errors/zx-4821.md"


def test_haystack_pipeline(where: dict[str, Any], kb: Path) -> None:
    pipeline = Pipeline()
    pipeline.add_component("retriever", hs.TwokeysRetriever(**where, top_k=3))
    for query, page in ((ZX, "errors/zx-4821.md"), (REFUND, "policies/refund-policy.md")):
        docs = pipeline.run({"retriever": {"query": query}})["retriever"]["documents"]
        assert docs[0].meta["source"] == page and len(docs) == 3
    only = {"field": "meta.source", "operator": "in", "value": ["policies/warranty.md"]}
    docs = pipeline.run({"retriever": {"query": REFUND, "top_k": 2, "filters": only}})
    assert {d.meta["source"] for d in docs["retriever"]["documents"]} == {"policies/warranty.md"}
    if "index" in where:  # the pipeline serialises (an index path; a server's URL)
        again = Pipeline.loads(pipeline.dumps(), allowed_modules=["twokeys.integrations.haystack"])
        docs = again.run({"retriever": {"query": ZX}})["retriever"]["documents"]
        assert docs[0].id == "errors/zx-4821.md#0"


def test_filters_map_to_ours_or_name_the_missing_operator() -> None:
    assert [str(f) for f in lc.map_filter({"lang": "en", "version": {"$gte": 2}})] == [
        "lang=en",
        "version>=2",
    ]
    with pytest.raises(ConfigError, match=r"operator '\$ne' is not supported"):
        lc.map_filter({"lang": {"$ne": "en"}})
    with pytest.raises(ConfigError, match=r"'\$or' is not supported"):
        lc.map_filter({"$or": [{"lang": "en"}, {"lang": "de"}]})
    nested = MetadataFilters(
        filters=[
            MetadataFilter(key="lang", value="en"),
            MetadataFilters(filters=[MetadataFilter(key="version", value=3, operator=">")]),
        ]
    )
    assert [str(f) for f in li.map_filters(nested)] == ["lang=en", "version>3"]
    either = MetadataFilters(
        filters=[MetadataFilter(key="a", value="1"), MetadataFilter(key="b", value="2")],
        condition=FilterCondition.OR,
    )
    with pytest.raises(ConfigError, match="'OR' is not supported"):
        li.map_filters(either)
    with pytest.raises(ConfigError, match="'nin' is not supported"):
        li.map_filters(
            MetadataFilters(filters=[MetadataFilter(key="a", value=["1"], operator="nin")])
        )
    both = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.lang", "operator": "==", "value": "en"},
            {"field": "meta.updated", "operator": "<", "value": "2024-06-01"},
            {"field": "meta.kind", "operator": "in", "value": ["markdown", "html"]},
        ],
    }
    assert [str(f) for f in hs.map_filters(both)] == [
        "lang=en",
        "updated<2024-06-01",
        "kind:markdown,html",
    ]
    with pytest.raises(ConfigError, match="'!=' is not supported"):
        hs.map_filters({"field": "meta.lang", "operator": "!=", "value": "en"})
    with pytest.raises(ConfigError, match="'OR' is not supported"):
        hs.map_filters({"operator": "OR", "conditions": []})
    with pytest.raises(ConfigError, match="needs a number or an ISO date"):
        hs.map_filters({"field": "meta.version", "operator": ">", "value": "soon"})


def test_metadata_filters_are_honoured_on_front_matter(tmp_path: Path) -> None:
    from conftest import filter_corpus, write_docs

    docs = write_docs(tmp_path / "docs", filter_corpus())
    path = tmp_path / "f.twokeys"
    build_index(docs, path, IndexOptions(encoder=None))
    with open_index(path) as index:
        retriever = lc.TwokeysRetriever(index=index, k=20, mode="bm25")
        got = retriever.invoke("power fuse", filter={"lang": "en", "version": {"$gte": 6}})
        expected = index.search("power fuse", k=20, mode="bm25", filters=["lang=en", "version>=6"])
        assert [d.metadata["chunk_id"] for d in got] == [h.chunk_id for h in expected]
        assert got and len(got) < 12
    with pytest.raises(ConfigError, match="not both"):
        lc.TwokeysRetriever(index=path, client=Client("http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match="fusion"):
        hs.TwokeysRetriever(index=path, fusion="nonsense")
