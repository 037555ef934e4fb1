"""Unit tests for twokeys.ingest: folder walk, decoding, titles, HTML and JSONL."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from twokeys.errors import IngestError
from twokeys.ingest import SUPPORTED_SUFFIXES, SkippedFile, load_documents
from twokeys.ingest.html import html_to_markdown
from twokeys.ingest.jsonl import load_jsonl
from twokeys.ingest.readers.code import SUFFIXES as CODE_SUFFIXES
from twokeys.types import Document


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def _load(source: Path) -> tuple[list[Document], list[SkippedFile]]:
    skipped: list[SkippedFile] = []
    docs = list(load_documents(source, on_skip=skipped.append))
    return docs, skipped


def _one(tmp_path: Path, name: str, content: str | bytes) -> Document:
    docs, skipped = _load(_write(tmp_path / name, content))
    assert skipped == []
    assert len(docs) == 1
    return docs[0]


# --- folder walk -------------------------------------------------------------------


def test_supported_suffixes() -> None:
    assert SUPPORTED_SUFFIXES[:11] == (
        ".md",
        ".markdown",
        ".txt",
        ".rst",
        ".html",
        ".htm",
        ".jsonl",
        ".pdf",
        ".docx",
        ".pptx",
        ".ipynb",
    )
    assert SUPPORTED_SUFFIXES[11:] == CODE_SUFFIXES  # twokeys.ingest.readers.code


def test_folder_walk_is_sorted_recursive_and_skips_hidden_and_unsupported(
    tmp_path: Path,
) -> None:
    _write(tmp_path / "b.md", "# B\n")
    _write(tmp_path / "a.txt", "A\n")
    _write(tmp_path / "sub" / "c.rst", "C\n")
    _write(tmp_path / "sub" / "deeper" / "e.markdown", "E\n")
    _write(tmp_path / "sub" / "d.htm", "<p>D</p>")
    _write(tmp_path / "sub" / ".hidden.md", "hidden\n")
    _write(tmp_path / ".git" / "x.md", "hidden dir\n")
    _write(tmp_path / "script.mk", "ignored:\n")
    _write(tmp_path / "image.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    os.symlink(tmp_path, tmp_path / "loop")  # a directory symlink is never followed

    docs, skipped = _load(tmp_path)

    assert [doc.id for doc in docs] == [
        "a.txt",
        "b.md",
        "sub/c.rst",
        "sub/d.htm",
        "sub/deeper/e.markdown",
    ]
    assert [doc.kind for doc in docs] == ["text", "markdown", "rst", "html", "markdown"]
    assert [str(s) for s in skipped] == [
        "skipped loop: symbolic link to a folder; not followed (its files are indexed where "
        "they are)"
    ]


def test_document_fields(tmp_path: Path) -> None:
    raw = b"# Guide\n\nSome text.\n"
    path = _write(tmp_path / "docs" / "guide.md", raw)

    (doc,) = list(load_documents(tmp_path))

    assert doc == Document(
        id="docs/guide.md",
        title="Guide",
        text="# Guide\n\nSome text.\n",
        path="docs/guide.md",
        mtime=path.stat().st_mtime,
        sha256=hashlib.sha256(raw).hexdigest(),
        kind="markdown",
    )


def test_single_file_source_id_is_the_file_name(tmp_path: Path) -> None:
    path = _write(tmp_path / "nested" / "note.txt", "Note title\nbody\n")

    docs, _ = _load(path)

    assert [(doc.id, doc.path, doc.title) for doc in docs] == [
        ("note.txt", "note.txt", "Note title")
    ]


def test_missing_path_raises_before_iteration(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(IngestError) as info:
        load_documents(missing)  # no list(): the error is raised eagerly
    assert str(info.value) == f"no such file or directory: {missing}"


def test_unsupported_single_file_raises(tmp_path: Path) -> None:
    path = _write(tmp_path / "data.csv", "a,b\n")
    with pytest.raises(IngestError, match=r"unsupported file type: .*data\.csv"):
        load_documents(path)


# --- decoding ----------------------------------------------------------------------


def test_utf8_bom_is_removed(tmp_path: Path) -> None:
    raw = b"\xef\xbb\xbfTitle line\nna\xc3\xafve\n"
    doc = _one(tmp_path, "bom.txt", raw)
    assert doc.text == "Title line\nnaïve\n"
    assert doc.title == "Title line"
    assert doc.sha256 == hashlib.sha256(raw).hexdigest()


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom(tmp_path: Path, encoding: str) -> None:
    bom = b"\xff\xfe" if encoding == "utf-16-le" else b"\xfe\xff"
    raw = bom + "# Überblick\r\n\r\nGrüße aus Köln.\r\n".encode(encoding)
    doc = _one(tmp_path, "u16.md", raw)
    assert doc.title == "Überblick"
    assert doc.text == "# Überblick\n\nGrüße aus Köln.\n"


def test_latin1_file_is_detected(tmp_path: Path) -> None:
    text = (
        "Le café est très bon.\nNous avons mangé une crème brûlée à la française près du musée.\n"
    )
    doc = _one(tmp_path, "menu.txt", text.encode("latin-1"))
    assert doc.text == text
    assert doc.title == "Le café est très bon."


def test_newlines_are_normalised(tmp_path: Path) -> None:
    doc = _one(tmp_path, "crlf.txt", b"one\r\ntwo\rthree\n")
    assert doc.text == "one\ntwo\nthree\n"


def test_binary_file_is_skipped_and_the_rest_loaded(tmp_path: Path) -> None:
    _write(tmp_path / "a.md", "# A\n")
    _write(tmp_path / "docs" / "x.md", b"PK\x03\x04\x00\x00binary")
    _write(tmp_path / "z.txt", "Z\n")

    docs, skipped = _load(tmp_path)

    assert [doc.id for doc in docs] == ["a.md", "z.txt"]
    assert skipped == [SkippedFile("docs/x.md", "binary file (NUL bytes)")]
    assert str(skipped[0]) == "skipped docs/x.md: binary file (NUL bytes)"


@pytest.mark.parametrize("content", ["", "  \n\n\t\n"])
def test_empty_file_is_skipped(tmp_path: Path, content: str) -> None:
    _write(tmp_path / "empty.md", content)
    _write(tmp_path / "full.md", "text\n")

    docs, skipped = _load(tmp_path)

    assert [doc.id for doc in docs] == ["full.md"]
    assert [str(skip) for skip in skipped] == ["skipped empty.md: empty"]


def test_unreadable_file_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path / "a.txt", "A\n")
    locked = _write(tmp_path / "b.txt", "B\n")
    read_bytes = Path.read_bytes

    def deny(self: Path) -> bytes:
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    # Tests often run as root, where chmod 000 does not stop a read.
    monkeypatch.setattr(Path, "read_bytes", deny)
    docs, skipped = _load(tmp_path)

    assert [doc.id for doc in docs] == ["a.txt"]
    assert [str(skip) for skip in skipped] == ["skipped b.txt: unreadable (Permission denied)"]


# --- titles ------------------------------------------------------------------------


def test_markdown_front_matter_goes_to_metadata(tmp_path: Path) -> None:
    content = (
        "---\n"
        'title: "Power troubleshooting"\n'
        "author: Ann Lee\n"
        "tags:\n"
        "  - power\n"
        "---\n"
        "\n"
        "# Heading in body\n"
        "Text.\n"
    )
    doc = _one(tmp_path, "power.md", content)
    assert doc.title == "Power troubleshooting"
    assert doc.metadata == {
        "title": "Power troubleshooting",
        "author": "Ann Lee",
        "tags": ["power"],
    }
    assert doc.text == "# Heading in body\nText.\n"


def test_markdown_front_matter_without_title_falls_back_to_heading(
    tmp_path: Path,
) -> None:
    doc = _one(tmp_path, "x.md", "---\nauthor: Bo\n---\n# Real title\n")
    assert (doc.title, doc.metadata, doc.text) == (
        "Real title",
        {"author": "Bo"},
        "# Real title\n",
    )


def test_markdown_front_matter_keeps_yaml_types(tmp_path: Path) -> None:
    content = (
        "---\n"
        "lang: en\n"
        "version: 3\n"
        "draft: false\n"
        "updated: 2024-05-01\n"
        "tags: [power, 'ZX-4821']\n"
        "owner: {team: support}\n"
        "---\n"
        "# T\n"
    )
    doc = _one(tmp_path, "t.md", content)
    assert doc.metadata == {
        "lang": "en",
        "version": 3,
        "draft": False,
        "updated": "2024-05-01",
        "tags": ["power", "ZX-4821"],
        "owner": {"team": "support"},
    }
    broken = "---\ntitle: [unclosed\n---\n# T\n"
    assert _one(tmp_path, "b.md", broken).text == broken  # not YAML: not front matter


def test_markdown_thematic_break_is_not_front_matter(tmp_path: Path) -> None:
    content = "---\nJust a paragraph between rules.\n---\nMore.\n"
    doc = _one(tmp_path, "rules.md", content)
    assert (doc.title, doc.metadata, doc.text) == ("rules", {}, content)


def test_markdown_title_skips_code_fences_and_subheadings(tmp_path: Path) -> None:
    content = "## Sub\n\n```bash\n# not a title\n```\n\n# Install guide #\n"
    doc = _one(tmp_path, "install.md", content)
    assert doc.title == "Install guide"


def test_markdown_without_heading_uses_stem(tmp_path: Path) -> None:
    doc = _one(tmp_path, "release-notes.markdown", "Plain paragraph.\n")
    assert doc.title == "release-notes"


def test_rst_titles(tmp_path: Path) -> None:
    overlined = _one(tmp_path / "a", "a.rst", "=======\n Intro\n=======\n\nBody.\n")
    underlined = _one(tmp_path / "b", "b.rst", "Some text.\n\nSetup\n-----\n\nBody.\n")
    too_short = _one(tmp_path / "c", "notes.rst", "Long title\n===\n")
    assert overlined.title == "Intro"
    assert underlined.title == "Setup"
    assert too_short.title == "notes"


def test_text_titles(tmp_path: Path) -> None:
    short = _one(tmp_path / "a", "a.txt", "\n\n  First line  \nsecond\n")
    long = _one(tmp_path / "b", "long.txt", "x" * 120 + "\n")
    assert short.title == "First line"
    assert long.title == "long"


# --- HTML --------------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html><head><title>Fix &amp; Repair</title><style>p { color: red }</style></head>
<body>
<header><h1>Site name</h1></header>
<nav><a href="/">Home</a></nav>
<!-- build 42 -->
<h1>Power   problems</h1>
<p>The unit   won&#39;t <b>start</b> &lt;ZX-4821&gt;.<br>Check the fuse.</p>
<h3>Steps</h3>
<ul><li>Unplug it</li><li>Wait <em>30</em> s</li></ul>
<pre><code class="language-bash">$ reset --hard  &amp;&amp; echo ok
    indented
</code></pre>
<script>alert("x")</script>
<table><tr><th>Code</th><th>Meaning</th></tr><tr><td>E1</td><td>fuse</td></tr></table>
<footer>Copyright</footer>
</body></html>
"""

