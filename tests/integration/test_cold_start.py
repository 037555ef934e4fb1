"""What a command imports: a bm25 search and ``--help`` load none of the heavy modules.

Each command runs in a fresh interpreter (``python -c``, the source tree first on the
path) that writes the names in ``sys.modules`` when the command is done; the checks are
on those names, not on timings (``benchmarks/cold_start.py`` times the same commands).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

# the command's modules are written to argv[1]; the command's arguments follow
_RUN = """
import json, sys
from twokeys.cli import main
dump, args = sys.argv[1], sys.argv[2:]
try:
    main(args, prog_name="twokeys")
except SystemExit as exc:
    assert not exc.code, exc.code
with open(dump, "w") as fh:
    json.dump(sorted(sys.modules), fh)
"""

#: modules a search in bm25 mode never needs, by name prefix
HEAVY = (
    "scipy",  # LSI, significance tests, batch scoring
    "onnxruntime",  # the dense encoder
    "tokenizers",
    "torch",
    "sentence_transformers",
    "httpx",  # model and encoder clients
    "fastapi",
    "mcp",
    "yaml",  # ingestion
    "bs4",
    "charset_normalizer",
    "rich",  # a search prints with click's styles
    "twokeys.indexer",
    "twokeys.ingest",
    "twokeys.repair",
    "twokeys.evaluation",
    "twokeys.lexical.lsi",
    "twokeys.retrievers.classic",
    "twokeys.dense.onnx_minilm",
    "twokeys.dense.http_encoders",
    "twokeys.rerank.e5",
    "twokeys.rerank.cross_encoder",
    "twokeys.llm",
    "twokeys.rag",
    "twokeys.server",
    "twokeys.store.postgres.backend",
)


def _loaded(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> set[str]:
    dump = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    subprocess.run(
        [sys.executable, "-c", _RUN, str(dump), *args],
        check=True,
        env=env,
        capture_output=True,
        cwd=tmp_path,
    )
    return set(json.loads(dump.read_text(encoding="utf-8")))


#: small modules under a heavy prefix that the CLI may load (a default it shows)
LIGHT = frozenset({"twokeys.ingest", "twokeys.ingest.limits"})


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules - LIGHT if any(m == h or m.startswith(f"{h}.") for h in HEAVY))


def test_a_bm25_search_loads_no_heavy_module(tmp_path: Path, support_kb_bm25: Path) -> None:
    modules = _loaded(
        tmp_path, "search", "ZX-4821", "--mode", "bm25", "--index", str(support_kb_bm25)
    )
    assert "twokeys.engine" in modules  # it did search
    assert _heavy(modules) == []


def test_help_loads_neither_the_engine_nor_a_backend(tmp_path: Path) -> None:
    modules = _loaded(tmp_path, "--help")
    assert _heavy(modules) == []
    assert not {"twokeys.engine", "twokeys.store.local", "twokeys.store.contract"} & modules
    # nor numpy, nor the modules whose defaults only index and search show
    assert not {m.partition(".")[0] for m in modules} & {"numpy", "Stemmer"}
    assert (
        not {
            "twokeys.cli_index",
            "twokeys.cli_search",
            "twokeys.request",
            "twokeys.analysis",
            "twokeys.chunking",
            "twokeys.types",
        }
        & modules
    )


def test_a_command_s_help_loads_its_own_module_only(tmp_path: Path) -> None:
    modules = _loaded(tmp_path, "index", "--help")
    assert "twokeys.cli_index" in modules
    assert not {"twokeys.cli_search", "twokeys.indexer", "twokeys.engine"} & modules


@pytest.mark.parametrize(
    ("command", "needs"),
    [("eval", "twokeys.evaluation.cli"), ("ask", "twokeys.cli_ask"), ("mcp", "twokeys.server")],
)
def test_a_command_of_another_module_loads_it_when_named(
    tmp_path: Path, command: str, needs: str
) -> None:
    """The check sees what a command loads: naming the command imports its module."""
    modules = _loaded(tmp_path, command, "--help")
    assert needs in modules
    assert _heavy(modules)  # eval's scipy, ask's model clients, the server's framework


def test_import_twokeys_loads_only_the_package(tmp_path: Path) -> None:
    code = "import json, sys, twokeys; print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True
    )
    own = {m for m in json.loads(done.stdout) if m.startswith("twokeys")}
    assert own == {"twokeys"}
    assert "numpy" not in json.loads(done.stdout)


def test_the_package_names_resolve_on_first_use() -> None:
    import twokeys
    from twokeys.engine import Index
    from twokeys.indexer import build_index

    assert twokeys.Index is Index
    assert twokeys.build_index is build_index
    assert set(twokeys.__all__) <= set(dir(twokeys))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = twokeys.no_such_name  # type: ignore[attr-defined]


def test_a_hybrid_search_loads_the_cached_graph_without_building_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With onnxruntime's optimised graph in the cache (the index's build put it there),
    a hybrid search loads it and writes nothing; with an empty cache it builds the
    graph and saves it."""
    from twokeys import IndexOptions, build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in [("a", "Reset the hub with a pin."), ("b", "Error ZX-4821: low voltage.")]:
        (docs / f"{name}.md").write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
    cache = tmp_path / "cache"
    monkeypatch.setenv("TWOKEYS_CACHE", str(cache))
    index = tmp_path / "kb.twokeys"
    build_index(docs, index, IndexOptions())

    def files(folder: Path) -> dict[str, tuple[int, int]]:
        return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*")}

    before = files(cache)
    assert any(name.endswith(".onnx") for name in before)
    warm = _loaded(tmp_path, "search", "voltage", "--index", str(index), env={})
    assert "onnxruntime" in warm and "twokeys.dense.onnx_cache" in warm
    assert files(cache) == before  # loaded, not built and saved again
    empty = tmp_path / "empty"
    _loaded(tmp_path, "search", "voltage", "--index", str(index), env={"TWOKEYS_CACHE": str(empty)})
    saved = sorted(p.suffix for p in empty.rglob("*") if p.is_file())
    assert saved == [".json", ".onnx"]  # the check sees a build
