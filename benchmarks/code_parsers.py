"""Parse speed of the tree-sitter packages that could back the code reader, run once in
each package's own clean venv (they need different tree-sitter versions):

    python -m venv /tmp/a && /tmp/a/bin/pip install tree-sitter tree-sitter-python
    /tmp/a/bin/python benchmarks/code_parsers.py wheels FOLDER
    python -m venv /tmp/b && /tmp/b/bin/pip install tree-sitter-languages
    /tmp/b/bin/python benchmarks/code_parsers.py languages FOLDER
    python -m venv /tmp/c && /tmp/c/bin/pip install tree-sitter-language-pack
    /tmp/c/bin/python benchmarks/code_parsers.py pack FOLDER

Prints one line: the package, files, lines, and lines parsed per second (best of 5).
Figures and the choice are in benchmarks/RESULTS.md ("Code parsers").
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any


def python_parser(package: str) -> Any:
    if package == "wheels":  # the per-language grammar wheels (tree-sitter >= 0.22 API)
        import tree_sitter_python
        from tree_sitter import Language, Parser

        return Parser(Language(tree_sitter_python.language()))
    if package == "languages":  # tree-sitter-languages (tree-sitter 0.21)
        from tree_sitter_languages import get_parser

        return get_parser("python")
    from tree_sitter_language_pack import get_parser as pack_parser

    return pack_parser("python")  # downloads its grammars at first use


def main() -> None:
    package, folder = sys.argv[1], Path(sys.argv[2])
    sources = [p.read_bytes() for p in sorted(folder.rglob("*.py"))]
    lines = sum(s.count(b"\n") for s in sources)
    try:
        parser = python_parser(package)
    except Exception as exc:  # the failure is the figure
        print(f"{package}: no parser ({type(exc).__name__}: {str(exc)[:120]})")
        return
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for source in sources:
            parser.parse(source)
        best = min(best, time.perf_counter() - started)
    print(f"{package}: {len(sources)} files, {lines:,} lines, {lines / best:,.0f} lines/s")


if __name__ == "__main__":
    main()
