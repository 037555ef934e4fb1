"""Bare-identifier collections: single-token queries that name a symbol (issue 33, item 3).

``python -m benchmarks.identifiers build OUT`` writes, in BEIR layout (``corpus.jsonl``,
``queries.jsonl``, ``qrels/test.tsv``, ``qrels/dev.tsv``):

* **python-ids**: the Python 3.11 library reference (the pages of ``benchmarks.techdocs``'
  python-docs), one query per bare name a ``.. function::``, ``.. class::``,
  ``.. method::`` ... directive defines (``isnan``, ``capitalize``, ``ThreadPoolExecutor``);
* **rust-ids**: the item pages of Rust's ``std`` (``rust-doc``: ``struct.HashMap.html``,
  ``fn.from_utf8.html`` ...), one query per item name; a page is its declaration and its
  documentation, cut before the implementation lists (``Wrapping``'s page is 3 MB of
  trait implementations otherwise), and at most ``RUST_PAGE_CHARS`` characters;
* **git-ids**: the Git manual (git-docs' pages), one query per configuration variable a
  page's definition list defines (``core.bare``, ``fetch.prune``).

The gold is the documents' own structure, never retrieval output: the page(s) whose
definition directive, rustdoc item page or ``<dt>`` term defines the name. Names shorter
than four characters, private ones (``_x``) and names more than ``MAX_DEFINING_PAGES``
pages define are left out. Every such name is a query; a third of them (by hash of the
name) are the dev split, the rest test. nginx-doc was asked for too: Debian 12's package
holds example configurations only (no directive reference), so it gives no collection.

The Debian packages are read where ``apt-get install`` puts them; when missing they are
fetched with ``apt-get download`` into ``$TWOKEYS_CACHE/debs`` and unpacked with
``dpkg-deb -x`` beside it (:func:`benchmarks.techdocs.documentation_root`).

``rust-ids`` also holds the mixed queries of ``identifiers/rust-mixed.jsonl`` (an item name
or ``::`` path plus words), written by hand from the item pages and committed before any
run on them (60, then 93 more in issue 33's second round and 113 more, ``rust-mixed-154``
to ``-266``, in its fourth); each query's split is fixed by the hash of its id
(:func:`split_of`), a third dev.

``python -m benchmarks.identifiers eval OUT [--split test]`` prints nDCG@10 per
collection for bm25, dense and hybrid (``make bench BENCH=identifiers`` builds and runs
both and writes ``benchmarks/results/identifiers.json``).
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.common import log, save_result
from benchmarks.techdocs import (
    MAX_DEFINING_PAGES,
    Page,
    documentation_root,
    git_definitions,
    git_pages,
    python_definitions,
    python_pages,
)
from twokeys.evaluation.experiment import default_index_path
from twokeys.ingest.html import html_to_markdown

HERE = Path(__file__).resolve().parent / "identifiers"
COLLECTIONS = ("python-ids", "rust-ids", "git-ids")
# rust-ids-slice: the pages of a few std modules and the names only they define, small
# enough to embed within the default test suite's budget
RUST_SLICE = ("cell", "env", "mem", "process", "thread", "time")
WRITTEN = {"rust-ids": "rust-mixed.jsonl"}  # mixed queries, written before any run
PACKAGES = {
    "python-ids": "python3.11-doc",
    "rust-ids": "rust-doc",
    "rust-ids-slice": "rust-doc",
    "git-ids": "git-doc",
}
MIN_LENGTH = 4
RUST_PAGE_CHARS = 6000
RUST_KINDS = ("struct", "enum", "trait", "fn", "macro", "type", "constant", "union")
_RUST_ITEM = re.compile(r"^(" + "|".join(RUST_KINDS) + r")\.([A-Za-z_][A-Za-z0-9_]*)\.html$")
_RUST_CUT = re.compile(
    r'<h2 id="(?:implementations|trait-implementations|synthetic-implementations|'
    r"blanket-implementations|implementors|required-methods|provided-methods|"
    r'variants|fields)"'
)
_RUST_MAIN = re.compile(r'<section id="main-content"[^>]*>')
_RUST_TITLE = re.compile(r"<title>(.*?) - Rust</title>", re.S)
_GIT_CONFIG = re.compile(r"^[a-z][a-zA-Z0-9]*(?:\.[a-z][a-zA-Z0-9]*)+$")


def split_of(name: str) -> str:
    digest = hashlib.sha256(name.encode()).digest()
    return "dev" if digest[0] % 3 == 0 else "test"


def _bare_queries(defined: dict[str, set[str]]) -> dict[str, tuple[str, ...]]:
    """Bare name -> the pages defining a name ending in it (``deque.copy`` defines
    ``copy``), for names at least ``MIN_LENGTH`` long that few pages define."""
    bare: dict[str, set[str]] = {}
    for name, where in defined.items():
        bare.setdefault(name.rsplit(".", 1)[-1], set()).update(where)
    return {
        name: tuple(sorted(where))
        for name, where in sorted(bare.items())
        if len(name) >= MIN_LENGTH and not name.startswith("_") and len(where) <= MAX_DEFINING_PAGES
    }


# -- Rust: rustdoc item pages ----------------------------------------------------------


def rust_pages(root: Path) -> list[Page]:
    """``std``'s item pages (redirects to re-exports left out), each cut to its
    declaration and documentation."""
    pages = []
    for path in sorted(root.rglob("*.html")):
        if not _RUST_ITEM.match(path.name):
            continue
        source = path.read_text(encoding="utf-8")
        main = _RUST_MAIN.search(source)
        title = _RUST_TITLE.search(source)
        if main is None or title is None:
            continue  # a redirect page
        body = source[main.end() :]
        cut = _RUST_CUT.search(body)
        if cut:
            body = body[: cut.start()]
        _, text = html_to_markdown(f"<html><body>{body}</body></html>")
        doc_id = path.relative_to(root).as_posix().removesuffix(".html")
        pages.append(Page(doc_id, html.unescape(title.group(1)), text[:RUST_PAGE_CHARS]))
    return pages


def rust_definitions(pages: Iterable[Page]) -> dict[str, set[str]]:
    defined: dict[str, set[str]] = {}
    for page in pages:
        m = _RUST_ITEM.match(page.doc_id.rsplit("/", 1)[-1] + ".html")
        assert m is not None
        defined.setdefault(m.group(2), set()).add(page.doc_id)
    return defined


# -- the collections -------------------------------------------------------------------


def collection(name: str, root: Path) -> tuple[list[Page], dict[str, tuple[str, ...]]]:
    """Pages and bare-name queries (name -> relevant pages) of one collection, read from
    the documentation unpacked under ``root``."""
    if name == "python-ids":
        pages = python_pages(root / "usr/share/doc/python3.11/html/_sources/library")
        return pages, _bare_queries(python_definitions(pages))
    if name in ("rust-ids", "rust-ids-slice"):
        pages = rust_pages(root / "usr/share/doc/rust-doc/html/std")
        queries = _bare_queries(rust_definitions(pages))
        if name == "rust-ids-slice":
            pages = [p for p in pages if p.doc_id.split("/", 1)[0] in RUST_SLICE]
            kept = {p.doc_id for p in pages}
            queries = {q: where for q, where in queries.items() if set(where) <= kept}
        return pages, queries
    git = root / "usr/share/doc/git-doc"
    config = {n: w for n, w in git_definitions(git).items() if _GIT_CONFIG.match(n)}
    queries = {
        n: tuple(sorted(w))
        for n, w in sorted(config.items())
        if len(w) <= MAX_DEFINING_PAGES and len(n) >= MIN_LENGTH
    }
    return git_pages(git), queries


def build(out: Path, names: Iterable[str]) -> None:
    for name in names:
        root = documentation_root(PACKAGES[name])
        pages, queries = collection(name, root)
        target = out / name
        (target / "qrels").mkdir(parents=True, exist_ok=True)
        with open(target / "corpus.jsonl", "w", encoding="utf-8") as fh:
            for page in pages:
                record = {"_id": page.doc_id, "title": page.title, "text": page.text}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        prefix = name.split("-")[0]
        records = [
            (f"{prefix}-{i:05d}", q, "bare-identifier", where, split_of(q))
            for i, (q, where) in enumerate(queries.items(), 1)
        ]
        records += written_queries(name, {p.doc_id for p in pages})
        with open(target / "queries.jsonl", "w", encoding="utf-8") as fh:
            for qid, text, kind, _, _ in records:
                record = {"_id": qid, "text": text, "metadata": {"kind": kind}}
                fh.write(json.dumps(record) + "\n")
        for split in ("test", "dev"):
            rows = [f"{r[0]}\t{doc}\t1\n" for r in records if r[4] == split for doc in r[3]]
            text = "query-id\tcorpus-id\tscore\n" + "".join(rows)
            (target / "qrels" / f"{split}.tsv").write_text(text, encoding="utf-8")
        counts = {s: sum(r[4] == s for r in records) for s in ("test", "dev")}
        print(f"{target}: {len(pages)} pages, {len(records)} queries {counts}", file=sys.stderr)


def written_queries(
    name: str, page_ids: set[str]
) -> list[tuple[str, str, str, tuple[str, ...], str]]:
    """The hand-written queries of a collection: (id, text, kind, relevant, split)."""
    if name not in WRITTEN:
        return []
    path = HERE / WRITTEN[name]
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        relevant = tuple(record["relevant"])
        unknown = [d for d in relevant if d not in page_ids]
        if unknown or not relevant:
            raise SystemExit(f"{path} line {number}: relevant page(s) {unknown} not in corpus")
        out.append(
            (record["_id"], record["text"], record["kind"], relevant, split_of(record["_id"]))
        )
    return out


# -- the benchmark: twokeys eval on each collection, nDCG@10 per query kind ---------------

RETRIEVERS = ("bm25", "dense", "hybrid")
TECHDOCS = ("python-docs", "git-docs")  # benchmarks.techdocs' collections, for their kinds


def shared_index(collection_dir: Path) -> Path:
    """The eval index of a collection's corpus, named by the corpus' content: python-ids
    and python-docs (git-ids and git-docs) hold the same pages and share one index."""
    digest = hashlib.sha256((collection_dir / "corpus.jsonl").read_bytes()).hexdigest()[:12]
    cache = default_index_path(collection_dir).parent
    return cache / f"{collection_dir.name.split('-')[0]}-corpus-{digest}.twokeys"


def evaluate(collection_dir: Path, split: str) -> dict[str, Any]:
    """``twokeys eval --json`` of bm25, dense and hybrid on one collection's split."""
    command = [
        sys.executable,
        "-m",
        "twokeys.cli",
        "eval",
        str(collection_dir),
        "--split",
        split,
        "--retrievers",
        ",".join(RETRIEVERS),
        "--index",
        str(shared_index(collection_dir)),
        "--json",
        "-q",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{collection_dir}: twokeys eval failed: {done.stderr.strip()[-500:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def kind_means(collection_dir: Path, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Query kind -> {"queries": n, retriever: mean nDCG@10} from ``twokeys eval --json``."""
    kind_of = {}
    for line in (collection_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        kind_of[record["_id"]] = record["metadata"]["kind"]
    out: dict[str, dict[str, Any]] = {}
    for name, result in data["retrievers"].items():
        for qid, value in result["per_query"]["nDCG@10"].items():
            row = out.setdefault(kind_of[qid], {"queries": 0})
            row.setdefault(name, []).append(value)
    for row in out.values():
        for name in RETRIEVERS:
            values = row.pop(name, [])
            row["queries"] = len(values)
            row[name] = sum(values) / len(values) if values else None
    return out


def run(out: Path, split: str, names: Iterable[str] = (*COLLECTIONS, *TECHDOCS)) -> dict[str, Any]:
    from benchmarks import techdocs

    names = list(names)
    build(out, [n for n in names if n in COLLECTIONS])
    techdocs.build(out, [n for n in names if n in TECHDOCS])
    rows = []
    for name in names:
        log(f"identifiers: twokeys eval {out / name} --split {split}")
        means = kind_means(out / name, evaluate(out / name, split))
        for kind, row in sorted(means.items()):
            if name in TECHDOCS and kind == "paraphrase":
                continue  # reported by the techdocs table
            rows.append({"collection": name, "kind": kind, **row})
    return {"split": split, "rows": rows}


def table(result: dict[str, Any]) -> list[str]:
    lines = [
        f"| collection ({result['split']} split) | kind | queries | bm25 | dense | hybrid |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        best = max(row[r] for r in RETRIEVERS)
        cells = [f"**{row[r]:.3f}**" if row[r] == best else f"{row[r]:.3f}" for r in RETRIEVERS]
        lines.append(
            f"| {row['collection']} | {row['kind']} | {row['queries']} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.identifiers", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    b = sub.add_parser("build", help="write the collections in BEIR layout")
    b.add_argument("out", type=Path)
    b.add_argument("--collection", choices=sorted(PACKAGES), action="append")
    r = sub.add_parser("run", help="build, evaluate and print nDCG@10 per kind (the default)")
    r.add_argument("--out", type=Path, default=None, help="where the collections go")
    r.add_argument("--split", default="test", choices=("test", "dev"))
    r.add_argument("--collection", choices=(*COLLECTIONS, *TECHDOCS), action="append")
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.out, args.collection or COLLECTIONS)
        return 0
    split = getattr(args, "split", "test")
    out = getattr(args, "out", None) or default_index_path(Path("identifiers")).parent.parent / (
        "identifiers"
    )
    result = run(out, split, getattr(args, "collection", None) or (*COLLECTIONS, *TECHDOCS))
    save_result("identifiers", result)
    print("\n".join(table(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
