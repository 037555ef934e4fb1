"""Every command and Python example in the README runs as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from twokeys.cli import main

pytestmark = pytest.mark.slow

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_readme_starts_with_the_two_commands() -> None:
    first = _blocks("console")[0]
    assert first.splitlines()[0].startswith("make demo")
    assert first.splitlines()[1].startswith("make test")


def test_readme_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYSTACK_TELEMETRY_ENABLED", "False")  # nothing leaves the machine
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    commands = [
        line[2:]
        for block in _blocks("console")
        for line in block.splitlines()
        if line.startswith("$ ")
    ]
    assert len(commands) >= 4
    runner = CliRunner()
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "twokeys"
        result = runner.invoke(main, argv[1:])
        assert result.exit_code == 0, (command, result.output, result.stderr)
        assert result.stdout.strip(), command
    for code in _blocks("python"):
        exec(compile(code, "README.md", "exec"), {})


def test_readme_eval_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `text` blocks' eval commands, on the small ADI collection they name."""
    if not (ROOT.parent / "shared" / "data" / "adi").is_dir():
        pytest.skip("../shared/data/adi is not here")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TWOKEYS_CACHE", str(tmp_path / "cache"))
    commands = [
        line
        for block in _blocks("text")
        for line in block.splitlines()
        if line.startswith("twokeys eval ")
    ]
    assert commands and all("../shared/data/adi" in c for c in commands)
    runner = CliRunner()
    for command in commands:
        argv = shlex.split(command)
        argv = [a.replace("adi.html", str(tmp_path / "adi.html")) for a in argv]
        result = runner.invoke(main, argv[1:])
        assert result.exit_code == 0, (command, result.output, result.stderr)
        assert "nDCG@10" in result.stdout, command


def _serve_section() -> str:
    return README.split("\n## Serve")[1].split("\n## ")[0]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_readme_serve_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Serve section: its shell lines in order (``twokeys serve`` in the background,
    on a free port instead of 8000), its OpenAI client example, and its MCP config."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    import time

    import anyio
    import httpx

    pytest.importorskip("fastapi", reason="needs the serve extra")
    pytest.importorskip("openai", reason="needs the test extra")
    pytest.importorskip("mcp", reason="needs the mcp extra")
    if shutil.which("curl") is None:
        pytest.skip("needs curl")
    section = _serve_section()
    port = str(_free_port())
    lines = [
        line.replace("8000", port)
        for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)
        for line in block.splitlines()
        if line.strip()
    ]
    assert lines[0].startswith("twokeys index") and lines[1].startswith("twokeys serve")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    twokeys = [sys.executable, "-m", "twokeys.cli"]
    server: subprocess.Popen[bytes] | None = None
    try:
        for line in lines:
            argv = shlex.split(line)
            if argv[:2] == ["twokeys", "serve"]:
                server = subprocess.Popen([*twokeys, *argv[1:]], env=env)
                deadline = time.monotonic() + 90
                while True:
                    try:
                        httpx.get(f"http://127.0.0.1:{port}/healthz")
                        break
                    except httpx.TransportError:
                        assert server.poll() is None and time.monotonic() < deadline
                        time.sleep(0.2)
            elif argv[0] == "twokeys":
                subprocess.run([*twokeys, *argv[1:]], env=env, check=True, timeout=300)
            else:
                assert argv[0] == "curl"
                run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
                assert run.returncode == 0 and run.stdout, line
                assert '"detail"' not in run.stdout, (line, run.stdout)
                if "-sN" in argv:
                    assert "event: done" in run.stdout
                else:
                    data = json.loads(run.stdout)
                    if "QQ-7781" in line and "hits" in data:
                        assert data["hits"][0]["doc_id"] == "notes/qq-7781.md"
        blocks = re.findall(r"```py\n(.*?)```", section, flags=re.S)
        assert len(blocks) == 2  # the OpenAI client, then twokeys.client
        for code in blocks:
            exec(compile(code.replace("8000", port), "README.md", "exec"), {})
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    (config,) = re.findall(r"```json\n(.*?)```", section, flags=re.S)
    entry = json.loads(config)["mcpServers"]["twokeys"]
    assert entry["command"] == "twokeys"
    args = [str(tmp_path / "kb.twokeys") if a.endswith("kb.twokeys") else a for a in entry["args"]]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "twokeys.cli", *args], env=env
    )

    async def call() -> None:
        async with Client(params) as client:
            result = await client.call_tool("search", {"query": "ZX-4821", "k": 1})
            assert "errors/zx-4821.md" in result.content[0].text  # type: ignore[union-attr]

    anyio.run(call)
