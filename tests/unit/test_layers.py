"""Layers only look down: the kernels import nothing from storage, the engine or the faces."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "src" / "twokeys"
KERNELS = ("lexical", "dense", "fusion", "analysis.py", "topk.py", "types.py", "pagecache.py")
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


def test_the_indexer_writes_through_the_contract_only() -> None:
    backends = ("twokeys.store.local", "twokeys.store.vectors", "twokeys.store.postgres")
    named = {n for n in _imports(PACKAGE / "indexer.py") if n.startswith(backends)}
    assert not named, f"indexer.py imports {', '.join(sorted(named))}"


def _module(file: Path) -> str:
    parts = file.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_store_modules_import_no_cycle() -> None:
    """Among the storage modules (imports inside functions count too): the local
    directory and its vector index, the contract and its backends, each only look down."""
    files = sorted((PACKAGE / "store").rglob("*.py"))
    modules = {_module(f): f for f in files}

    def imported(file: Path) -> set[str]:  # ``from twokeys.store import vectors`` too
        names = _imports(file)
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        return names

    graph = {m: {n for n in imported(f) if n in modules and n != m} for m, f in modules.items()}
    assert "twokeys.store.local" not in graph["twokeys.store.vectors"]

    def cycle_from(start: str) -> list[str] | None:
        path: list[str] = []
        seen: set[str] = set()

        def walk(node: str) -> list[str] | None:
            if node in path:
                return [*path[path.index(node) :], node]
            if node in seen:
                return None
            seen.add(node)
            path.append(node)
            for nxt in sorted(graph[node]):
                found = walk(nxt)
                if found:
                    return found
            path.pop()
            return None

        return walk(start)

    for module in sorted(graph):
        found = cycle_from(module)
        assert found is None, " -> ".join(found or [])
