"""Ingest of hostile folders and records: nothing aborts, nothing is dropped without a word."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from twokeys.ingest import SkippedFile, load_documents
from twokeys.ingest.html import html_to_markdown
from twokeys.sanitize import has_surrogates
from twokeys.types import Document


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def _load(source: Path, exclude: tuple[Path, ...] = ()) -> tuple[list[Document], list[str]]:
    notes: list[SkippedFile] = []
    docs = list(load_documents(source, on_skip=notes.append, exclude=exclude))
    return docs, [str(n) for n in notes]


def test_a_folder_nested_1100_deep_is_walked(tmp_path: Path) -> None:
    # os.makedirs would hit PATH_MAX: build it one level at a time, relative to a cwd
    root = tmp_path / "deep"
    root.mkdir()
    cwd = os.getcwd()
    try:
        os.chdir(root)
        for _ in range(1100):
            os.mkdir("d")
            os.chdir("d")
        Path("leaf.md").write_text("# Leaf\n\nAt the bottom.\n", encoding="utf-8")
    finally:
        os.chdir(cwd)
    (root / "top.md").write_text("Top.\n", encoding="utf-8")
    try:
        docs, notes = _load(root)
    finally:
        _remove_deep(root)  # shutil.rmtree (pytest's clean-up) recurses: RecursionError
    assert notes == []
    assert [d.id for d in docs] == ["d/" * 1100 + "leaf.md", "top.md"]


def _remove_deep(root: Path) -> None:
    """Remove a chain of folders named ``d`` under ``root`` from the bottom up."""
    cwd = os.getcwd()
    try:
        os.chdir(root)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for name in os.listdir("."):
            os.remove(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(cwd)


def test_links_out_of_the_folder_loops_dangling_and_fifos_are_named(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    _write(root / "a.md", "A.\n")
    _write(root / "sub" / "b.md", "B.\n")
    _write(tmp_path / "secret.md", "outside the folder\n")
    os.symlink(tmp_path / "secret.md", root / "out.md")
    os.symlink(tmp_path, root / "outdir")
    os.symlink(root / "sub" / "b.md", root / "inside.md")  # a file inside: followed
    os.symlink(root / "missing.md", root / "dangling.md")
    os.symlink(root / "loop2.md", root / "loop1.md")
    os.symlink(root / "loop1.md", root / "loop2.md")
    os.mkfifo(root / "pipe.md")
    docs, notes = _load(root)
    assert [d.id for d in docs] == ["a.md", "inside.md", "sub/b.md"]
    assert notes == [
        f"skipped dangling.md: dangling symbolic link (to {root / 'missing.md'})",
        "skipped loop1.md: symbolic link loop",
        "skipped loop2.md: symbolic link loop",
        "skipped out.md: symbolic link to outside the folder; not followed",
        "skipped outdir: symbolic link to outside the folder; not followed",
        "skipped pipe.md: not a regular file (FIFO)",
    ]


def test_the_index_inside_its_source_folder_is_left_out(tmp_path: Path) -> None:
    _write(tmp_path / "a.md", "A.\n")
    _write(tmp_path / "kb.twokeys" / "notes.md", "an index file that looks like a doc\n")
    docs, notes = _load(tmp_path, exclude=(tmp_path / "kb.twokeys",))
    assert [d.id for d in docs] == ["a.md"]
    assert notes == []


def test_undecodable_file_names_are_repaired_and_named(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path / "docs")
    os.mkdir(root)
    with open(os.path.join(root, b"caf\xe9.md"), "wb") as fh:
        fh.write(b"# Cafe\n\nMenu.\n")
    docs, notes = _load(tmp_path / "docs")
    assert [d.id for d in docs] == ["caf\ufffd.md"] and docs[0].path == "caf\ufffd.md"
    assert notes == ["caf\ufffd.md: file name is not valid UTF-8 (bytes shown as U+FFFD)"]
    docs[0].id.encode("utf-8")  # storable


def test_lone_surrogates_in_jsonl_records_are_replaced_and_named(tmp_path: Path) -> None:
    lines = [
        json.dumps({"_id": "ok", "text": "fine"}),
        '{"_id": "x\\ud800", "title": "T\\udfff", "text": "a\\ud800b", '
        '"metadata": {"k": "\\ud834"}}',
        '{"_id": "y", "text": "pair \\ud83d\\ude00 is fine"}',
    ]
    corpus = _write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n")
    docs, notes = _load(corpus)
    assert [d.id for d in docs] == ["ok", "x\ufffd", "y"]
    assert (docs[1].title, docs[1].text, docs[1].metadata) == (
        "T\ufffd",
        "a\ufffdb",
        {"k": "\ufffd"},
    )
    assert docs[2].text == "pair \U0001f600 is fine"
    assert notes == [
        "corpus.jsonl line 2: lone surrogate escapes in id, title, text, metadata "
        "replaced by U+FFFD"
    ]
    assert not any(has_surrogates(d.text + d.title + d.id) for d in docs)


def test_every_lone_surrogate_escape_is_found_in_any_field_and_hex_case(tmp_path: Path) -> None:
    # a line is searched field by field only when it holds an escape of D800-DFFF; every
    # such escape, in lower or upper case hex, in any field, must still be repaired
    lines = []
    codes = [*range(0xD800, 0xE000, 0x7F), 0xDBFF, 0xDC00, 0xDFFF]
    fields = ["_id", "title", "text", "metadata"]
    for n, code in enumerate(codes):
        escape = f"\\u{code:04x}" if n % 2 else f"\\u{code:04X}"
        field = fields[n % 4]
        record = {"_id": f"r{n}", "title": "t", "text": "body", "metadata": {"k": "v"}}
        raw = json.dumps(record)
        old = {"_id": f'"r{n}"', "title": '"t"', "text": '"body"', "metadata": '"v"'}[field]
        lines.append(raw.replace(old, old[:-1] + escape + '"', 1))
    corpus = _write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n")
    docs, notes = _load(corpus)
    assert len(docs) == len(codes) and len(notes) == len(codes)
    for doc in docs:
        assert not has_surrogates(doc.text + doc.title + doc.id + json.dumps(doc.metadata))
        assert "\ufffd" in doc.text + doc.title + doc.id + str(doc.metadata)


def test_records_without_text_or_title_are_skipped_by_name(tmp_path: Path) -> None:
    lines = [
        {"_id": "1", "text": "", "title": ""},
        {"_id": "2", "text": "  \n", "title": "Only a title"},
        {"_id": "3", "text": "Body."},
    ]
    corpus = _write(tmp_path / "c.jsonl", "".join(json.dumps(r) + "\n" for r in lines))
    docs, notes = _load(corpus)
    assert [d.id for d in docs] == ["2", "3"]
    assert notes == ["skipped c.jsonl line 1: empty text and no title (nothing to index)"]


@pytest.mark.parametrize(
    ("html", "title", "text"),
    [
        (
            "<html><body><h1>Power supply<p>The unit reports undervoltage.</p><p>Second.</p>",
            "Power supply",
            "# Power supply\n\nThe unit reports undervoltage.\n\nSecond.",
        ),
        ("<h1>Power <b>unit</b><h2>Sub<p>body", "Power unit", "# Power unit\n\n## Sub\n\nbody"),
    ],
)
def test_an_unclosed_heading_does_not_swallow_the_page(html: str, title: str, text: str) -> None:
    assert html_to_markdown(html) == (title, text)


def test_the_index_is_left_out_whatever_path_names_it(tmp_path: Path) -> None:
    _write(tmp_path / "docs" / "a.md", "A.\n")
    _write(tmp_path / "docs" / "kb.twokeys" / "notes.md", "index file\n")
    os.symlink(tmp_path / "docs" / "kb.twokeys", tmp_path / "link-to-index")
    docs, notes = _load(tmp_path / "docs", exclude=(tmp_path / "link-to-index",))
    assert [d.id for d in docs] == ["a.md"] and notes == []
