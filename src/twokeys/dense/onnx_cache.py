"""onnxruntime's optimised graph of an encoder, kept on disk between processes.

A session made from a graph optimises it every time it starts, and the default encoder
first builds that graph from the shipped weights (:mod:`twokeys.dense.minilm_graph`):
about a third of a fresh process's hybrid search. The first process saves
onnxruntime's optimised graph (``SessionOptions.optimized_model_filepath``) in the
user's cache folder (:func:`twokeys.cachedir.cache_home` ``/ "onnx"``); later ones load
that file with graph optimisation off, and never build the graph.

The file is named by a key over everything its contents depend on: the source graph's
fingerprint (the model file's hash and the graph's recipe), onnxruntime's version, the
optimisation level and the machine (a fully optimised graph may hold choices made for
this CPU). A JSON file beside it records its size and CRC-32. A file that doesn't match
them or doesn't load, or a folder that can't be written, is passed over silently: the
session is built from the source, as without a cache, and the cache is rewritten when
it can be. Both files are written under temporary names and renamed into place, so a
reader sees a whole file or none, and processes racing to fill the cache each write
their own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import platform
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import onnxruntime as ort

#: what :func:`cached_session` did: loaded the cached graph, built and saved it, or
#: built it without saving (no writable cache folder)
Outcome = Literal["cached", "saved", "built"]

#: bumped when the files' layout or the key's recipe changes, or when a graph built from
#: the same fingerprint changes (2: int8 products exact on CPUs without VNNI)
CACHE_VERSION = 2


def default_folder() -> Path | None:
    """``<user cache>/onnx``, or None where there is no home folder to name one."""
    from twokeys.cachedir import cache_home

    try:
        return cache_home() / "onnx"
    except RuntimeError:  # Path.home(): no $HOME and no password entry
        return None


def cache_key(fingerprint: str, optimization_level: int) -> str:
    """The name of a cached graph: a hash of all its contents depend on."""
    import onnxruntime as ort

    parts = {
        "cache": CACHE_VERSION,
        "source": fingerprint,
        "onnxruntime": ort.__version__,
        "level": optimization_level,
        "machine": platform.machine(),
        "cpu": _cpu_flags(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _cpu_flags() -> str:
    """The CPU's instruction-set flags (Linux), else what ``platform`` says of it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith(("flags", "Features")):
                    return hashlib.sha256(line.encode()).hexdigest()[:16]
    except OSError:
        pass
    return platform.processor()


def cached_session(
    source: Callable[[], str | bytes],
    fingerprint: str,
    options: Callable[[], ort.SessionOptions],
    *,
    folder: Path | None = None,
) -> tuple[ort.InferenceSession, Outcome]:
    """A CPU session of the graph ``source()`` returns (a path or the model's bytes),
    loaded from the cache when it holds a good copy of its optimised graph.

    ``fingerprint`` names the source's contents; ``options()`` makes fresh session
    options (its optimisation level is the one the cached graph was made with).
    ``folder`` defaults to :func:`default_folder`.
    """
    import onnxruntime as ort

    folder = default_folder() if folder is None else folder
    if folder is None:
        return _session(source(), options()), "built"
    level = options().graph_optimization_level
    key = cache_key(fingerprint, int(level))
    graph, meta = folder / f"{key}.onnx", folder / f"{key}.json"
    if _intact(graph, meta):
        cached = options()
        cached.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return _session(str(graph), cached), "cached"
        except Exception:  # a cache that doesn't load is rebuilt
            pass
    built = options()
    scratch = _scratch(folder, key)
    if scratch is None:
        return _session(source(), built), "built"
    built.optimized_model_filepath = str(scratch)
    try:
        session = _session(source(), built)
    except Exception:  # saving failed (a full disk): build without
        _discard(scratch)
        return _session(source(), options()), "built"
    try:
        data = scratch.read_bytes()
        record = {"size": len(data), "crc32": zlib.crc32(data)}
        note = _scratch(folder, key, suffix=".json")
        if note is None:
            raise OSError("cache folder not writable")
        note.write_text(json.dumps(record), encoding="utf-8")
        os.replace(scratch, graph)
        os.replace(note, meta)
    except OSError:
        _discard(scratch)
        return session, "built"
    return session, "saved"


def _intact(graph: Path, meta: Path) -> bool:
    """Whether ``graph`` is the file ``meta`` describes (its size and CRC-32)."""
    try:
        record = json.loads(meta.read_text(encoding="utf-8"))
        with open(graph, "rb") as fh:
            if os.fstat(fh.fileno()).st_size != record["size"]:
                return False
            # mapped, not read: half the CPU time of reading a copy first
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return bool(zlib.crc32(data) == record["crc32"])
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _session(model: str | bytes, options: ort.SessionOptions) -> ort.InferenceSession:
    import onnxruntime as ort

    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _scratch(folder: Path, key: str, *, suffix: str = ".onnx") -> Path | None:
    """A new empty file in ``folder`` to be renamed into place, or None when the
    folder can't be made or written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{key}.", suffix=suffix, dir=folder)
    except OSError:
        return None
    os.close(fd)
    return Path(name)


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
