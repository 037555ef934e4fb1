"""The four documentation collections the blind answer sets (``benchmarks/answers/``) ask.

``python -m benchmarks.answer_corpora OUT [--root /]`` writes ``OUT/<name>/pages/<id>.md``,
one Markdown file per page, for each collection below, from the files that Debian's
documentation packages install under ``ROOT`` (``/`` after ``apt-get install``; or a
folder the packages were unpacked into: ``apt-get download python3.11-doc git-doc
rust-doc sqlite3-doc postgresql-doc-15 apache2-doc`` then ``dpkg-deb -x PKG.deb ROOT`` for each):

* ``git-docs``: the Git manual pages and guides (``git-doc``: ``git*.html``);
* ``python-docs``: the Python 3.11 library reference (``python3.11-doc``: the reST
  sources ``_sources/library/*.rst.txt``);
* ``rust-book``: *The Rust Programming Language* (``rust-doc``: ``html/book/ch*.html``
  and ``appendix-*.html``);
* ``sqlite-docs``: the SQLite documentation pages (``sqlite3-doc``: top-level
  ``*.html``, the site's navigation bar cut off);
* ``postgres-docs``: the PostgreSQL 15 manual's SQL command reference and client
  applications (``postgresql-doc-15``: ``html/sql-*.html`` and ``html/app-*.html``, the
  navigation header and footer cut off). Its questions were written after the methods of
  ``twokeys.rag`` were chosen on the four above, so it is held out from every fit.

Added later, held out too: ``apache-docs`` (the Apache HTTP Server 2.4 manual), ``octave-docs``
(the GNU Octave 7.3 manual) and ``postfix-docs`` (Postfix 3.7's READMEs and manual pages).
The reader-training collections (:data:`READER_TRAIN`: Django, Varnish, Sphinx, Exim) hold
questions that only train the passage reader of :mod:`benchmarks.train_reader`.

Embedding whole collections takes long on a small machine, so each is capped at
:data:`CAP` pages: every page a question's gold passage comes from, then other pages
(distractors) in a fixed order (by hash of the page id) until the cap. Document ids are
the file names the question files name (``git-stash.md``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from twokeys.ingest.html import html_to_markdown

ANSWERS = Path(__file__).resolve().parent / "answers"
CAP = {
    "git-docs": 90,
    "python-docs": 90,
    "rust-book": 150,
    "sqlite-docs": 70,
    "postgres-docs": 218,  # every page: the collection is fixed before its questions
    "apache-docs": 1000,  # every page, likewise
    "octave-docs": 1000,  # every page, likewise
    "postfix-docs": 1000,  # every page, likewise
    "libvirt-docs": 1000,  # every page, likewise
    "django-docs": 1000,  # the reader's training collections: every page, likewise
    "varnish-docs": 1000,
    "sphinx-docs": 1000,
    "exim-docs": 1000,
}  # pages, gold included


def _html_pages(files: list[Path], cut: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    for path in files:
        try:
            _title, text = html_to_markdown(path.read_text(encoding="utf-8", errors="replace"))
        except RecursionError:  # a few generated pages nest too deep for the reader
            print(f"{path}: skipped (nested too deep to read)", file=sys.stderr)
            continue
        yield path.stem, cut(text)


def _from_heading(text: str) -> str:
    """Drop what stands before the first Markdown heading (theme menus, navigation)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#"):
            return "\n".join(lines[i:])
    return text


def _after_marker(marker: str) -> Callable[[str], str]:
    def cut(text: str) -> str:
        _head, found, rest = text.partition(marker)
        return rest.strip() if found else text

    return cut


def git_docs(root: Path) -> Iterator[tuple[str, str]]:
    folder = root / "usr/share/doc/git-doc"
    return _html_pages(sorted(folder.glob("git*.html")), lambda t: t)


def python_docs(root: Path) -> Iterator[tuple[str, str]]:
    folder = root / "usr/share/doc/python3.11/html/_sources/library"
    for path in sorted(folder.glob("*.rst.txt")):
        yield path.name.removesuffix(".rst.txt"), path.read_text(encoding="utf-8")


def rust_book(root: Path) -> Iterator[tuple[str, str]]:
    folder = root / "usr/share/doc/rust-doc/html/book"
    files = sorted([*folder.glob("ch[0-9]*.html"), *folder.glob("appendix-*.html")])
    return _html_pages(files, _from_heading)


def sqlite_docs(root: Path) -> Iterator[tuple[str, str]]:
    folder = root / "usr/share/doc/sqlite3"
    return _html_pages(
        sorted(folder.glob("*.html")), _after_marker("Search Documentation Search Changelog")
    )


def _between_navigation(text: str) -> str:
    """From the first heading to the footer's ``Prev | Up | Next`` line."""
    body = _from_heading(text)
    head, found, _footer = body.rpartition("\nPrev | Up | Next")
    return head.rstrip() if found else body


def postgres_docs(root: Path) -> Iterator[tuple[str, str]]:
    folder = root / "usr/share/doc/postgresql-doc-15/html"
    files = sorted([*folder.glob("sql-*.html"), *folder.glob("app-*.html")])
    return _html_pages(files, _between_navigation)


