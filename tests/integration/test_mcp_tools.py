"""The MCP tools as an agent sees them, through the official SDK's client: every
parameter described, annotations set, locators in results, the writing tool only when
enabled; and the streamable HTTP transport behind the server's Host, Origin and key
checks (a real uvicorn on 127.0.0.1), where a read-only key cannot call it."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="needs the mcp extra")
pytest.importorskip("uvicorn", reason="needs the serve extra")

from mcp import Client

from conftest import SUPPORT_KB
from serverutil import running
from twokeys import IndexOptions, build_index, open_index
from twokeys.server.keys import ApiKey
from twokeys.server.mcp_server import create_mcp, guarded_http_app
from twokeys.server.service import IndexService

ZX = "What does error code ZX-4821 mean?"
READER = ApiKey("agent", "read", "agent-key-0123456789abcdef")
WRITER = ApiKey("curator", "write", "curator-key-0123456789abcdef")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp-tools") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture
def kb(built: Path, tmp_path: Path) -> Path:
    path = tmp_path / "kb.twokeys"
    shutil.copytree(built, path)
    return path


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def test_tools_are_described_and_annotated_and_read_only_by_default(kb: Path) -> None:
    service = IndexService(kb)

    async def main() -> None:
        async with Client(create_mcp(service)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search", "ask", "get_document"}  # no writing tool
            for tool in tools.values():
                assert tool.description, tool.name
                for name, schema in tool.input_schema["properties"].items():
                    assert schema.get("description"), (tool.name, name)
                notes = tool.annotations
                assert notes is not None, tool.name
                assert notes.read_only_hint is True and notes.idempotent_hint is True
                assert notes.open_world_hint is False  # no model server: a closed world
            hits = data(await client.call_tool("search", {"query": ZX, "k": 2}))["hits"]
            assert hits[0]["cite"] == "errors/zx-4821.md" and "locator" in hits[0]
            doc = data(await client.call_tool("get_document", {"doc_id": "errors/zx-4821.md"}))
            assert all(c["cite"] == "errors/zx-4821.md" for c in doc["chunks"])
            bad = await client.call_tool("get_document", {"doc_id": "../../etc/passwd"})
            assert bad.is_error and "indexed folders" in bad.content[0].text

    anyio.run(main)
    service.close()


def test_the_write_tool_exists_when_enabled_and_writes(kb: Path) -> None:
    service = IndexService(kb)

    async def main() -> None:
        async with Client(create_mcp(service, allow_write=True)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            put = tools["put_document"]
            notes = put.annotations
            assert notes is not None
            assert (notes.read_only_hint, notes.destructive_hint) == (False, True)
            assert (notes.idempotent_hint, notes.open_world_hint) == (True, False)
            props = put.input_schema["properties"]
            assert set(props) == {"doc_id", "text", "title", "kind"}
            assert all(p.get("description") for p in props.values())
            doc = {"doc_id": "notes/qq-7781.md", "text": "# Error QQ-7781\n\nLet it cool."}
            report = data(await client.call_tool("put_document", doc))
            assert report["added"] == 1 and report["documents"] == 35
            again = data(await client.call_tool("put_document", doc))
            assert again["added"] == 0 and again["documents"] == 35  # idempotent
            hits = data(await client.call_tool("search", {"query": "QQ-7781", "mode": "bm25"}))
            assert hits["hits"][0]["doc_id"] == "notes/qq-7781.md"
            bad = await client.call_tool("put_document", {**doc, "doc_id": "../x.md"})
            assert bad.is_error and "indexed folders" in bad.content[0].text

    anyio.run(main)
    service.close()


def test_http_transport_checks_host_origin_and_roles(kb: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    service = IndexService(kb)
    with open_index(kb) as index:
        before = index.backend.all_documents()
    server = create_mcp(service, allow_write=True)
    app = guarded_http_app(server.streamable_http_app(), (READER, WRITER))
    with running(app) as base:
        url = f"{base}/mcp"
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        accept = {"Accept": "application/json, text/event-stream"}
        auth = {"Authorization": f"Bearer {READER.secret}", **accept}
        r = httpx.post(url, json=init, headers={**auth, "Origin": "http://evil.example"})
        assert r.status_code == 403
        r = httpx.post(url, json=init, headers={**auth, "Host": "evil.example"})
        assert r.status_code == 421
        r = httpx.post(url, json=init, headers=accept)
        assert r.status_code == 401
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "put_document", "arguments": {"doc_id": "x.md", "text": "x"}},
        }
        r = httpx.post(url, json=call, headers=auth)
        assert r.status_code == 403 and "'agent' is read-only" in r.text

        async def session(key: ApiKey) -> tuple[set[str], Any]:
            headers = {"Authorization": f"Bearer {key.secret}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                names = {t.name for t in (await client.list_tools()).tools}
                found = data(await client.call_tool("search", {"query": ZX, "k": 1}))
                assert found["hits"][0]["doc_id"] == "errors/zx-4821.md"
                doc = {"doc_id": "notes/n.md", "text": "# N\n\nA note."}
                try:
                    return names, await client.call_tool("put_document", doc)
                except Exception as exc:  # the read-only key's call is refused with 403
                    return names, exc

        names, refused = anyio.run(session, READER)
        assert "put_document" in names and isinstance(refused, Exception)
        with open_index(kb) as index:
            assert index.backend.all_documents() == before
        names, written = anyio.run(session, WRITER)
        assert data(written)["added"] == 1
    service.close()


def test_the_ask_tool_answers_with_the_servers_answer_options(kb: Path, tmp_path: Path) -> None:
    # mcp --confidence learned --llm-stage verdict: the model's verdict is asked and
    # weighed by its measured reliability (a scripted model that says no to everything)
    from conftest import ScriptedLLM
    from twokeys.rag.ask import AskOptions
    from twokeys.rag.verdicts import Reliability

    measured = Reliability("scripted", 30, 10, 10, 30).save(tmp_path / "measured.json")
    answers = AskOptions(
        confidence="learned", llm_stages=("verdict",), verdict_calibration=str(measured)
    )
    service = IndexService(kb)
    llm = ScriptedLLM("No.")

    async def main() -> None:
        async with Client(create_mcp(service, llm=llm, answers=answers)) as client:
            answer = data(await client.call_tool("ask", {"question": ZX, "mode": "bm25"}))
            (judged,) = answer["confidence"]
            assert judged["model_verdict"] is False
            assert judged["verdict_log_ratio"] == pytest.approx(math.log(11 / 31), abs=1e-4)
            assert "the model said no" in judged["reason"]

    anyio.run(main)
    service.close()
