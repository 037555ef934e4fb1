"""``twokeys mcp`` through the official SDK's own client: in process, over stdio (the
command as a client launches it) and over streamable HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

mcp = pytest.importorskip("mcp", reason="needs the mcp extra")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from conftest import SUPPORT_KB  # noqa: E402
from twokeys import IndexOptions, build_index  # noqa: E402
from twokeys.server.mcp_server import create_mcp  # noqa: E402
from twokeys.server.service import IndexService  # noqa: E402

ZX = "What does error code ZX-4821 mean?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture(scope="module")
def lexical_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """For the subprocesses, which do not have the test encoder."""
    path = tmp_path_factory.mktemp("mcp-lex") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder=None))
    return path


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data: dict[str, Any] = result.structured_content
        return data
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


def test_tools_and_resources_in_process(kb: Path) -> None:
    service = IndexService(kb)

    async def main() -> None:
        async with Client(create_mcp(service)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search", "ask", "get_document"}
            assert "query" in tools["search"].input_schema["properties"]
            hits = structured(await client.call_tool("search", {"query": ZX, "k": 3}))["hits"]
            assert len(hits) == 3 and hits[0]["doc_id"] == "errors/zx-4821.md"
            bm25 = structured(
                await client.call_tool("search", {"query": ZX, "mode": "bm25", "explain": True})
            )["hits"]
            assert bm25[0]["evidence"][0]["matched_terms"]
            policies = structured(
                await client.call_tool(
                    "search", {"query": "refund", "k": 3, "filters": ["path:policies/"]}
                )
            )["hits"]
            assert [h["doc_id"][:9] for h in policies] == ["policies/"] * 3
            answer = structured(await client.call_tool("ask", {"question": ZX}))
            assert answer["kind"] == "extractive"
            assert answer["sources"][0]["path"] == "errors/zx-4821.md"
            doc = structured(
                await client.call_tool("get_document", {"doc_id": "errors/zx-4821.md"})
            )
            assert doc["title"].startswith("Error ZX-4821")
            assert doc["chunks"][0]["chunk_id"] == "errors/zx-4821.md#0"
            missing = await client.call_tool("get_document", {"doc_id": "no/such.md"})
            assert missing.is_error and "no document 'no/such.md'" in missing.content[0].text
            bad = await client.call_tool("search", {"query": ZX, "mode": "sideways"})
            assert bad.is_error and "mode: 'sideways' is not one of" in bad.content[0].text
            too_many = await client.call_tool("search", {"query": ZX, "k": 1000})
            assert too_many.is_error and "k: 1000; the limit is 100" in too_many.content[0].text
            resources = (await client.list_resources()).resources
            uris = {str(r.uri) for r in resources}
            assert "twokeys://documents/errors/zx-4821.md" in uris
            assert len(resources) == 34
            read = await client.read_resource("twokeys://documents/errors/zx-4821.md")
            data = json.loads(read.contents[0].text)  # type: ignore[union-attr]
            assert data["id"] == "errors/zx-4821.md"

    anyio.run(main)
    service.close()


def _env() -> dict[str, str]:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root / "src"), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.slow
def test_stdio_transport(lexical_kb: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "twokeys.cli", "mcp", "--index", str(lexical_kb)],
        env=_env(),
    )

    async def main() -> None:
        async with Client(params) as client:
            result = await client.call_tool("search", {"query": ZX, "mode": "bm25", "k": 2})
            assert structured(result)["hits"][0]["doc_id"] == "errors/zx-4821.md"

    anyio.run(main)


KEY = "mcp-key-0123456789abcdef"


@pytest.fixture(params=["open", "keyed"])
def http_server(
    lexical_kb: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[str, str | None]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    key = KEY if request.param == "keyed" else None
    extra: list[str] = []
    if key:
        (tmp_path / "key").write_text(key)
        extra = ["--api-key-file", str(tmp_path / "key")]
    command = ["mcp", "--index", str(lexical_kb), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "twokeys.cli", *command, *extra],
        env=_env(),
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < deadline, "mcp did not start"
            time.sleep(0.2)
    try:
        yield url, key
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_streamable_http_transport(http_server: tuple[str, str | None]) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    url, key = http_server
    if key is not None:
        r = httpx.post(url, json={}, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401 and "API key" in r.text

    async def main() -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport) as client:
                result = await client.call_tool("search", {"query": ZX, "mode": "bm25", "k": 2})
                assert structured(result)["hits"][0]["doc_id"] == "errors/zx-4821.md"
                tools = {t.name for t in (await client.list_tools()).tools}
                assert tools == {"search", "ask", "get_document"}

    anyio.run(main)


def test_http_transport_refuses_other_addresses(lexical_kb: Path) -> None:
    from click.testing import CliRunner

    from twokeys.cli import main

    result = CliRunner().invoke(
        main, ["mcp", "--index", str(lexical_kb), "--transport", "http", "--host", "0.0.0.0"]
    )
    assert result.exit_code == 1
    assert "binds loopback addresses only" in result.output
