"""Running ``twokeys serve`` in production: probes, request ids, the access log and the
Prometheus metrics, through a real uvicorn on 127.0.0.1. ``/metrics`` is parsed with
the Prometheus client's own parser."""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
prometheus = pytest.importorskip("prometheus_client.parser", reason="needs the serve extra")

from conftest import SUPPORT_KB  # noqa: E402
from serverutil import running  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.llm.base import LLM, Prompt  # noqa: E402
from twokeys.llm.http import ServiceError  # noqa: E402
from twokeys.llm.openai_compat import OpenAICompatLLM  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.config import ServerConfig  # noqa: E402
from twokeys.server.keys import ApiKey  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")

READER = ApiKey("dashboards", "read", "reader-key-0123456789abcdef")
WRITER = ApiKey("indexer", "write", "writer-key-0123456789abcdef")
ZX = "What does error code ZX-4821 mean?"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ops") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture
def index(built: Path, tmp_path: Path) -> Path:
    path = tmp_path / "kb.twokeys"
    shutil.copytree(built, path)
    return path


class FailingLLM(LLM):
    """A model whose server is down: every call fails."""

    name = "down"

    def stream(self, prompt: Prompt, *, stop: Sequence[str] = (), **_: Any) -> Iterator[str]:
        raise ServiceError("connection refused")
        yield ""  # pragma: no cover


def access_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "twokeys.access"]


def metric_samples(text: str) -> dict[str, list[Any]]:
    families = prometheus.text_string_to_metric_families(text)
    return {f.name: list(f.samples) for f in families}


def test_metrics_are_scraped_and_parsed(index: Path) -> None:
    config = ServerConfig(keys=(READER, WRITER), access_log="off")
    app = create_app(IndexService(index), llm=FailingLLM(), config=config)
    with running(app) as url:
        read = {"Authorization": f"Bearer {READER.secret}"}
        write = {"Authorization": f"Bearer {WRITER.secret}"}
        for mode in ("bm25", "bm25", "hybrid", "dense"):
            r = httpx.post(f"{url}/search", json={"query": ZX, "mode": mode}, headers=read)
            assert r.status_code == 200
        r = httpx.post(f"{url}/ask", json={"question": ZX}, headers=read)
        # the model is down: the sources still answer (extractively), the reply says the
        # model failed, and the failure is counted below
        assert r.status_code == 200 and r.json()["model_error"]
        doc = {"documents": [{"id": "notes/a.md", "text": "# A\n\nAlpha."}]}
        assert httpx.post(f"{url}/documents", json=doc, headers=write).status_code == 200
        assert httpx.delete(f"{url}/documents/notes/a.md", headers=read).status_code == 403
        assert httpx.get(f"{url}/metrics").status_code == 401  # a key of any role
        r = httpx.get(f"{url}/metrics", headers=read)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        samples = metric_samples(r.text)

    def value(name: str, **labels: str) -> float:
        return sum(
            s.value for s in samples[name] if all(s.labels.get(k) == v for k, v in labels.items())
        )

    assert value("twokeys_http_requests", route="/search", method="POST", status="200") == 4
    assert value("twokeys_http_requests", route="/documents/{doc_id:path}", status="403") == 1
    assert value("twokeys_http_requests", route="/documents", method="POST", status="200") == 1
    count = "twokeys_http_request_duration_seconds_count"
    assert {s.labels["route"] for s in samples["twokeys_http_request_duration_seconds"]} >= {
        "/search",
        "/ask",
        "/documents",
    }
    assert any(
        s.name == count and s.value == 4 for s in samples["twokeys_http_request_duration_seconds"]
    )
    search = {
        s.labels["mode"]: s.value
        for s in samples["twokeys_search_duration_seconds"]
        if s.name == "twokeys_search_duration_seconds_count"
    }
    assert search == {"bm25": 2.0, "hybrid": 1.0, "dense": 1.0}
    assert value("twokeys_model_errors", model="down") == 1
    assert value("twokeys_index_chunks", collection="kb.twokeys") > 0
    assert value("twokeys_index_documents", collection="kb.twokeys") == 35
    (generation,) = samples["twokeys_index_generation"]
    assert generation.labels["generation"].startswith("gen-") and generation.value == 1
    assert value("twokeys_index_writes", collection="kb.twokeys") == 1
    assert WRITER.secret not in r.text and READER.secret not in r.text