def _apache_page(text: str) -> str:
    """From the first heading to the footer's last ``Available Languages:`` line."""
    body = _from_heading(text)
    head, found, _footer = body.rpartition("\nAvailable Languages:")
    return head.rstrip() if found and "\n## " in head else body


def apache_docs(root: Path) -> Iterator[tuple[str, str]]:
    folder = root / "usr/share/doc/apache2-doc/manual/en"
    for sub in ("", "howto", "mod"):
        for doc_id, text in _html_pages(sorted((folder / sub).glob("*.html")), _apache_page):
            yield (f"{sub}-{doc_id}" if sub else doc_id), text


def _octave_page(text: str) -> str:
    """From the first heading to the footer's ``Next: ... [Contents][Index]`` line."""
    body = _from_heading(text).rstrip()
    head, found, last = body.rpartition("\n")
    return head.rstrip() if found and last.endswith("[Contents][Index]") else body


def octave_docs(root: Path) -> Iterator[tuple[str, str]]:
    """The GNU Octave manual's nodes; the ``XREF*`` files only redirect to them."""
    folder = root / "usr/share/doc/octave/octave.html"
    files = [
        path
        for path in sorted(folder.glob("*.html"))
        if "This file redirects to the location" not in path.read_text(errors="replace")[:1000]
    ]
    return _html_pages(files, _octave_page)


def _rst_sources(folder: Path) -> Iterator[tuple[str, str]]:
    """A Sphinx site's reST sources (``_sources/**/*.rst.txt``), ids ``sub-dir-name``."""
    for path in sorted(folder.rglob("*.rst.txt")):
        rel = path.relative_to(folder).as_posix().removesuffix(".rst.txt")
        yield rel.replace("/", "-"), path.read_text(encoding="utf-8", errors="replace")


def _django_page(text: str) -> str:
    """From after the header's ``« previous | up | next »`` to the sidebar's contents."""
    _head, found, body = text.partition("« previous | up | next »")
    body = body if found else text
    for end in ("\n### Table of Contents", "\n#### Previous topic", "\n### Quick search"):
        body = body.partition(end)[0]
    return body.replace("¶", "").strip()


def django_docs(root: Path) -> Iterator[tuple[str, str]]:
    """Django 3.2's guides and reference (``python-django-doc``; release notes left out)."""
    folder = root / "usr/share/doc/python-django-doc/html"
    for sub in ("faq", "howto", "internals", "intro", "misc", "ref", "topics"):
        files = sorted((folder / sub).rglob("*.html"))
        for path in files:
            rel = path.relative_to(folder).as_posix().removesuffix(".html")
            for _stem, text in _html_pages([path], _django_page):
                yield rel.replace("/", "-"), text


def varnish_docs(root: Path) -> Iterator[tuple[str, str]]:
    """The Varnish Cache 7.1 manual's reST sources (``varnish-doc``)."""
    return _rst_sources(root / "usr/share/doc/varnish/html/_sources")


def sphinx_docs(root: Path) -> Iterator[tuple[str, str]]:
    """The Sphinx 5.3 documentation's reST sources (``sphinx-doc``)."""
    return _rst_sources(root / "usr/share/doc/sphinx-doc/html/_sources")


def _exim_page(text: str) -> str:
    """Between the site header's ``<-previousnext->`` and the chapter's footer links."""
    _head, found, body = text.partition("<-previousnext->")
    body = body if found else text
    return body.partition("<-previousTable of Contentsnext->")[0].strip()


def exim_docs(root: Path) -> Iterator[tuple[str, str]]:
    """The Exim 4.96 specification, one page a chapter (``exim4-doc-html``)."""
    folder = root / "usr/share/doc/exim4-doc-html/spec_html"
    return _html_pages(sorted(folder.glob("ch-*.html")), _exim_page)


def postfix_docs(root: Path) -> Iterator[tuple[str, str]]:
    """Postfix 3.7's READMEs and manual pages (``postfix-doc``)."""
    folder = root / "usr/share/doc/postfix/html"
    return _html_pages(sorted(folder.glob("*.html")), lambda t: t)


def _libvirt_page(text: str) -> str:
    """From the first heading to the site footer (``Home``, ``- Download``, ...)."""
    body = _from_heading(text)
    head, found, _footer = body.rpartition("\nHome\n\n- Download")
    return head.rstrip() if found else body


def libvirt_docs(root: Path) -> Iterator[tuple[str, str]]:
    """libvirt 9.0's documentation (``libvirt-doc``): every HTML page of the site (guides,
    XML formats, drivers, knowledge base, manual pages, API reference); ids are the paths
    below ``html/`` with ``/`` written ``-``."""
    folder = root / "usr/share/doc/libvirt-doc/html"
    for path in sorted(folder.rglob("*.html")):
        rel = path.relative_to(folder).with_suffix("").as_posix().replace("/", "-")
        for _stem, text in _html_pages([path], _libvirt_page):
            yield rel, text


