"""The default encoder's optimised ONNX graph, kept on disk between processes.

The first encoder saves onnxruntime's optimised graph in the cache folder; the next one
(another process included) loads it, and its vectors are the built session's, bit for
bit. A cache file that is damaged, a record that doesn't match, a file that doesn't
load or a folder that can't be written are passed over: the session is built as without
a cache, with the same vectors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from twokeys.dense import onnx_cache
from twokeys.dense.onnx_minilm import OnnxMiniLM

TEXTS = ["What does error code ZX-4821 mean?", "reset the hub to factory settings", "x"]


def _vectors(encoder: OnnxMiniLM) -> np.ndarray:
    return encoder.encode(TEXTS, "query")


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """Vectors of a session built without any cache."""
    return _vectors(OnnxMiniLM(threads=1, session_cache=False))


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory, reference: np.ndarray) -> Path:
    folder = tmp_path_factory.mktemp("onnx-cache")
    first = OnnxMiniLM(threads=1, session_cache=folder)
    assert first.session_origin == "saved"
    assert np.array_equal(_vectors(first), reference)
    return folder


def _files(folder: Path) -> tuple[Path, Path]:
    (graph,) = folder.glob("*.onnx")
    return graph, graph.with_suffix(".json")


def _copy(filled: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for file in filled.iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    return folder


def test_the_next_encoder_loads_the_saved_graph_and_agrees(
    filled: Path, reference: np.ndarray
) -> None:
    graph, meta = _files(filled)
    record = json.loads(meta.read_text(encoding="utf-8"))
    assert record["size"] == graph.stat().st_size
    assert not [p for p in filled.iterdir() if p.name.startswith(".")]  # no scratch left
    again = OnnxMiniLM(threads=1, session_cache=filled)
    assert again.session_origin == "cached"
    assert np.array_equal(_vectors(again), reference)


def test_another_process_uses_the_cached_file(
    filled: Path, reference: np.ndarray, tmp_path: Path
) -> None:
    """The user's cache folder, ``$TWOKEYS_CACHE/onnx``, as a fresh process finds it."""
    _copy(filled, tmp_path / "home" / "onnx")
    code = (
        "import json; from twokeys.dense.onnx_minilm import OnnxMiniLM; "
        f"e = OnnxMiniLM(threads=1); v = e.encode({TEXTS!r}, 'query'); "
        "print(json.dumps([e.session_origin, v.tolist()]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TWOKEYS_CACHE": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    origin, vectors = json.loads(done.stdout)
    assert origin == "cached"
    assert np.array_equal(np.asarray(vectors, np.float32), reference)


@pytest.mark.parametrize("damage", ["flipped bytes", "truncated", "not onnx", "bad record"])
def test_a_damaged_cache_is_rebuilt_with_the_same_vectors(
    filled: Path, reference: np.ndarray, tmp_path: Path, damage: str
) -> None:
    folder = _copy(filled, tmp_path / "cache")
    graph, meta = _files(folder)
    data = bytearray(graph.read_bytes())
    if damage == "flipped bytes":  # same size: only the checksum tells
        middle = len(data) // 2
        data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
        graph.write_bytes(bytes(data))
    elif damage == "truncated":
        graph.write_bytes(bytes(data[: len(data) // 3]))
    elif damage == "not onnx":  # a record that matches a file onnxruntime refuses
        junk = b"not an onnx graph" * 100
        graph.write_bytes(junk)
        meta.write_text(json.dumps({"size": len(junk), "crc32": zlib.crc32(junk)}))
    else:
        meta.write_text("{", encoding="utf-8")
    encoder = OnnxMiniLM(threads=1, session_cache=folder)
    assert encoder.session_origin == "saved"  # rebuilt, and the cache mended
    assert np.array_equal(_vectors(encoder), reference)
    mended = OnnxMiniLM(threads=1, session_cache=folder)
    assert mended.session_origin == "cached"
    assert np.array_equal(_vectors(mended), reference)


def test_a_folder_that_cannot_be_written_builds_the_session(
    tmp_path: Path, reference: np.ndarray
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    encoder = OnnxMiniLM(threads=1, session_cache=blocker / "onnx")
    assert encoder.session_origin == "built"
    assert np.array_equal(_vectors(encoder), reference)


def test_no_home_folder_means_no_cache(
    monkeypatch: pytest.MonkeyPatch, reference: np.ndarray
) -> None:
    """A process with no $HOME and no password entry (a service account) names no cache
    folder: the session is built, nothing fails."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    for name in ("TWOKEYS_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert onnx_cache.default_folder() is None
    encoder = OnnxMiniLM(threads=1)
    assert encoder.session_origin == "built"
    assert np.array_equal(_vectors(encoder), reference)
