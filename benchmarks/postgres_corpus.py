"""A ~100k-chunk test collection with judgments: SciFact plus technical-documentation distractors.

``python -m benchmarks.postgres_corpus OUT [--chunks 100000]`` writes ``OUT/corpus.jsonl``
(SciFact's corpus, then documentation pages until the whole is about ``--chunks``
chunks), and SciFact's ``queries.jsonl`` and ``qrels/`` beside it, so SciFact's test
queries and judgments score a search over the larger corpus. The distractors are
documentation pages that Debian's documentation packages install (``apt-get install
python3.11-doc git-doc rust-doc``): the Python 3.11 reST sources, the Git manual pages
the Rust books, standard-library reference and its source listings, taken in path order. They are
unjudged, so they count as non-relevant: a distractor in a query's top 10 costs nDCG as
a wrong SciFact document would (none is about the claims SciFact's queries state, so
this understates a system's quality by little).

Pages are reduced to their text with a few regular expressions (the main content when
the page marks one; scripts, styles and tags removed), which is crude but fast:
twokeys' own HTML reader takes about 90 ms a page, hours for the Rust reference. The
chunk count is estimated with twokeys' chunker and its tokenizer-free token counter.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common import DATA, log
from twokeys.chunking import ChunkerConfig, approx_token_counter, chunk_document
from twokeys.types import Document

PYTHON_SOURCES = Path("/usr/share/doc/python3.11/html/_sources")
GIT_PAGES = Path("/usr/share/doc/git-doc")
RUST_PAGES = Path("/usr/share/doc/rust-doc/html")
# the books, the API reference, then the library's source listings
RUST_PARTS = (
    "book",
    "reference",
    "rust-by-example",
    "nomicon",
    "edition-guide",
    "embedded-book",
    "rustc",
    "rustdoc",
    "unstable-book",
    "std",
    "alloc",
    "proc_macro",
    "test",
    "core",
    "src",
)
MIN_CHARS = 200  # redirect stubs and empty index pages are skipped

_TITLE = re.compile(r"<title>(.*?)</title>", re.S | re.I)
_MAIN = re.compile(r"<main\b[^>]*>(.*?)</main>|<section id=\"main-content\"[^>]*>(.*)", re.S)
_DROP = re.compile(r"<(script|style|nav|noscript)\b.*?</\1>", re.S | re.I)
_BLOCK = re.compile(r"</?(p|div|h[1-6]|li|pre|tr|br|section|dt|dd|table)\b[^>]*>", re.I)
_TAG = re.compile(r"<[^>]+>")
_BLANKS = re.compile(r"\n\s*\n+")


def page_text(page: str) -> tuple[str, str]:
    """(title, text) of an HTML page: its main content when marked, as plain text."""
    title = _TITLE.search(page)
    main = _MAIN.search(page)
    body = (main.group(1) or main.group(2)) if main else page
    body = _TAG.sub(" ", _BLOCK.sub("\n", _DROP.sub(" ", body)))
    lines = (" ".join(line.split()) for line in html.unescape(body).splitlines())
    text = _BLANKS.sub("\n\n", "\n".join(lines)).strip()
    return (html.unescape(title.group(1)).strip() if title else ""), text


def distractor_pages() -> Iterator[tuple[str, str, str]]:
    """(id, title, text) of every documentation page, in a fixed order."""
    for path in sorted(PYTHON_SOURCES.rglob("*.rst.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        yield f"python/{path.relative_to(PYTHON_SOURCES)}", path.name[: -len(".rst.txt")], text
    pages = [(f"git/{p.name}", p) for p in sorted(GIT_PAGES.glob("*.html"))]
    for part in RUST_PARTS:
        root = RUST_PAGES / part
        pages += [(f"rust/{p.relative_to(RUST_PAGES)}", p) for p in sorted(root.rglob("*.html"))]
    for doc_id, path in pages:
        title, text = page_text(path.read_text(encoding="utf-8", errors="replace"))
        yield doc_id, title, text


def _document(doc_id: str, title: str, text: str) -> Document:
    return Document(doc_id, title, text, "corpus.jsonl", 0.0, "", "jsonl")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--chunks", type=int, default=100_000, help="about this many in all")
    parser.add_argument("--collection", default="scifact")
    args = parser.parse_args()
    source = DATA / args.collection
    for path in (PYTHON_SOURCES, GIT_PAGES, RUST_PAGES):
        if not path.is_dir():
            sys.exit(f"{path}: missing (apt-get install python3.11-doc git-doc rust-doc)")
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "queries.jsonl", args.out / "queries.jsonl")
    shutil.copytree(source / "qrels", args.out / "qrels", dirs_exist_ok=True)
    config = ChunkerConfig()
    total = own = pages = 0
    with open(args.out / "corpus.jsonl", "w", encoding="utf-8") as out:
        with open(source / "corpus.jsonl", encoding="utf-8") as own_corpus:
            for line in own_corpus:
                record = json.loads(line)
                doc = _document(str(record["_id"]), record.get("title", ""), record["text"])
                own += len(chunk_document(doc, approx_token_counter, config))
                out.write(line if line.endswith("\n") else line + "\n")
        total = own
        for doc_id, title, text in distractor_pages():
            if total >= args.chunks:
                break
            if len(text) < MIN_CHARS:
                continue
            doc = _document(doc_id, title, text)
            total += len(chunk_document(doc, approx_token_counter, config))
            pages += 1
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    log(f"{args.out}: {own:,} chunks of {args.collection}, {total - own:,} of {pages:,} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