_PAGE_MARKDOWN = (
    "# Power problems\n"
    "\n"
    "The unit won't start <ZX-4821>.\n"
    "Check the fuse.\n"
    "\n"
    "### Steps\n"
    "\n"
    "- Unplug it\n"
    "\n"
    "- Wait 30 s\n"
    "\n"
    "```bash\n"
    "$ reset --hard  && echo ok\n"
    "    indented\n"
    "```\n"
    "\n"
    "Code | Meaning\n"
    "E1 | fuse"
)


def test_html_to_markdown() -> None:
    assert html_to_markdown(_PAGE) == ("Fix & Repair", _PAGE_MARKDOWN)


def test_html_title_falls_back_to_first_h1() -> None:
    html = "<div><p>intro</p><h1>First</h1><h1>Second</h1><ol><li>a<ol><li>b</li></ol></li></ol>"
    assert html_to_markdown(html) == (
        "First",
        "intro\n\n# First\n\n# Second\n\n- a\n\n  - b",
    )


def test_html_file_document(tmp_path: Path) -> None:
    doc = _one(tmp_path, "page.html", _PAGE)
    assert (doc.kind, doc.title, doc.text) == ("html", "Fix & Repair", _PAGE_MARKDOWN)
    untitled = _one(tmp_path / "u", "untitled.htm", "<p>just text</p>")
    assert (untitled.title, untitled.text) == ("untitled", "just text")


