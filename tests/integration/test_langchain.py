"""LangChain's OpenAI integration against ``twokeys serve``: ``ChatOpenAI`` with its
defaults (a conversation, invoked and streamed) and ``OpenAIEmbeddings``, with its
defaults too.

``OpenAIEmbeddings``' default (``check_embedding_ctx_length=True``) counts with tiktoken's
``cl100k_base`` and sends token ids, which the server reads back as text (the
``token-ids`` extra). tiktoken downloads its table at first use; offline, the test writes
that table into tiktoken's cache from ``bpe-openai``'s copy, and tiktoken checks it
against the SHA-256 it pins, so the two vocabularies are shown byte-identical.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
langchain_openai = pytest.importorskip("langchain_openai", reason="needs the test extra")

from conftest import SUPPORT_KB, HashEncoder  # noqa: E402
from serverutil import running  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")

ZX = "What does error code ZX-4821 mean?"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("langchain") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    service = IndexService(path)
    with running(create_app(service)) as base:
        yield f"{base}/v1"
    service.close()


def test_chat_openai_with_its_defaults_invoked_and_streamed(url: str) -> None:
    chat = langchain_openai.ChatOpenAI(model="twokeys", base_url=url, api_key="unused")
    conversation = [
        ("system", "You are Lumatek's support assistant. " * 60),
        ("human", "What is the refund policy for a change of mind?"),
        ("ai", "You may request a refund within 30 days of delivery [1]. " * 40),
        ("human", "and how many days do I have?"),
    ]
    reply = chat.invoke(conversation)
    text = str(reply.content)
    assert "policies/refund-policy.md" in text.split("Sources:")[-1]
    searched = "What is the refund policy for a change of mind and how many days do I have?"
    assert f"Searched for: {searched}" in text
    streamed = "".join(str(c.content) for c in chat.stream(conversation))
    assert streamed == text
    assert reply.usage_metadata is not None and reply.usage_metadata["total_tokens"] > 0


def test_openai_embeddings_send_text_and_get_the_index_encoder_s_vectors(url: str) -> None:
    embeddings = langchain_openai.OpenAIEmbeddings(
        model="twokeys", base_url=url, api_key="unused", check_embedding_ctx_length=False
    )
    vectors = embeddings.embed_documents(["ZX-4821", "refund"])
    expected = HashEncoder().encode(["ZX-4821", "refund"], "document")
    assert len(vectors) == 2
    for got, want in zip(vectors, expected, strict=True):
        assert got == pytest.approx([float(x) for x in want], abs=1e-6)
    assert embeddings.embed_query("ZX-4821") == pytest.approx(vectors[0], abs=1e-6)


CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@pytest.fixture()
def tiktoken_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's cache holding cl100k_base, written from bpe-openai's vocabulary."""
    cl100k = pytest.importorskip("bpe_openai", reason="the token-ids extra").get_encoding(
        "cl100k_base"
    )
    lines = (
        f"{base64.b64encode(cl100k.decode_single_token_bytes(rank)).decode()} {rank}\n"
        for rank in range(100_256)  # the mergeable ranks; special tokens come after
    )
    name = hashlib.sha1(CL100K_URL.encode()).hexdigest()
    (tmp_path / name).write_text("".join(lines), encoding="ascii")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))


@pytest.mark.usefixtures("tiktoken_offline")
def test_openai_embeddings_with_their_defaults_send_token_ids_read_back_as_text(
    url: str,
) -> None:
    import tiktoken

    # tiktoken accepts the table only if it hashes to the SHA-256 it pins
    assert tiktoken.get_encoding("cl100k_base").encode("ZX-4821")
    embeddings = langchain_openai.OpenAIEmbeddings(model="twokeys", base_url=url, api_key="x")
    assert embeddings.check_embedding_ctx_length  # the default: token ids on the wire
    vectors = embeddings.embed_documents(["ZX-4821", "refund"])
    expected = HashEncoder().encode(["ZX-4821", "refund"], "document")
    for got, want in zip(vectors, expected, strict=True):
        assert got == pytest.approx([float(x) for x in want], abs=1e-6)
