"""Layers only look down: the kernels import nothing from storage, the engine or the faces."""

from __future__ import annotations

import ast
import itertools
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
ABOVE = (
    "twokeys.store",
    "twokeys.engine",
    "twokeys.request",
    "twokeys.cli",
    "twokeys.rag",
    "twokeys.client",
    "twokeys.integrations",
)


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
    imports |= _imports(PACKAGE / "cli_index.py") | _imports(PACKAGE / "cli_search.py")
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


# Module-level imports allowed to close an import cycle between packages, as
# (importing file, imported module prefix): none. An entry here must be found (a stale one
# fails), and any cycle not listed fails the test below.
KNOWN_CYCLE_IMPORTS: set[tuple[str, str]] = set()


def _module_name(file: Path) -> str:
    parts = list(file.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level_imports(file: Path) -> list[tuple[str, int]]:
    """Imports run when ``file`` is imported: top-level statements (inside ``try`` and
    ``if`` too), not ``if TYPE_CHECKING:`` blocks nor imports inside functions."""
    me = _module_name(file).split(".")
    package = me if file.name == "__init__.py" else me[:-1]
    found: list[tuple[str, int]] = []
    for statement in ast.parse(file.read_text(encoding="utf-8")).body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        nodes = ast.walk(statement) if isinstance(statement, ast.If | ast.Try) else [statement]
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                found.append((module, node.lineno))
            elif isinstance(node, ast.Import):
                found.extend((alias.name, node.lineno) for alias in node.names)
    return found


def _import_graph(
    depth: int,
) -> tuple[dict[str, set[str]], dict[tuple[str, str], str], set[tuple[str, str]]]:
    """Edges between units (``twokeys.X`` at depth 1, ``twokeys.X.Y`` at depth 2), where
    each edge was seen, and the known cycle imports that were found."""

    def unit(module: str) -> str:
        return ".".join(module.split(".")[: depth + 1])

    graph: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    seen_known: set[tuple[str, str]] = set()
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(PACKAGE).as_posix()
        me = unit(_module_name(file))
        for module, line in _module_level_imports(file):
            if not module.startswith("twokeys.") or unit(module) == me:
                continue
            known = {(f, m) for f, m in KNOWN_CYCLE_IMPORTS if f == rel and module.startswith(m)}
            if known:
                seen_known |= known
                continue
            graph.setdefault(me, set()).add(unit(module))
            where.setdefault((me, unit(module)), f"{rel}:{line}")
    return graph, where, seen_known


def _a_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (its nodes in order, the first repeated last), or []."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


@pytest.mark.parametrize("depth", [1, 2])
def test_no_import_cycles_between_packages(depth: int) -> None:
    """Import-time cycles between packages (depth 1) or their modules and subpackages
    (depth 2, e.g. store.local <-> store.vectors), but for the known ones above."""
    graph, where, seen_known = _import_graph(depth)
    cycle = _a_cycle(graph)
    edges = [where[a, b] for a, b in itertools.pairwise(cycle)]
    assert not cycle, f"import cycle {' -> '.join(cycle)} ({', '.join(edges)})"
    if depth == 1:
        assert seen_known == KNOWN_CYCLE_IMPORTS, "gone: " + str(KNOWN_CYCLE_IMPORTS - seen_known)


def test_the_indexer_writes_through_the_contract_only() -> None:
    backends = ("twokeys.store.local", "twokeys.store.vectors", "twokeys.store.postgres")
    named = {n for n in _imports(PACKAGE / "indexer.py") if n.startswith(backends)}
    assert not named, f"indexer.py imports {', '.join(sorted(named))}"


def test_the_store_modules_import_no_cycle() -> None:
    """Among the storage modules (imports inside functions count too): the local
    directory and its vector index, the contract and its backends, each only look down."""
    files = sorted((PACKAGE / "store").rglob("*.py"))
    modules = {_module_name(f): f for f in files}

    def imported(file: Path) -> set[str]:  # ``from twokeys.store import vectors`` too
        names = _imports(file)
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        return names

    graph = {m: {n for n in imported(f) if n in modules and n != m} for m, f in modules.items()}
    assert "twokeys.store.local" not in graph["twokeys.store.vectors"]

    cycle = _a_cycle(graph)
    assert not cycle, " -> ".join(cycle)


# Cycles among modules when every import counts, also those inside functions and under
# ``if TYPE_CHECKING:`` (which hide a cycle from the import-time check above), as sets of
# modules: ingest.files reads .jsonl files with ingest.jsonl, which takes SkippedFile
# from it. An entry here must still be a cycle (a stale one fails).
KNOWN_HIDDEN_CYCLES: set[frozenset[str]] = set()  # ingest.files <-> jsonl: untangled


def _all_imports(file: Path) -> set[str]:
    """Modules of the package that ``file`` names in any import statement, wherever it
    stands; ``from twokeys.x import y`` names ``twokeys.x.y`` when that is a module."""
    me = _module_name(file).split(".")
    package = me if file.name == "__init__.py" else me[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _strong_components(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of ``graph`` with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_hidden_import_cycles_between_modules() -> None:
    """A module that imports its backends inside a function while they import it (an
    encoder registry and its encoders, the engine and the reranker interface through a
    type annotation) is a cycle all the same: registries name backends by import path
    (:mod:`twokeys.registry`) and interfaces name what they read as a protocol."""
    modules = {_module_name(f): f for f in PACKAGE.rglob("*.py")}
    graph = {m: {n for n in _all_imports(f) if n in modules and n != m} for m, f in modules.items()}
    cycles = set(_strong_components(graph))
    unknown = [sorted(c) for c in cycles - KNOWN_HIDDEN_CYCLES]
    assert not unknown, f"import cycles: {unknown}"
    assert cycles >= KNOWN_HIDDEN_CYCLES, f"gone: {KNOWN_HIDDEN_CYCLES - cycles}"