def test_html_without_text_is_skipped(tmp_path: Path) -> None:
    path = _write(tmp_path / "blank.html", "<html><script>x()</script></html>")
    docs, skipped = _load(path)
    assert docs == []
    assert skipped == [SkippedFile("blank.html", "empty")]


# --- JSONL -------------------------------------------------------------------------

_CORPUS = (
    '{"_id": "d1", "title": "Alpha", "text": "First text.", "metadata": {"url": "u1"}}\n'
    "\n"
    '{"id": 7, "contents": "Seven.", "lang": "en"}\n'
    '{"_id": "d3" "text": "broken"}\n'
    '{"_id": "d4"}\n'
    '{"title": "no id", "text": "x"}\n'
    '{"_id": "d1", "text": "again"}\n'
    "[1, 2]\n"
    '{"_id": "d9", "title": "Last", "text": "Line\\r\\nbreak"}\n'
)


def test_single_jsonl_file_is_a_corpus(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.jsonl", _CORPUS)

    docs, skipped = _load(path)

    assert [(doc.id, doc.title, doc.text) for doc in docs] == [
        ("d1", "Alpha", "First text."),
        ("7", "", "Seven."),
        ("d9", "Last", "Line\nbreak"),
    ]
    assert [doc.metadata for doc in docs] == [{"url": "u1"}, {"lang": "en"}, {}]
    first = docs[0]
    assert first.path == "corpus.jsonl"
    assert first.kind == "jsonl"
    assert first.mtime == path.stat().st_mtime
    assert first.sha256 == hashlib.sha256(b"Alpha\nFirst text.").hexdigest()
    assert [str(skip) for skip in skipped] == [
        "skipped corpus.jsonl line 4: invalid JSON (Expecting ',' delimiter)",
        "skipped corpus.jsonl line 5: missing text (`text` or `contents`)",
        "skipped corpus.jsonl line 6: missing id (`_id` or `id`)",
        "skipped corpus.jsonl line 7: duplicate id 'd1' (first on line 1)",
        "skipped corpus.jsonl line 8: not a JSON object (got list)",
    ]
    assert skipped[0] == SkippedFile(
        "corpus.jsonl", "invalid JSON (Expecting ',' delimiter)", line=4
    )


def test_jsonl_in_folder_gets_path_prefix(tmp_path: Path) -> None:
    _write(tmp_path / "data" / "qa.jsonl", '{"_id": "q1", "text": "What?"}\n')
    _write(tmp_path / "readme.md", "# Readme\n")

    docs, skipped = _load(tmp_path)

    assert [(doc.id, doc.path) for doc in docs] == [
        ("data/qa.jsonl#q1", "data/qa.jsonl"),
        ("readme.md", "readme.md"),
    ]
    assert skipped == []


def test_load_jsonl_streams_with_prefix(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", '{"_id": 1, "text": "a"}\n{"_id": 2, "text": "b"}\n')
    records = load_jsonl(path, "c.jsonl", id_prefix="p:")
    assert next(records).id == "p:1"
    assert [doc.id for doc in records] == ["p:2"]
