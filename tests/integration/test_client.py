"""``twokeys.client.Client`` against a real ``twokeys serve`` (uvicorn on a loopback port):
the same hits as a local index, documents, ask (whole and streamed), the API key, typed
errors, and retries that honour Retry-After."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
pytest.importorskip("uvicorn", reason="needs the serve extra")

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from conftest import ROOT, SUPPORT_KB, HashEncoder
from serverutil import running
from twokeys import IndexOptions, build_index, open_index
from twokeys.client import Client
from twokeys.errors import (
    AuthError,
    ConfigError,
    NotFoundError,
    ServiceUnavailable,
)
from twokeys.server.app import create_app
from twokeys.server.config import ServerConfig
from twokeys.server.service import IndexService
from twokeys.types import Hit

ZX = "What does error code ZX-4821 mean?"
KEY = "client-key-0123456789"

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("client") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture(scope="module")
def url(built: Path) -> Iterator[str]:
    service = IndexService(built)
    with running(create_app(service)) as base:
        yield base
    service.close()


def test_a_hit_from_the_client_equals_a_hit_from_the_local_index(url: str, built: Path) -> None:
    with Client(url) as client, open_index(built, encoder=HashEncoder()) as kb:
        for options in (
            {"k": 5},
            {"k": 3, "mode": "hybrid-rrf", "explain": True},
            {"k": 4, "mode": "bm25", "filters": ["path:policies/"]},
            {"k": 2, "mode": "dense"},
        ):
            remote = client.search(ZX, **options)
            assert remote == kb.search(ZX, **options), options
            assert all(isinstance(h, Hit) for h in remote)
        explained = client.search(ZX, k=1, explain=True)[0]
        assert explained.doc_id == "errors/zx-4821.md"
        assert {e.retriever for e in explained.evidence} == {"bm25", "dense"}
        assert explained.cite == "errors/zx-4821.md"
        many = client.search_many([ZX, "refund broken item"], k=3)
        assert many == kb.search_many([ZX, "refund broken item"], k=3)


def test_search_many_goes_in_batches_of_the_servers_size(url: str, built: Path) -> None:
    # 70 queries: three POST /search/batch requests (32, 32, 6), the hits in query order
    queries = [f"{word} {i}" for i in range(35) for word in (ZX, "refund broken item")]
    seen: list[str] = []
    with Client(url) as client, open_index(built, encoder=HashEncoder()) as kb:
        client._http.event_hooks["request"].append(lambda r: seen.append(r.url.path))
        remote = client.search_many(queries, k=2, mode="bm25")
        assert remote == kb.search_many(queries, k=2, mode="bm25")
    assert seen == ["/search/batch"] * 3


def test_hit_round_trips_through_its_dict(built: Path) -> None:
    with open_index(built, encoder=HashEncoder()) as kb:
        for hit in kb.search(ZX, k=10, explain=True):
            assert Hit.from_dict(hit.to_dict()) == hit
    with pytest.raises(ValueError, match="missing field 'chunk_id'"):
        Hit.from_dict({"doc_id": "a.md"})


def test_bad_options_are_the_library_s_config_errors(url: str) -> None:
    with Client(url) as client:
        with pytest.raises(ConfigError, match="fusion"):  # checked here, before sending
            client.search(ZX, fusion="nonsense")
        with pytest.raises(ConfigError, match="filter"):
            client.search(ZX, filters=["colour"])
        with pytest.raises(ConfigError, match="k: 500"):  # the server's limit, its message
            client.search(ZX, k=500)
        with pytest.raises(ConfigError, match="question: is empty"):
            client.ask("   ")


def test_documents_add_get_search_delete(built: Path, tmp_path: Path) -> None:
    path = tmp_path / "kb.twokeys"
    shutil.copytree(built, path)
    service = IndexService(path)
    page = tmp_path / "kiosk.md"
    page.write_text("# Kiosk mode\n\nThe QX-9000 kiosk restarts nightly at 03:00.\n")
    try:
        with running(create_app(service)) as base, Client(base) as client:
            written = client.add_documents(
                [
                    {
                        "id": "notes/x.md",
                        "text": "# Wobble\n\nThe ZQ-17 wobble fix.",
                        "metadata": {"lang": "en"},
                    }
                ]
            )
            assert written.added == 1 and written.documents >= 2
            assert client.search("ZQ-17 wobble", k=1, mode="bm25")[0].doc_id == "notes/x.md"
            stored = client.document("notes/x.md")
            assert stored.metadata["lang"] == "en" and stored.chunks[0].doc_id == "notes/x.md"
            assert "ZQ-17" in stored.chunks[0].text
            assert client.add_files([page]).added == 1
            assert client.search("QX-9000 kiosk", k=1, mode="bm25")[0].doc_id == "kiosk.md"
            assert client.delete_document("notes/x.md").removed == 1
            with pytest.raises(NotFoundError, match="notes/x.md"):
                client.document("notes/x.md")
            assert (
                client.stats()["counts"]["documents"] == written.documents
            )  # +kiosk.md, -notes/x.md
    finally:
        service.close()


def test_ask_whole_and_streamed(url: str) -> None:
    with Client(url) as client:
        answer = client.ask(ZX, k=5)
        assert "ZX-4821" in answer.text and not answer.abstains
        assert any(s["path"] == "errors/zx-4821.md" for s in answer.sources)
        events = list(client.ask_stream(ZX, k=5))
    names = [e.name for e in events]
    assert names[0] == "retrieved" and names[-1] == "done"
    assert events[0].hits[0][0].doc_id == "errors/zx-4821.md"
    assert events[-1].data["answer"] == answer.text


def test_the_api_key(built: Path) -> None:
    service = IndexService(built)
    try:
        with running(create_app(service, config=ServerConfig(api_key=KEY))) as base:
            with Client(base) as anonymous, pytest.raises(AuthError, match="api_key"):
                anonymous.search(ZX)
            with Client(base, api_key=KEY) as client:
                assert client.search(ZX, k=1)[0].doc_id == "errors/zx-4821.md"
    finally:
        service.close()


def test_429_and_503_are_retried_honouring_retry_after() -> None:
    app = FastAPI()
    calls: list[int] = []

    @app.get("/stats")
    def stats() -> JSONResponse:
        calls.append(1)
        if len(calls) == 1:
            return JSONResponse({"detail": "slow down"}, 429, headers={"Retry-After": "2"})
        if len(calls) == 2:
            return JSONResponse({"detail": "busy"}, 503)
        return JSONResponse({"documents": 1})

    slept: list[float] = []
    with running(app) as base:
        with Client(base, retries=3, backoff=0.25, sleep=slept.append) as client:
            assert client.stats() == {"documents": 1}
        assert slept == [2.0, 0.5]  # the server's Retry-After, then backoff * 2**1
        calls.clear()
        with (
            Client(base, retries=1, sleep=slept.append) as client,
            pytest.raises(ServiceUnavailable, match="HTTP 503 after 2 attempts: busy"),
        ):
            client.stats()


def test_an_unreachable_server_is_service_unavailable() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    slept: list[float] = []
    with (
        Client(f"http://127.0.0.1:{port}", retries=2, sleep=slept.append) as client,
        pytest.raises(ServiceUnavailable, match="connection failed \\(3 attempts\\)"),
    ):
        client.search(ZX)
    assert slept == [0.5, 1.0]
    with pytest.raises(ConfigError, match="url"):
        Client("localhost:8000")


def test_the_core_and_the_client_import_no_framework() -> None:
    code = (
        "import sys, twokeys, twokeys.client, twokeys.integrations, twokeys.integrations.common\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'langchain', 'llama_index', 'haystack', 'fastapi')]\n"
        "print(','.join(bad))"
    )
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == ""