COLLECTIONS: dict[str, Callable[[Path], Iterator[tuple[str, str]]]] = {
    "git-docs": git_docs,
    "python-docs": python_docs,
    "rust-book": rust_book,
    "sqlite-docs": sqlite_docs,
    "postgres-docs": postgres_docs,
    "apache-docs": apache_docs,
    "octave-docs": octave_docs,
    "postfix-docs": postfix_docs,
    "libvirt-docs": libvirt_docs,
    "django-docs": django_docs,
    "varnish-docs": varnish_docs,
    "sphinx-docs": sphinx_docs,
    "exim-docs": exim_docs,
}


#: collections added after the methods of ``twokeys.rag`` were chosen: no fit, threshold or
#: choice reads them (:func:`benchmarks.answers_context.collections` leaves them out);
#: ``python -m benchmarks.heldout_answers`` measures the shipped models on them
HELD_OUT = ("postgres-docs", "apache-docs", "octave-docs", "postfix-docs", "libvirt-docs")

#: collections whose questions (``benchmarks/answers/reader/``) only train the passage
#: reader (:mod:`benchmarks.train_reader`): no method of ``twokeys.rag`` is chosen on them
READER_TRAIN = ("django-docs", "varnish-docs", "sphinx-docs", "exim-docs")

SPLITS = ("train", "dev", "test")


def split_of(qa_file: str, question_id: str) -> str:
    """A question's split, fixed by a hash of its file's stem and its id: half train, a
    fifth dev, the rest (about three tenths) test."""
    digit = hashlib.sha256(f"{qa_file}:{question_id}".encode()).digest()[0] % 10
    return "train" if digit < 5 else "dev" if digit < 7 else "test"


def assign_splits(path: Path) -> None:
    """Write each question's :func:`split_of` into the question file ``path``."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            record["split"] = split_of(path.stem, record["id"])
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    path.write_text("".join(lines), encoding="utf-8")


def question_files(name: str) -> list[Path]:
    """The collection's question files: ``answers/<name>-qa*.jsonl``, and for a reader
    training collection ``answers/reader/<name>-qa*.jsonl``."""
    pattern = f"{name}-qa*.jsonl"
    return sorted([*ANSWERS.glob(pattern), *(ANSWERS / "reader").glob(pattern)])


def gold_pages(name: str) -> set[str]:
    """Ids (without ``.md``) of the pages the collection's question files cite."""
    out: set[str] = set()
    for qa in question_files(name):
        for line in qa.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.update(g["doc"].removesuffix(".md") for g in json.loads(line)["gold"])
    return out


def build(out: Path, root: Path, names: list[str], cap: int | None = None) -> None:
    for name in names:
        pages = {doc_id: text for doc_id, text in COLLECTIONS[name](root) if text.strip()}
        if not pages:
            raise SystemExit(f"{name}: no pages under {root} (is its documentation package there?)")
        gold = gold_pages(name)
        missing = sorted(gold - pages.keys())
        if missing:
            raise SystemExit(f"{name}: gold pages not in the documentation: {missing}")
        rest = sorted(pages.keys() - gold, key=lambda d: hashlib.sha256(d.encode()).hexdigest())
        kept = sorted(gold) + rest[: max(0, (cap or CAP[name]) - len(gold))]
        target = out / name / "pages"
        target.mkdir(parents=True, exist_ok=True)
        for doc_id in kept:
            (target / f"{doc_id}.md").write_text(pages[doc_id], encoding="utf-8")
        chars = sum(len(pages[d]) for d in kept)
        print(
            f"{target}: {len(kept)} of {len(pages)} pages ({len(gold)} gold), {chars:,} chars",
            file=sys.stderr,
        )


def check(out: Path) -> list[str]:
    """Problems with the question files against the pages under ``out``: a fact not
    verbatim in its page, or a stored split that is not :func:`split_of`."""
    from twokeys.evaluation.answers import holds, load_qa

    problems = []
    for name in COLLECTIONS:
        for qa in question_files(name):
            for item in load_qa(qa):
                if item.split != split_of(qa.stem, item.id):
                    problems.append(f"{qa.name}: {item.id}: split {item.split!r} is not its hash's")
                for g in item.gold:
                    page = out / name / "pages" / g.doc
                    if not page.is_file():
                        problems.append(f"{qa.name}: {item.id}: no page {page}")
                    elif not holds(page.read_text(encoding="utf-8"), g.fact):
                        problems.append(f"{qa.name}: {item.id}: fact not in {g.doc}: {g.fact!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.answer_corpora", description=__doc__
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--root", type=Path, default=Path("/"))
    parser.add_argument("--only", action="append", choices=sorted(COLLECTIONS))
    parser.add_argument("--cap", type=int, help="pages per collection (default: CAP)")
    parser.add_argument("--check", action="store_true", help="only check the question files")
    args = parser.parse_args(argv)
    if not args.check:
        build(args.out, args.root, args.only or list(COLLECTIONS), args.cap)
    problems = check(args.out)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
