"""Markdown block reading: the chunker's old hand-written rules against markdown-it-py.

``python -m benchmarks.markdown_blocks [--old-commit COMMIT] [--corpora DIR]`` loads the
chunker of ``COMMIT`` (the last one with the hand-written rules, ``git show``) beside
the current one (markdown-it's token stream with line maps) and prints, on real
Markdown:

* **speed**: CPU seconds to read the blocks and to chunk (approximate token counter)
  the Node.js API documentation and changelogs that the ``nodejs`` package installs
  (``/usr/share/doc/nodejs/**/*.md``; Node.js 20: 148 files, 14 MB of hand-written Markdown), best
  of three runs each, in one process;
* **boundaries**: how many documents and chunks come out identical (start, end and
  heading path), on the Node.js docs, on the four answer collections of
  ``benchmarks.answer_corpora`` (Git, Python, Rust book and SQLite pages) and on the
  support knowledge base of ``examples/``;
* **retrieval**: context recall (the share of an answerable question's gold facts found
  verbatim in the top-k chunks that fit a budget; :mod:`benchmarks.answers_context`)
  of BM25 over each answer collection indexed with each chunker, on the blind answer
  sets' test split and on all their questions (nothing is tuned here).
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.answers_context import questions, topk_pieces
from twokeys import IndexOptions, build_index, chunking, open_index
from twokeys.evaluation.answers import context_recall
from twokeys.types import Document

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "18dfc74"  # a commit of main whose chunker has the hand-written rules
NODE_DOCS = "/usr/share/doc/nodejs/**/*.md"
COLLECTIONS = ("git-docs", "python-docs", "rust-book", "sqlite-docs")
BUDGETS = (1000, 2000)


def old_chunker(commit: str) -> ModuleType:
    """The chunking module as it was at ``commit``."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:src/twokeys/chunking.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "old_chunking.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_chunking", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_chunking"] = module
    spec.loader.exec_module(module)
    return module


def documents(pattern: str) -> list[Document]:
    return [
        Document(
            id=f,
            title="",
            text=Path(f).read_text(errors="replace"),
            path=f,
            mtime=0.0,
            sha256="",
            kind="markdown",
        )
        for f in sorted(glob.glob(pattern, recursive=True))
    ]


def _best(run: Callable[[], Any]) -> float:
    times = []
    for _ in range(3):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def speed(old: ModuleType, docs: list[Document]) -> Iterator[str]:
    mb = sum(len(d.text.encode()) for d in docs) / 1e6
    yield f"Node.js docs: {len(docs)} files, {mb:.1f} MB"
    yield (
        "| chunker | read blocks (CPU s) | MB/s | chunk (CPU s) | MB/s | index, no dense (CPU s) |"
    )
    yield "|---|---:|---:|---:|---:|---:|"
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "docs"
        root = Path(NODE_DOCS.split("*")[0])
        for d in docs:  # the Markdown files alone, as a folder to index
            target = folder / Path(d.path).relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(d.text)
        runs = iter(range(100))
        options = IndexOptions(encoder=None)
        for name, module in (("hand-written rules", old), ("markdown-it-py", chunking)):
            read = _best(lambda m=module: [m._markdown_sections(d.text) for d in docs])
            chunk = _best(
                lambda m=module: [m.chunk_document(d, m.approx_token_counter) for d in docs]
            )
            with blocks_of(module):
                built = _best(
                    lambda: build_index(folder, Path(scratch) / f"{next(runs)}.twokeys", options)
                )
            yield (
                f"| {name} | {read:.2f} | {mb / read:.1f} | {chunk:.2f} | {mb / chunk:.1f} "
                f"| {built:.2f} |"
            )


def boundaries(old: ModuleType, sets: dict[str, list[Document]]) -> Iterator[str]:
    yield "| collection | documents | identical | chunks (old / new) | identical chunks |"
    yield "|---|---:|---:|---:|---:|"
    for name, docs in sets.items():
        same_docs = same = n_old = n_new = 0
        for doc in docs:
            a = _keys(old.chunk_document(doc, old.approx_token_counter))
            b = _keys(chunking.chunk_document(doc, chunking.approx_token_counter))
            same_docs += a == b
            same += len(a & b)
            n_old, n_new = n_old + len(a), n_new + len(b)
        yield f"| {name} | {len(docs)} | {same_docs} | {n_old} / {n_new} | {same} |"


def _keys(chunks: list[Any]) -> set[tuple[int, int, tuple[str, ...]]]:
    return {(c.start, c.end, c.heading_path) for c in chunks}


def _keys(chunks: list[Any]) -> set[tuple[int, int, tuple[str, ...]]]:
    return {(c.start, c.end, c.heading_path) for c in chunks}


@contextmanager
def blocks_of(module: ModuleType) -> Iterator[None]:
    """The chunker reading Markdown blocks with ``module``'s rules."""
    saved = chunking._markdown_sections
    chunking._markdown_sections = module._markdown_sections
    try:
        yield
    finally:
        chunking._markdown_sections = saved


def retrieval(old: ModuleType, corpora: Path) -> Iterator[str]:
    yield (
        "| collection | split | questions | chunker | "
        + " | ".join(f"recall@{b:,} tokens" for b in BUDGETS)
        + " |"
    )
    yield "|---|---|---:|---|" + "---:|" * len(BUDGETS)
    with tempfile.TemporaryDirectory() as scratch:
        for name in COLLECTIONS:
            for label, module in (("rules", old), ("markdown-it", chunking)):
                index_path = Path(scratch) / f"{name}-{label}.twokeys"
                with blocks_of(module):
                    build_index(corpora / name / "pages", index_path, IndexOptions(encoder=None))
                with open_index(index_path) as index:
                    for split in ("test", None):
                        items = [i for i in questions(name, split) if i.answerable]
                        hits = [index.search(i.question, mode="bm25", k=40) for i in items]
                        recalls = [
                            sum(
                                context_recall(i.gold, topk_pieces(h, b))
                                for i, h in zip(items, hits, strict=True)
                            )
                            / len(items)
                            for b in BUDGETS
                        ]
                        yield (
                            f"| {name} | {split or 'all'} | {len(items)} | {label} | "
                            + " | ".join(f"{r:.3f}" for r in recalls)
                            + " |"
                        )


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.markdown_blocks", description=__doc__
    )
    parser.add_argument("--old-commit", default=OLD_COMMIT)
    parser.add_argument(
        "--corpora",
        type=Path,
        default=Path("/work/cache/corpora"),
        help="the folder benchmarks.answer_corpora wrote",
    )
    args = parser.parse_args()
    old = old_chunker(args.old_commit)
    node = documents(NODE_DOCS)
    if not node:
        sys.exit(f"no {NODE_DOCS}: apt-get install nodejs")
    for line in speed(old, node):
        print(line, flush=True)
    print()
    sets = {"Node.js docs": node}
    for name in COLLECTIONS:
        sets[name] = documents(str(args.corpora / name / "pages" / "*.md"))
    sets["support-kb"] = documents(str(ROOT / "examples" / "support-kb" / "docs" / "**" / "*.md"))
    for line in boundaries(old, sets):
        print(line, flush=True)
    print()
    for line in retrieval(old, args.corpora):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