def test_access_log_request_ids_and_probes(index: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = ServerConfig(keys=(READER,), access_log="json")
    with running(create_app(IndexService(index), config=config)) as url:
        read = {"Authorization": f"Bearer {READER.secret}"}
        with caplog.at_level(logging.INFO, logger="twokeys.access"):
            r = httpx.post(f"{url}/search", json={"query": ZX}, headers=read)
            assert len(r.headers["x-request-id"]) == 32
            r = httpx.get(
                f"{url}/documents/{'errors/zx-4821.md'}",
                headers=read | {"X-Request-ID": "trace-42"},
            )
            assert r.headers["x-request-id"] == "trace-42"
            r = httpx.get(f"{url}/stats", headers={"X-Request-ID": "bad id; <x>"})
            assert r.status_code == 401 and len(r.headers["x-request-id"]) == 32
            assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
            assert httpx.get(f"{url}/readyz").json() == {"status": "ready"}
            deadline = time.monotonic() + 10  # a line is written once its response is sent
            while len(access_lines(caplog)) < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
        lines = [json.loads(line) for line in access_lines(caplog)]
    assert [(x["method"], x["route"], x["status"], x["key"]) for x in lines] == [
        ("POST", "/search", 200, "dashboards"),
        ("GET", "/documents/{doc_id:path}", 200, "dashboards"),
        ("GET", "/stats", 401, "-"),
        ("GET", "/healthz", 200, "-"),
        ("GET", "/readyz", 200, "-"),
    ]
    assert lines[1]["request_id"] == "trace-42" and lines[0]["collection"] == "kb.twokeys"
    assert all(x["seconds"] >= 0 for x in lines)
    text = caplog.text
    assert READER.secret not in text and "ZX-4821" not in text and "zx-4821" not in text


def test_queries_are_logged_only_when_asked(index: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = ServerConfig(log_queries=True)
    app = create_app(IndexService(index), config=config)
    with running(app) as url, caplog.at_level(logging.INFO, logger="twokeys.access"):
        httpx.post(f"{url}/search", json={"query": ZX})
        deadline = time.monotonic() + 10
        while not access_lines(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
    (line,) = access_lines(caplog)
    assert line.endswith(f"query={json.dumps(ZX)}") and "key=-" in line


def test_readyz_says_when_the_model_is_unreachable(index: Path) -> None:
    llm = OpenAICompatLLM("m", base_url="http://127.0.0.1:9/v1", retries=0)
    with running(create_app(IndexService(index), llm=llm)) as url:
        assert httpx.get(f"{url}/healthz").status_code == 200  # alive all the same
        r = httpx.get(f"{url}/readyz")
        assert r.status_code == 503
        assert r.json() == {
            "status": "unready",
            "detail": "openai:m at http://127.0.0.1:9/v1: cannot connect (connection refused); "
            "is the server running at http://127.0.0.1:9/v1?",
        }


def test_metrics_list_every_collection_the_server_answers_for(index: Path) -> None:
    main, other = IndexService(index), IndexService(index)
    app = create_app(main, config=ServerConfig(access_log="off"), collections={"manuals": other})
    with running(app) as url:
        r = httpx.post(f"{url}/collections/manuals/search", json={"query": ZX, "mode": "bm25"})
        assert r.status_code == 200 and r.json()["hits"]
        samples = metric_samples(httpx.get(f"{url}/metrics").text)
    chunks = {s.labels["collection"]: s.value for s in samples["twokeys_index_chunks"]}
    assert "manuals" in chunks and len(chunks) == 2, chunks
    assert len(set(chunks.values())) == 1 and chunks["manuals"] > 0  # the same index twice
    generations = {s.labels["collection"] for s in samples["twokeys_index_generation"]}
    assert generations == set(chunks)
