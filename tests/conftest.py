"""Shared fixtures: a deterministic fake encoder registered through the real extension point."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pg_fixtures import pg_server, pg_url  # noqa: F401 - one PostgreSQL per test session
from twokeys.dense.encoder import Encoder, Kind, register_encoder
from twokeys.engine import Index, open_index
from twokeys.llm.base import LLM, Prompt
from twokeys.llm.http import ServiceUnavailableError
from twokeys.request import SearchRequest
from twokeys.retrievers.hybrid import HybridRetriever

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
SUPPORT_KB = ROOT / "examples" / "support-kb"


class HashEncoder(Encoder):
    """Bag-of-words feature hashing into 64 dimensions: fast, deterministic, no model."""

    id = "test:hash-64"
    dim = 64
    max_tokens = 512

    def __init__(self) -> None:
        self.calls = 0
        self.encoded = 0

    def fingerprint(self) -> str:
        return "sha256:" + hashlib.sha256(b"hash-64-v1").hexdigest()

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) for t in texts]

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.encoded += len(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            out[i, 0] += 1e-3  # never all-zero
        return out


register_encoder("test-hash", HashEncoder)

#: the page about ``DebugStruct`` and the ``Debug`` trait's page, which uses it: BM25 and
#: :class:`PrefersTheTrait` both rank the trait's page first (the heading rule's tests)
DEBUG_PAGES = {
    "debugstruct.md": "# DebugStruct\n\nA helper for writing formatted structs.\n",
    "debug.md": "# Debug\n\nThe Debug trait: writing Debug implementations by hand, "
    "with a DebugStruct helper from debug_struct; DebugStruct writes each field.\n",
}


class PrefersTheTrait(HashEncoder):
    """A dense model that reads "Debug implementations" as the ``Debug`` trait: the
    query and any text about the trait share one direction."""

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), self.dim), 1e-3, np.float32)
        for i, text in enumerate(texts):
            out[i, 0 if kind == "query" or "trait" in text else 1] = 1.0
        return out


CODE_PAGES = {
    "zx-4812.md": "# Error ZX-4812: Firmware signature check failed\n\n"
    "The firmware update failed its signature check. Retry the firmware update.\n",
    "zx-4821.md": "# Error ZX-4821: Power supply undervoltage\n\n"
    "The input voltage is too low. Use the original power adapter.\n",
    "cameras.md": "# Cameras\n\nPair a camera with the hub from the app.\n",
}


class ReadsCodesByPieces(HashEncoder):
    """A dense model to which ``ZX-4812`` and ``ZX-4821`` are the same pieces: it reads
    a query's other words, prefers any text about firmware, and places any text writing
    a ``ZX-`` code nearer the query than one without."""

    def embed_batch(self, texts: Sequence[str], kind: Kind) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), self.dim), 1e-3, np.float32)
        for i, text in enumerate(texts):
            out[i, 0 if kind == "query" or "firmware" in text.lower() else 1] = 1.0
            if kind != "query" and "ZX-" in text:
                out[i, 0] += 0.5
        return out


class ScriptedLLM(LLM):
    """Answers every prompt with one fixed text, whatever the sources say (streamed in two
    pieces, or whole), and records what it was asked: (prompt, stop strings, max_tokens)
    per call."""

    def __init__(
        self, answer: str, *, chat: bool = True, name: str = "scripted", whole: bool = False
    ) -> None:
        self.name = name
        self.chat = chat
        self.answer = answer
        self.whole = whole
        self.calls: list[tuple[Prompt, tuple[str, ...], int]] = []

    @property
    def prompts(self) -> list[Prompt]:
        return [prompt for prompt, _, _ in self.calls]

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        self.calls.append((prompt, tuple(stop), max_tokens))
        half = len(self.answer) if self.whole else len(self.answer) // 2
        yield from (piece for piece in (self.answer[:half], self.answer[half:]) if piece)


class DownLLM(LLM):
    """A model whose server refuses the connection: every call raises at once."""

    name = "down"

    def stream(
        self,
        prompt: Prompt,
        *,
        stop: Sequence[str] = (),
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Iterator[str]:
        raise ServiceUnavailableError("stub at http://127.0.0.1:9: connection refused")
        yield ""  # pragma: no cover - makes this a generator


try:  # property tests: a few dozen derandomised cases in the suite, 10,000 in `make fuzz`
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass
else:
    settings.register_profile(
        "twokeys-quick", max_examples=40, deadline=None, derandomize=True, database=None
    )
    settings.register_profile(
        "twokeys-fuzz",
        max_examples=10_000,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
    fuzz = os.environ.get("TWOKEYS_HYPOTHESIS") == "fuzz"
    settings.load_profile("twokeys-fuzz" if fuzz else "twokeys-quick")


@pytest.fixture(scope="session", autouse=True)
def _own_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite keeps what it caches (ONNX graphs, eval indexes) in a folder of its
    own, so it neither fills the user's ~/.cache nor reads what an earlier run left."""
    saved = os.environ.get("TWOKEYS_CACHE")
    os.environ["TWOKEYS_CACHE"] = str(tmp_path_factory.mktemp("twokeys-cache"))
    yield
    if saved is None:
        os.environ.pop("TWOKEYS_CACHE", None)
    else:
        os.environ["TWOKEYS_CACHE"] = saved


