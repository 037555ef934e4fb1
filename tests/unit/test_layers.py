"""Layers only look down: the kernels import nothing from storage, the engine or the faces."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "twokeys"
KERNELS = (
    "lexical",
    "dense",
    "fusion",
    "text",
    "analysis.py",
    "topk.py",
    "types.py",
    "pagecache.py",
)
ABOVE = ("twokeys.store", "twokeys.engine", "twokeys.request", "twokeys.cli", "twokeys.rag")


def _imports(file: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _files(kernel: str) -> list[Path]:
    path = PACKAGE / kernel
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernels_import_nothing_above_them(kernel: str) -> None:
    for file in _files(kernel):
        upward = sorted(n for n in _imports(file) if n.startswith(ABOVE))
        assert not upward, f"{file.relative_to(ROOT)} imports {', '.join(upward)}"


def test_the_engine_names_no_backend_class() -> None:
    imports = _imports(PACKAGE / "engine.py") | _imports(PACKAGE / "cli.py")
    assert not {n for n in imports if n.startswith("twokeys.store.local")}
    local = ("twokeys.store.local", "twokeys.store.vectors")
    assert not {n for n in _imports(PACKAGE / "engine.py") if n.startswith(local)}


def test_text_rules_import_only_errors_and_types() -> None:
    """``text/`` (sentences, passage text) sits below chunking, packing and the retrievers."""
    allowed = {"twokeys.errors", "twokeys.types"}
    for file in _files("text"):
        own = {n for n in _imports(file) if n.startswith("twokeys")}
        other = sorted(n for n in own - allowed if not n.startswith("twokeys.text"))
        assert not other, f"{file.relative_to(ROOT)} imports {', '.join(other)}"
