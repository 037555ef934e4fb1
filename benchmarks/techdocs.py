"""Two technical-documentation test collections built from Debian's documentation packages.

``python -m benchmarks.techdocs build OUT`` writes ``OUT/python-docs`` and ``OUT/git-docs``
in BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``, ``qrels/dev.tsv``):

* **python-docs**: the Python 3.11 library reference, one document per page, from the
  reST sources that ``python3.11-doc`` installs (``_sources/library/*.rst.txt``; index
  directives, which are invisible on the rendered page, are left out).
* **git-docs**: the Git manual pages and guides that ``git-doc`` installs (``git*.html``),
  one document per page, converted by twokeys' own HTML reader.

Queries come in three kinds, recorded as ``metadata.kind``:

* ``identifier``: a name the documentation defines, relevant = the page(s) defining it.
  Generated from the pages' own definition lists: Python's ``.. function::``,
  ``.. class::``, ``.. exception::`` ... directives (bare name when only one page
  defines it, else the module-qualified one) and Git's option, configuration,
  environment and message-id entries (``<dt>`` terms). A deterministic sample, by
  hash of the name, of the names at most three pages define.
* ``paraphrase``: the same need in other words; ``mixed``: a name plus words. Written by
  hand from the pages, in ``benchmarks/techdocs/<collection>/written.jsonl``.
  Python's ``py-mix-127`` ... ``py-mix-246`` were written blind (committed before any
  retrieval on them) from 120 pages drawn with ``random.Random(3307).sample(pages, 120)``,
  ``pages`` = the sorted ``_sources/library/*.rst.txt`` files holding a ``.. function::``,
  ``method``, ``class``, ``attribute``, ``exception``, ``data``, ``decorator``,
  ``classmethod``, ``staticmethod``, ``coroutinefunction``, ``coroutinemethod``,
  ``abstractmethod`` or ``decoratormethod`` directive (261 pages); after each page the
  same generator picked one of its directives, and the query asks for a fact of that
  entry, ids in draw order. ``py-mix-247`` ... ``py-mix-406`` were written blind the
  same way (no retrieval run before they were committed) from 160 pages drawn with
  ``rng = random.Random(4242)``, the same directives plus ``option`` and ``cmdoption``
  (still 261 pages): ``rng.sample(fresh, len(fresh))`` over the 102 pages not yet gold
  for any ``py-mix`` query, then ``rng.sample(used, 58)`` over the 159 that are, then one
  ``rng.choice`` of directive per page; each query names a page's entry (half bare,
  half module- or class-qualified) beside a fact of that page, not only its summary line.

Each query is in ``test`` or ``dev`` (a third of each kind, by hash of its id); tune on
``dev`` only. The committed ``queries.jsonl`` and qrels under ``benchmarks/techdocs/`` are
this script's output (the corpus is rebuilt from the installed packages:
``apt-get install python3.11-doc git-doc``); ``build`` fails if they differ, so the
figures reported always refer to the committed queries.

``python -m benchmarks.techdocs kinds EVAL.json COLLECTION`` turns ``twokeys eval
--json`` output into nDCG@10 per query kind.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from twokeys.ingest.html import html_to_markdown

HERE = Path(__file__).resolve().parent / "techdocs"
PYTHON_SOURCES = Path("/usr/share/doc/python3.11/html/_sources/library")
GIT_PAGES = Path("/usr/share/doc/git-doc")
PACKAGES = {"python-docs": "python3.11-doc", "git-docs": "git-doc"}
IDENTIFIER_QUERIES = 150  # per collection, before the test/dev split
MAX_DEFINING_PAGES = 3
KINDS = ("identifier", "paraphrase", "mixed")


def documentation_root(package: str) -> Path:
    """The root under which ``package``'s files lie: ``/`` when it is installed, else a
    copy fetched with ``apt-get download`` into ``$TWOKEYS_CACHE/debs`` and unpacked with
    ``dpkg-deb -x`` into ``$TWOKEYS_CACHE/debian-docs`` (kept for the next run)."""
    marker = Path("/usr/share/doc") / package
    if marker.is_dir() and any(marker.iterdir()):
        return Path("/")
    cache = Path(os.environ.get("TWOKEYS_CACHE") or Path.home() / ".cache" / "twokeys")
    root, debs = cache / "debian-docs", cache / "debs"
    if (root / "usr/share/doc" / package).is_dir():
        return root
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise SystemExit(f"{package}: not installed, and no apt-get/dpkg-deb to fetch it")
    debs.mkdir(parents=True, exist_ok=True)
    have = set(debs.glob(f"{package}_*.deb"))
    if not have:
        done = subprocess.run(
            ["apt-get", "download", package], cwd=debs, capture_output=True, text=True
        )
        have = set(debs.glob(f"{package}_*.deb"))
        if not have:
            raise SystemExit(f"{package}: apt-get download failed: {done.stderr.strip()}")
    for deb in sorted(have):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


@dataclass(frozen=True)
class Page:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    query_id: str
    text: str
    kind: str
    relevant: tuple[str, ...]

    @property
    def split(self) -> str:
        digest = hashlib.sha256(self.query_id.encode()).digest()
        return "dev" if digest[0] % 3 == 0 else "test"


# -- Python: reST sources --------------------------------------------------------------

_PY_DEFINITION = re.compile(
    r"^( *)\.\. (function|method|classmethod|staticmethod|class|exception|data|attribute|"
    r"decorator|decoratormethod|coroutinefunction|coroutinemethod|opcode|abstractmethod)"
    r"::\s+([A-Za-z_][\w.]*)",
    re.M,
)
_PY_MODULE = re.compile(r"^\.\. (?:module|currentmodule):: ([\w.]+)", re.M)
_PY_ROLE = re.compile(r":(?:mod|func|class|meth|exc|data|attr|const|ref|term|keyword):`~?([^`]*)`")


def python_pages(root: Path = PYTHON_SOURCES) -> list[Page]:
    pages = []
    for path in sorted(root.glob("*.rst.txt")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        title = _rst_title(lines) or path.name
        pages.append(Page(path.name.removesuffix(".rst.txt"), title, _without_index(lines)))
    return pages


def _rst_title(lines: list[str]) -> str:
    for above, below in pairwise(lines):
        if above.strip() and below.strip() and set(below.strip()) <= set("=-*#~^"):
            title = _PY_ROLE.sub(r"\1", above.strip())
            return title.replace("---", "\u2014")
    return ""


def _without_index(lines: list[str]) -> str:
    """The page without ``.. index::`` directives (and their indented bodies)."""
    out: list[str] = []
    skipping = False
    for line in lines:
        if line.lstrip().startswith(".. index::"):
            skipping = True
            continue
        if skipping and (not line.strip() or line[:1].isspace()):
            if line.strip():
                continue
            skipping = False
        else:
            skipping = False
        out.append(line)
    return "\n".join(out).strip() + "\n"


def python_definitions(pages: Iterable[Page]) -> dict[str, set[str]]:
    """Defined name (bare and qualified) -> ids of the pages defining it.

    A member defined inside a class's body by its bare name (``.. method:: copy()``
    under ``.. class:: deque``) is qualified by that class.
    """
    defined: dict[str, set[str]] = {}
    for page in pages:
        module, owner = "", ""
        markers = sorted(
            [(m.start(), "", "module", m.group(1)) for m in _PY_MODULE.finditer(page.text)]
            + [(m.start(), *m.groups()) for m in _PY_DEFINITION.finditer(page.text)]
        )
        for _, indent, kind, name in markers:
            if kind == "module":
                module = name
                continue
            if indent and "." not in name:
                if not owner:
                    continue  # a member of something this parser does not follow
                name = f"{owner}.{name}"
            elif not indent:
                owner = name if kind in ("class", "exception") else ""
            names = {name}
            if module and not name.startswith(module + "."):
                names.add(f"{module}.{name}")
            for n in names:
                defined.setdefault(n, set()).add(page.doc_id)
    return defined


def python_identifier_queries(pages: list[Page]) -> list[Query]:
    defined = python_definitions(pages)
    # the name a reader would type: the bare name when one page defines it, else qualified
    chosen: dict[str, tuple[str, ...]] = {}
    for name, where in defined.items():
        bare = name.rsplit(".", 1)[-1]
        if len(bare) < 4 or bare.startswith("_") or len(where) > MAX_DEFINING_PAGES:
            continue
        if "." in name and len(defined.get(bare, ())) == 1 and bare in defined:
            continue  # the bare form is unambiguous and is a candidate itself
        if "." not in name and len(where) > 1:
            continue  # an ambiguous bare name: its qualified forms are the candidates
        chosen[name] = tuple(sorted(where))
    return _sample("py", chosen)


# -- Git: HTML manual pages -----------------------------------------------------------

_GIT_TERM = re.compile(r'<dt class="hdlist1">(.*?)</dt>', re.S)
_GIT_NAME = re.compile(
    r"--[a-z0-9][a-z0-9-]+"  # a long option
    r"|[a-z][a-zA-Z0-9]*(?:\.[a-z][a-zA-Z0-9]*)+"  # a configuration variable
    r"|GIT_[A-Z0-9_]+"  # an environment variable
    r"|[a-z]+[A-Z][A-Za-z0-9]+"  # an fsck message id (camelCase)
)


def git_pages(root: Path = GIT_PAGES) -> list[Page]:
    pages = []
    for path in sorted(root.glob("git*.html")):
        title, text = html_to_markdown(path.read_text(encoding="utf-8"))
        pages.append(Page(path.name.removesuffix(".html"), title or path.stem, text))
    return pages


def git_definitions(root: Path = GIT_PAGES) -> dict[str, set[str]]:
    defined: dict[str, set[str]] = {}
    for path in sorted(root.glob("git*.html")):
        for m in _GIT_TERM.finditer(path.read_text(encoding="utf-8")):
            name = _git_name(html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip())
            if name:
                defined.setdefault(name, set()).add(path.name.removesuffix(".html"))
    return defined


def _git_name(term: str) -> str | None:
    """The name a definition-list term defines: its long option form, variable or id."""
    forms = [f.strip() for f in term.split(",")]
    forms.sort(key=lambda f: not f.startswith("--"))  # a long option before its short form
    for form in forms:
        form = form.replace("[no-]", "")
        m = _GIT_NAME.match(form)
        if m and not m.group(0).endswith("-") and (m.end() == len(form) or form[m.end()] in "=[ <"):
            return m.group(0)
    return None


def git_identifier_queries(root: Path = GIT_PAGES) -> list[Query]:
    chosen = {
        name: tuple(sorted(where))
        for name, where in git_definitions(root).items()
        if len(where) <= MAX_DEFINING_PAGES and len(name) >= 5
    }
    return _sample("git", chosen)


def _sample(prefix: str, chosen: dict[str, tuple[str, ...]]) -> list[Query]:
    ordered = sorted(chosen, key=lambda n: hashlib.sha256(f"{prefix}:{n}".encode()).hexdigest())
    return [
        Query(f"{prefix}-id-{i:03d}", name, "identifier", chosen[name])
        for i, name in enumerate(ordered[:IDENTIFIER_QUERIES], 1)
    ]


# -- hand-written queries and the collection ------------------------------------------


def written_queries(collection: str, page_ids: set[str]) -> list[Query]:
    path = HERE / collection / "written.jsonl"
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        query = Query(record["_id"], record["text"], record["kind"], tuple(record["relevant"]))
        if query.kind not in KINDS[1:]:
            raise SystemExit(f"{path} line {number}: kind {query.kind!r} is not written by hand")
        unknown = [d for d in query.relevant if d not in page_ids]
        if unknown or not query.relevant:
            raise SystemExit(f"{path} line {number}: relevant page(s) {unknown} not in corpus")
        out.append(query)
    return out


def collection(name: str, root: Path = Path("/")) -> tuple[list[Page], list[Query]]:
    """Pages and queries of one collection, the documentation read under ``root``."""
    if name == "python-docs":
        pages = python_pages(root / PYTHON_SOURCES.relative_to("/"))
        generated = python_identifier_queries(pages)
    else:
        pages = git_pages(root / GIT_PAGES.relative_to("/"))
        generated = git_identifier_queries(root / GIT_PAGES.relative_to("/"))
    return pages, generated + written_queries(name, {p.doc_id for p in pages})


def query_files(queries: list[Query]) -> dict[str, str]:
    """Relative path -> content of the query and qrels files."""
    files = {
        "queries.jsonl": "".join(
            json.dumps({"_id": q.query_id, "text": q.text, "metadata": {"kind": q.kind}}) + "\n"
            for q in queries
        )
    }
    for split in ("test", "dev"):
        rows = [
            f"{q.query_id}\t{doc}\t1\n" for q in queries if q.split == split for doc in q.relevant
        ]
        files[f"qrels/{split}.tsv"] = "query-id\tcorpus-id\tscore\n" + "".join(rows)
    return files


def build(out: Path, names: Iterable[str], *, update_queries: bool = False) -> None:
    for name in names:
        pages, queries = collection(name, documentation_root(PACKAGES[name]))
        target = out / name
        (target / "qrels").mkdir(parents=True, exist_ok=True)
        with open(target / "corpus.jsonl", "w", encoding="utf-8") as fh:
            for page in pages:
                record = {"_id": page.doc_id, "title": page.title, "text": page.text}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        for rel, content in query_files(queries).items():
            committed = HERE / name / rel
            if update_queries:
                committed.parent.mkdir(parents=True, exist_ok=True)
                committed.write_text(content, encoding="utf-8")
            elif not committed.is_file() or committed.read_text(encoding="utf-8") != content:
                raise SystemExit(
                    f"{committed}: differs from what the installed documentation gives "
                    "(another package version?); rerun with --update-queries to accept"
                )
            (target / rel).write_text(content, encoding="utf-8")
        counts = {k: sum(q.kind == k for q in queries) for k in KINDS}
        print(f"{target}: {len(pages)} pages, queries {counts}", file=sys.stderr)


def kinds_table(eval_json: Path, collection_dir: Path) -> Iterator[str]:
    """Markdown rows: retriever x query kind, mean nDCG@10 (twokeys eval --json output)."""
    kind_of = {}
    for line in (collection_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        kind_of[record["_id"]] = record["metadata"]["kind"]
    data = json.loads(eval_json.read_text(encoding="utf-8"))
    present = [k for k in KINDS if any(kind_of.get(q) == k for q in _judged(data))]
    yield "| retriever | " + " | ".join(f"{k} ({_count(data, kind_of, k)})" for k in present) + " |"
    yield "|---" * (len(present) + 1) + "|"
    for name, result in data["retrievers"].items():
        per_query = result["per_query"]["nDCG@10"]
        cells = []
        for k in present:
            values = [v for q, v in per_query.items() if kind_of.get(q) == k]
            cells.append(f"{sum(values) / len(values):.3f}")
        yield f"| {name} | " + " | ".join(cells) + " |"


def _judged(data: dict[str, object]) -> list[str]:
    retrievers = data["retrievers"]
    assert isinstance(retrievers, dict)
    first = next(iter(retrievers.values()))
    return list(first["per_query"]["nDCG@10"])


def _count(data: dict[str, object], kind_of: dict[str, str], kind: str) -> int:
    return sum(kind_of.get(q) == kind for q in _judged(data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.techdocs", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the collections in BEIR layout")
    b.add_argument("out", type=Path)
    b.add_argument("--collection", choices=sorted(PACKAGES), action="append")
    b.add_argument("--update-queries", action="store_true", help="rewrite the committed queries")
    k = sub.add_parser("kinds", help="nDCG@10 per query kind from twokeys eval --json")
    k.add_argument("eval_json", type=Path)
    k.add_argument("collection_dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.out, args.collection or sorted(PACKAGES), update_queries=args.update_queries)
    else:
        for row in kinds_table(args.eval_json, args.collection_dir):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
