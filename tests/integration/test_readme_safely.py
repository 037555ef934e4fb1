"""The README's "Running it safely" section runs as written: its keys file, its shell
lines (``twokeys serve`` in the background on a free loopback port instead of
``0.0.0.0:8000``, over the support KB indexed without vectors: the examples search
with BM25), its Prometheus scrape configuration scraping the real server, the
flags it names (each in ``twokeys serve --help``) and its load table (the recorded run's
figures)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section() -> str:
    return README.split("\n## Running it safely")[1].split("\n## ")[0]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_the_flags_named_are_serve_s() -> None:
    """(--duration is the load benchmark's.)"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    run = subprocess.run(
        [sys.executable, "-m", "twokeys.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", _section())) - {"--duration"}
    assert {"--keys-file", "--request-timeout", "--max-concurrent-per-key"} <= named
    assert all(flag in run.stdout for flag in named), named - set(run.stdout.split())


def test_the_load_table_is_the_recorded_run() -> None:
    result = json.loads((ROOT / "benchmarks" / "results" / "serve_load.json").read_text())
    rows = [line for line in _section().splitlines() if line.startswith("| ")][1:]
    search = rows[0].split("|")
    assert int(search[1]) == result["latency_ms"]["search"]["count"]
    p50 = result["latency_ms"]["search"]["p50"] / 1000
    assert search[3].strip().startswith(f"{p50:.2f}")
    assert f"{round(result['peak_rss_mb'])} MiB" in rows[0]
    assert result["five_xx"] == 0 and result["failed_searches"] == 0 and result["count_exact"]


def test_running_it_safely_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx
    import yaml

    pytest.importorskip("fastapi", reason="needs the serve extra")
    parser = pytest.importorskip("prometheus_client.parser", reason="needs the serve extra")
    if shutil.which("curl") is None:
        pytest.skip("needs curl")
    from twokeys.server.keys import parse_keys

    section = _section()
    (keys_text,) = re.findall(r"```text\n(.*?)```", section, flags=re.S)
    keys = parse_keys(keys_text, "README keys.txt")
    assert [k.role for k in keys] == ["read", "write"]
    (tmp_path / "keys.txt").write_text(keys_text)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TWOKEYS_API_KEYS", raising=False)
    port = str(_free_port())
    lines = [
        line.replace("8000", port).replace("0.0.0.0", "127.0.0.1")
        for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)
        for line in block.splitlines()
        if line.strip()
    ]
    assert lines[0].startswith("twokeys serve") and "--keys-file keys.txt" in lines[0]
    from twokeys import IndexOptions, build_index

    build_index(
        ROOT / "examples/support-kb/docs", tmp_path / "kb.twokeys", IndexOptions(encoder=None)
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    env.pop("TWOKEYS_API_KEYS", None)
    twokeys = [sys.executable, "-m", "twokeys.cli"]
    server: subprocess.Popen[bytes] | None = None
    log = tmp_path / "access.log"
    try:
        for line in lines:
            argv = shlex.split(line)
            if argv[:2] == ["twokeys", "serve"]:
                with log.open("wb") as out:
                    server = subprocess.Popen([*twokeys, *argv[1:]], env=env, stderr=out)
                deadline = time.monotonic() + 90
                while True:
                    try:
                        httpx.get(f"http://127.0.0.1:{port}/healthz")
                        break
                    except httpx.TransportError:
                        assert server.poll() is None and time.monotonic() < deadline
                        time.sleep(0.2)
            else:
                assert argv[0] == "curl"
                run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
                assert run.returncode == 0 and run.stdout, line
                if "/metrics" in line:
                    names = {f.name for f in parser.text_string_to_metric_families(run.stdout)}
                    assert "twokeys_search_duration_seconds" in names
                    assert 'mode="bm25"' in run.stdout
                elif "/search" in line:
                    assert json.loads(run.stdout)["hits"][0]["doc_id"] == "errors/zx-4821.md"
                else:
                    assert json.loads(run.stdout) == {"status": "ready"}
        # Prometheus, as configured, with the read key in its credentials file
        (config,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
        job = yaml.safe_load(config)["scrape_configs"][0]
        assert job["authorization"]["type"] == "Bearer"
        credentials = tmp_path / "twokeys.key"
        credentials.write_text(keys[0].secret + "\n")
        (target,) = job["static_configs"][0]["targets"]
        host = target.rsplit(":", 1)[0]
        r = httpx.get(
            f"http://127.0.0.1:{port}{job['metrics_path']}",
            headers={
                "Host": f"{host}:{port}",  # the name --allowed-host lets in
                "Authorization": "Bearer " + credentials.read_text().strip(),
            },
        )
        assert r.status_code == 200
        families = {f.name: f for f in parser.text_string_to_metric_families(r.text)}
        assert families["twokeys_index_documents"].samples[0].value == 34
        # a name the server was not told of is refused (DNS rebinding)
        r = httpx.get(f"http://127.0.0.1:{port}/readyz", headers={"Host": "evil.example"})
        assert r.status_code == 421
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    logged = [
        json.loads(x.split(" ", 2)[2]) for x in log.read_text().splitlines() if '"route"' in x
    ]
    assert [x["key"] for x in logged if x["route"] == "/search"] == ["search-ui"]
    assert all(k.secret not in log.read_text() for k in keys)
