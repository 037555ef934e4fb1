"""Backends named by import path load on first use, through every registry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT, HashEncoder
from twokeys.dense.encoder import get_encoder, register_encoder
from twokeys.errors import ConfigError
from twokeys.registry import resolve
from twokeys.rerank import get_reranker, register_reranker


def test_resolve_takes_a_callable_or_an_import_path() -> None:
    assert resolve(len) is len
    assert resolve("conftest:HashEncoder") is HashEncoder
    for bad in ("conftest", "conftest:", ":HashEncoder"):
        with pytest.raises(ValueError, match="module:attribute"):
            resolve(bad)
    with pytest.raises(AttributeError):
        resolve("conftest:NoSuchThing")


def test_an_encoder_and_a_reranker_registered_by_path() -> None:
    register_encoder("test-by-path", "conftest:HashEncoder")
    assert isinstance(get_encoder("test-by-path"), HashEncoder)
    register_reranker("test-proximity-by-path", "twokeys.rerank.proximity:ProximityReranker")
    assert get_reranker("test-proximity-by-path").name == get_reranker("proximity").name
    with pytest.raises(ConfigError, match="unknown encoder"):
        get_encoder("no-such-encoder")


def test_the_built_in_backends_are_not_imported_until_named() -> None:
    code = (
        "import sys, twokeys.dense.encoder, twokeys.rerank, twokeys.llm.spec; "
        "print(sorted(m for m in sys.modules if m.startswith(('twokeys.dense.onnx', "
        "'twokeys.dense.http', 'twokeys.rerank.e5', 'twokeys.rerank.cross', "
        "'twokeys.rerank.proximity', 'twokeys.llm.local', 'twokeys.llm.ollama', "
        "'twokeys.llm.openai'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src")},
    )
    assert done.stdout.strip() == "[]"
