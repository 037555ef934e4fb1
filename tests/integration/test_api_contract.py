"""What the OpenAPI schema declares is what the server answers: each failing request's
status is among its route's declared responses, with the declared error body; the
OpenAI routes answer as OpenAI's client expects (models.retrieve, token-id input); the
API docs page works offline and with a key, in a real Chromium."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
openai = pytest.importorskip("openai", reason="needs the test extra")

from conftest import SUPPORT_KB  # noqa: E402
from serverutil import running  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.config import Limits, ServerConfig  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_llm_from_environment")

KEY = "contract-key-0123456789"
ZX = "What does error code ZX-4821 mean?"
CHROMIUM = os.environ.get("TWOKEYS_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("contract") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture(scope="module")
def servers(built: Path) -> Iterator[tuple[str, str]]:
    """An open server and a keyed one, with small limits."""
    limits = Limits(max_query_chars=200, max_body_bytes=8192)
    open_service, keyed_service = IndexService(built), IndexService(built)
    with (
        running(create_app(open_service, config=ServerConfig(limits=limits))) as url,
        running(create_app(keyed_service, config=ServerConfig(api_key=KEY))) as keyed,
    ):
        yield url, keyed
    open_service.close()
    keyed_service.close()


CHAT = "/v1/chat/completions"
JSON = {"content-type": "application/json"}
#: (method, route, schema path, request arguments, the status it must get)
FAILING: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("POST", "/search", "/search", {"content": b"{nope", "headers": JSON}, 400),
    ("POST", "/search", "/search", {"json": {"query": ZX, "k": "5"}}, 422),
    ("POST", "/search", "/search", {"json": {"query": "x" * 201}}, 400),
    ("POST", "/search", "/search", {"json": {"query": "x" * 9000}}, 413),
    ("POST", "/ask", "/ask", {"json": {"question": " "}}, 400),
    ("GET", "/documents/nope.md", "/documents/{doc_id}", {}, 404),
    ("DELETE", "/documents/nope.md", "/documents/{doc_id}", {}, 404),
    (
        "POST",
        "/documents",
        "/documents",
        {"content": b"x", "headers": {"content-type": "a/b"}},
        415,
    ),
    ("POST", CHAT, CHAT, {"json": {"model": "gpt-4o", "messages": [{"role": "user"}]}}, 404),
    ("POST", CHAT, CHAT, {"json": {"model": "twokeys", "messages": []}}, 422),
    (
        "POST",
        CHAT,
        CHAT,
        {"json": {"model": "twokeys", "n": 2, "messages": [{"role": "user"}]}},
        400,
    ),
    ("POST", "/v1/embeddings", "/v1/embeddings", {"json": {"model": "x", "input": "a"}}, 404),
    (
        "POST",
        "/v1/embeddings",
        "/v1/embeddings",
        {"json": {"model": "twokeys", "input": [[1, -5]]}},
        400,
    ),
    ("GET", "/v1/models/gpt-4o", "/v1/models/{model_id}", {}, 404),
    ("GET", "/documents?limit=0", "/documents", {}, 400),
    ("GET", "/documents?filter=colour~red", "/documents", {}, 400),
    ("GET", "/documents?offset=x", "/documents", {}, 422),
    ("GET", "/passages/nope.md%230", "/passages/{chunk_id}", {}, 404),
    ("POST", "/search", "/search", {"json": {"query": ZX, "fields": ["score", "x"]}}, 400),
    ("POST", "/search/batch", "/search/batch", {"json": {"searches": [{"k": 2}]}}, 422),
    (
        "POST",
        "/search/batch",
        "/search/batch",
        {"json": {"searches": [{"query": ZX}, {"query": ZX, "filters": ["colour"]}]}},
        400,
    ),
]


def _declared(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    responses: dict[str, Any] = schema["paths"][path][method.lower()]["responses"]
    return responses


def test_every_failing_request_gets_a_status_its_route_declares(
    servers: tuple[str, str],
) -> None:
    url, keyed = servers
    schema = httpx.get(f"{url}/openapi.json").json()
    for method, route, path, kwargs, status in FAILING:
        r = httpx.request(method, url + route, **kwargs)
        assert r.status_code == status, (method, route, r.text)
        declared = _declared(schema, path, method)
        assert str(status) in declared, (method, path, status, sorted(declared))
        body = r.json()
        if path.startswith("/v1/"):
            assert set(body) == {"error"} and body["error"]["message"], body
            assert body["error"]["type"] == "invalid_request_error"
        else:
            assert set(body) == {"detail"}, body
    keyed_schema = httpx.get(f"{keyed}/openapi.json", headers={"Authorization": f"Bearer {KEY}"})
    for path, operations in keyed_schema.json()["paths"].items():
        for method in operations:
            if path in ("/healthz", "/readyz"):  # probes answer without a key
                continue
            route = path.replace("{doc_id}", "a.md").replace("{model_id}", "twokeys")
            r = httpx.request(method, keyed + route, json={})
            assert r.status_code == 401, (method, path)
            assert "401" in _declared(keyed_schema.json(), path, method), (method, path)


def test_models_retrieve_and_token_id_input(servers: tuple[str, str]) -> None:
    url, _ = servers
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
    assert client.models.retrieve("twokeys").id == "twokeys"
    with pytest.raises(openai.NotFoundError, match="model 'gpt-4o' not found"):
        client.models.retrieve("gpt-4o")
    # token ids (tiktoken's cl100k_base, what LangChain sends) are read back as their text
    bpe_openai = pytest.importorskip("bpe_openai", reason="the token-ids extra")
    cl100k = bpe_openai.get_encoding("cl100k_base")
    texts = ["What does error code ZX-4821 mean?", "refund"]
    by_ids = client.embeddings.create(model="twokeys", input=[cl100k.encode(t) for t in texts])
    by_text = client.embeddings.create(model="twokeys", input=texts)
    assert [d.embedding for d in by_ids.data] == [d.embedding for d in by_text.data]
    one = client.embeddings.create(model="twokeys", input=cl100k.encode(texts[1]))
    assert one.data[0].embedding == by_text.data[1].embedding
    with pytest.raises(openai.BadRequestError, match="input\\[0\\]: 999999999 is not a cl100k"):
        client.embeddings.create(model="twokeys", input=[[9906, 999999999]])


def test_the_docs_page_works_offline_and_with_a_key(servers: tuple[str, str]) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright")
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).is_file():
        pytest.skip(f"no chromium at {CHROMIUM}")
    url, keyed = servers
    elsewhere: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for base, key in ((url, None), (keyed, KEY)):
                page = browser.new_page()

                def local_only(route: Any) -> None:
                    if route.request.url.startswith("http://127.0.0.1"):
                        route.continue_()
                    else:
                        elsewhere.append(route.request.url)
                        route.abort()

                page.route("**/*", local_only)
                page.goto(f"{base}/docs")
                if key is not None:
                    page.fill("#key-input", key)
                    page.click("#key button")
                page.wait_for_selector(".opblock-summary-path", timeout=15_000)
                paths = page.locator(".opblock-summary-path").all_inner_texts()
                assert any("/v1/chat/completions" in t for t in paths), paths
                page.close()
        finally:
            browser.close()
    assert elsewhere == []  # nothing but the server itself was asked for


def test_documents_are_listed_a_page_at_a_time_filtered(servers: tuple[str, str]) -> None:
    url, _ = servers
    everything = httpx.get(f"{url}/documents", params={"limit": 1000}).json()
    ids = [d["id"] for d in everything["documents"]]
    assert everything["total"] == len(ids) > 30 and ids == sorted(ids)
    pages = [
        httpx.get(f"{url}/documents", params={"offset": o, "limit": 10}).json()
        for o in range(0, len(ids), 10)
    ]
    assert [d["id"] for p in pages for d in p["documents"]] == ids
    policies = httpx.get(f"{url}/documents", params={"filter": ["path:policies/*"]}).json()
    assert [d["id"] for d in policies["documents"]] == [
        "policies/privacy.md",
        "policies/refund-policy.md",
        "policies/shipping.md",
        "policies/warranty.md",
    ]
    warranty = policies["documents"][-1]
    assert warranty["title"] == "Limited Hardware Warranty" and warranty["kind"] == "markdown"
    record = httpx.get(f"{url}/documents/policies/warranty.md").json()
    assert warranty["chunks"] == len(record["chunks"]) > 0
    both = {"filter": ["path:policies/*", "id:policies/shipping.md,errors/e-102.md"]}
    assert [d["id"] for d in httpx.get(f"{url}/documents", params=both).json()["documents"]] == [
        "policies/shipping.md"
    ]


def test_search_pages_thresholds_groups_fields_and_batches(servers: tuple[str, str]) -> None:
    url, _ = servers

    def search(query: str = "refund warranty", **body: Any) -> dict[str, Any]:
        r = httpx.post(f"{url}/search", json={"query": query, "mode": "bm25", **body})
        assert r.status_code == 200, r.text
        data: dict[str, Any] = r.json()
        return data

    ten = search(k=10)["hits"]
    first, second = search(k=5), search(k=5, offset=5)
    assert [h["chunk_id"] for h in first["hits"] + second["hits"]] == [h["chunk_id"] for h in ten]
    assert first["more"] is True and second["offset"] == 5
    assert [h["rank"] for h in second["hits"]] == [6, 7, 8, 9, 10]
    threshold = ten[3]["score"]
    assert [h["chunk_id"] for h in search(k=10, min_score=threshold)["hits"]] == [
        h["chunk_id"] for h in ten if h["score"] >= threshold
    ]
    assert [h["doc_id"] for h in search(k=5, group_by_document=True)["hits"]] == [
        "policies/refund-policy.md",
        "policies/warranty.md",
    ]  # only two documents hold the words
    grouped = search("the camera is offline after a power cut", k=5, group_by_document=True)
    grouped = grouped["hits"]
    docs = [h["doc_id"] for h in grouped]
    assert len(docs) == len(set(docs)) == 5
    assert [h["rank"] for h in grouped] == [1, 2, 3, 4, 5]
    assert sum(h["others"] for h in grouped) > 0
    assert search(k=2, fields=["doc_id", "score"])["hits"] == [
        {"doc_id": h["doc_id"], "score": h["score"]} for h in ten[:2]
    ]
    either = search("refund warranty shipping", k=10, filters=["path:policies/* | path:general/"])
    assert either["request"]["filters"] == ["path:policies/* | path:general/"]
    assert either["hits"] and all(
        h["doc_id"].startswith(("policies/", "general/")) for h in either["hits"]
    )
    others = search("refund warranty", k=10, filters=["!path:policies/"])["hits"]
    assert all(not h["doc_id"].startswith("policies/") for h in others)
    batch = httpx.post(
        f"{url}/search/batch",
        json={"searches": [{"query": ZX, "k": 1}, {"query": "refund", "k": 2, "mode": "bm25"}]},
    ).json()["results"]
    assert [len(r["hits"]) for r in batch] == [1, 2]
    assert batch[0]["hits"][0]["doc_id"] == "errors/zx-4821.md"
    assert batch[0]["generation"] == batch[1]["generation"]