@pytest.fixture
def hash_encoder() -> HashEncoder:
    return HashEncoder()


def write_docs(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def hash_index(tmp_path: Path, files: dict[str, str], encoder: Encoder) -> Path:
    """``files`` written under ``tmp_path/docs`` and indexed with ``encoder`` (registered as
    ``test-hash``) into ``tmp_path/kb.twokeys``, whose path is returned."""
    from twokeys import IndexOptions, build_index

    path = tmp_path / "kb.twokeys"
    docs = write_docs(tmp_path / "docs", files)
    build_index(docs, path, IndexOptions(encoder="test-hash"), encoder=encoder)
    return path


def assert_rule_decides(
    path: Path,
    encoder: Encoder,
    query: str,
    monkeypatch: pytest.MonkeyPatch,
    rule: str,
    ruled: str,
    unruled: str,
) -> None:
    """Through ``Index.search`` on the index at ``path``: the dense model's first hit for
    ``query`` is ``unruled``; the hybrid's is ``ruled``, and ``unruled`` once the fusion
    rule ``rule`` (a function :mod:`twokeys.retrievers.hybrid` calls) finds nothing."""
    import twokeys.retrievers.hybrid as hybrid

    with open_index(path, encoder=encoder) as index:
        assert index.search(query, mode="dense", k=1)[0].path == unruled
        assert index.search(query, mode="hybrid", k=1)[0].path == ruled
    monkeypatch.setattr(hybrid, rule, lambda *args: frozenset())
    with open_index(path, encoder=encoder) as index:
        assert index.search(query, mode="hybrid", k=1)[0].path == unruled


@contextmanager
def open_hybrid(
    path: Path, encoder: Encoder, query: str
) -> Iterator[tuple[Index, HybridRetriever]]:
    """The index at ``path`` opened with ``encoder``, and the hybrid retriever it builds for
    ``query`` (asserted to be one)."""
    with open_index(path, encoder=encoder) as index:
        retriever = index.retriever(SearchRequest(query))
        assert isinstance(retriever, HybridRetriever)
        yield index, retriever


@pytest.fixture(scope="module")
def support_kb_bm25(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lexical-only index of the example support KB (fast to build), one per module."""
    from twokeys import IndexOptions, build_index

    path = tmp_path_factory.mktemp("support-kb") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder=None))
    return path


@pytest.fixture
def no_llm_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own model settings (TWOKEYS_LLM, ...) never reach a test."""
    for name in ("TWOKEYS_LLM", "TWOKEYS_BASE_URL", "TWOKEYS_INDEX", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def filter_corpus() -> dict[str, str]:
    """Pages with front matter (lang, version, updated) in two folders, for filter tests."""
    docs = {}
    for i in range(12):
        lang = "en" if i % 3 else "de"
        folder = "policies" if i % 2 else "guides"
        docs[f"{folder}/doc-{i:02d}.md"] = (
            f"---\nlang: {lang}\nversion: {i}\nupdated: 2024-0{1 + i % 9}-15\n---\n"
            f"# Power page {i}\n\npower supply fuse number {i}. The power fuse rating.\n"
        )
    docs["notes/other.txt"] = "power power power fuse fuse supply\n"
    for i in range(8):  # pages without the query's words, so that their idf is positive
        docs[f"misc/page-{i}.md"] = f"# Misc {i}\n\nrefund parcel delivery screen update {i}\n"
    return docs
