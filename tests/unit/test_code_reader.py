"""The code reader: real tree-sitter grammars cut source files by symbol."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from twokeys.ingest import SkippedFile, load_documents
from twokeys.ingest.readers.code import code_segments, language_of, line_windows, module_name
from twokeys.types import Segment

pytest.importorskip("tree_sitter", reason="the [code] extra")


def table(text: str, segments: tuple[Segment, ...]) -> list[tuple[int, int, str, str]]:
    """(first line, last line, symbol, first line of text) of each segment, after checking
    that the segments cover the text in order."""
    assert segments[0].start == 0
    assert segments[-1].end == len(text)
    for before, after in itertools.pairwise(segments):
        assert before.end == after.start
    out = []
    for s in segments:
        loc = s.locator
        assert loc.line_start is not None and loc.line_end is not None and loc.symbol
        out.append(
            (loc.line_start, loc.line_end, loc.symbol, text[s.start : s.end].strip().split("\n")[0])
        )
    return out


def read(path: str, text: str) -> list[tuple[int, int, str, str]]:
    segments, warning = code_segments(text, path, language_of(path) or "")
    assert warning == ""
    return table(text, segments)


PYTHON = '''"""Connection pools."""
import threading

LIMIT = 8


# Find one user.
# (cached)
def get_user_by_id(uid):
    """Return the user with this id."""
    return uid


class Pool:
    """A fixed set of connections."""

    size = 3

    @property
    def acquire(self):
        """Take one."""
        return 1

    def release(self):
        pass


if __name__ == "__main__":
    main()
'''


def test_python_functions_classes_methods_with_their_comments_and_docstrings() -> None:
    assert read("src/db/pool.py", PYTHON) == [
        (1, 4, "pool", '"""Connection pools."""'),
        (7, 11, "pool.get_user_by_id", "# Find one user."),
        (14, 17, "pool.Pool", "class Pool:"),
        (19, 22, "pool.Pool.acquire", "@property"),
        (24, 25, "pool.Pool.release", "def release(self):"),
        (28, 29, "pool", 'if __name__ == "__main__":'),
    ]


def test_a_package_init_is_named_by_its_folder() -> None:
    assert module_name("src/db/__init__.py") == "db"
    assert module_name("src/net/mod.rs") == "net"
    assert module_name("util.py") == "util"
    assert read("db/__init__.py", "def connect():\n    pass\n")[0][2] == "db.connect"


def test_typescript() -> None:
    text = (
        "import x from 'y';\n\n/** Gets a user. */\nexport function getUserById(id: number) {\n"
        "  return db.get(id);\n}\n\nexport class UserStore {\n  private cache = new Map();\n\n"
        "  // Saves it.\n  save(u: User): void {\n    this.cache.set(u.id, u);\n  }\n}\n\n"
        "export const parseArgs = (argv: string[]) => argv.slice(2);\n"
        "interface User { id: number }\n"
    )
    assert [row[:3] for row in read("web/app.ts", text)] == [
        (1, 1, "app"),
        (3, 6, "app.getUserById"),
        (8, 9, "app.UserStore"),
        (11, 15, "app.UserStore.save"),
        (17, 17, "app.parseArgs"),
        (18, 18, "app.User"),
    ]


def test_javascript_and_tsx() -> None:
    text = "const a = 1;\nfunction add(a, b) {\n  return a + b;\n}\nmodule.exports = { add };\n"
    assert [row[:3] for row in read("lib/math.js", text)] == [
        (1, 1, "math"),
        (2, 4, "math.add"),
        (5, 5, "math"),
    ]
    tsx = "export function Button(props: Props) {\n  return <button>{props.label}</button>;\n}\n"
    assert [row[:3] for row in read("ui/Button.tsx", tsx)] == [(1, 3, "Button.Button")]


def test_go_methods_are_named_by_their_receiver() -> None:
    text = (
        'package main\n\nimport "fmt"\n\n// Server serves.\ntype Server struct {\n\tport int\n}\n\n'
        "// Run runs it.\nfunc (s *Server) Run() error {\n\treturn nil\n}\n\n"
        "func main() {\n\tfmt.Println(1)\n}\n"
    )
    assert [row[:3] for row in read("cmd/serve.go", text)] == [
        (1, 3, "serve"),
        (5, 8, "serve.Server"),
        (10, 13, "serve.Server.Run"),
        (15, 17, "serve.main"),
    ]


def test_rust_impl_methods_and_attributes() -> None:
    text = (
        "use std::fmt;\n\n/// A pool.\n#[derive(Debug)]\npub struct Pool { size: usize }\n\n"
        "impl Pool {\n    /// Acquire one.\n    pub fn acquire(&self) -> usize { 1 }\n\n"
        "    fn release(&mut self) {}\n}\n\nfn main() {}\n"
    )
    assert [row[:3] for row in read("src/pool.rs", text)] == [
        (1, 1, "pool"),
        (3, 5, "pool.Pool"),
        (7, 7, "pool.Pool"),
        (8, 9, "pool.Pool.acquire"),
        (11, 12, "pool.Pool.release"),
        (14, 14, "pool.main"),
    ]


def test_java() -> None:
    text = (
        "package a;\n\n/** Doc. */\npublic class Main {\n  private int x;\n\n  public Main() {}\n\n"
        "  /** Run. */\n  @Override\n  public void run(String[] args) {\n"
        "    System.out.println(args);\n  }\n}\n"
    )
    assert [row[:3] for row in read("src/a/Main.java", text)] == [
        (1, 1, "Main"),
        (3, 5, "Main.Main"),
        (7, 7, "Main.Main.Main"),
        (9, 14, "Main.Main.run"),
    ]


def test_c_and_cpp() -> None:
    c = (
        "#include <stdio.h>\n\nstruct point { int x; };\n\n/* Make a context. */\n"
        "static SSL_CTX *SSL_CTX_new(const SSL_METHOD *m) {\n  return 0;\n}\n"
    )
    assert [row[:3] for row in read("ssl/ctx.c", c)] == [
        (1, 1, "ctx"),
        (3, 3, "ctx.point"),
        (5, 8, "ctx.SSL_CTX_new"),
    ]
    cpp = (
        "#include <vector>\nnamespace net {\nclass Socket {\n public:\n  // Opens.\n"
        "  int open(int port) { return port; }\n  void close();\n};\n}\n\n"
        "void net::Socket::close() {}\n"
    )
    assert [row[:3] for row in read("net/socket.cpp", cpp)] == [
        (1, 1, "socket"),
        (2, 2, "socket.net"),
        (3, 4, "socket.net.Socket"),
        (5, 6, "socket.net.Socket.open"),
        (7, 9, "socket.net.Socket"),
        (11, 11, "socket.net.Socket.close"),
    ]


def test_shell() -> None:
    text = "#!/bin/sh\nset -e\n\n# Build it.\nbuild() {\n  make all\n}\n\nbuild\n"
    assert [row[:3] for row in read("ci/run.sh", text)] == [
        (1, 2, "run"),
        (4, 7, "run.build"),
        (9, 9, "run"),
    ]


def test_non_ascii_text_keeps_character_offsets() -> None:
    text = '# Grüße\n\ndef größe():\n    return "ß"\n\n\ndef zähler():\n    pass\n'
    rows = read("umlaut.py", text)
    assert rows[1][2:] == ("umlaut.größe", "def größe():")
    assert rows[2][2:] == ("umlaut.zähler", "def zähler():")


def test_a_file_that_does_not_parse_falls_back_to_line_windows() -> None:
    text = "def ok():\n    pass\n\ndef broken(:\n    pass\n" + "x = 1\n" * 70
    segments, warning = code_segments(text, "bad.py", "python")
    assert warning == "does not parse as python (line 4); indexed by line windows"
    assert table(text, segments) == [
        (1, 60, "bad", "def ok():"),
        (61, 75, "bad", "x = 1"),
    ]


def test_a_language_without_grammar_falls_back_with_the_extra_named() -> None:
    segments, warning = code_segments("a\nb\n", "x.cob", "cobol")
    assert "no cobol grammar" in warning and "twokeys[code]" in warning
    assert segments == line_windows("a\nb\n", "x")


def test_a_folder_of_code_is_read_by_symbol(tmp_path: Path) -> None:
    (tmp_path / "pool.py").write_text(PYTHON, encoding="utf-8")
    (tmp_path / "broken.go").write_text("package x\nfunc (\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\n\ntext\n", encoding="utf-8")
    skipped: list[SkippedFile] = []
    docs = {d.id: d for d in load_documents(tmp_path, on_skip=skipped.append)}
    assert sorted(docs) == ["broken.go", "notes.md", "pool.py"]
    pool = docs["pool.py"]
    assert (pool.kind, pool.title, pool.metadata["language"]) == ("code", "pool.py", "python")
    assert [s.locator.symbol for s in pool.segments][1:3] == ["pool.get_user_by_id", "pool.Pool"]
    assert docs["notes.md"].segments == ()
    assert [str(s) for s in skipped] == [
        "broken.go: does not parse as go (line 2); indexed by line windows"
    ]
    assert docs["broken.go"].segments[0].locator.symbol == "broken"


def test_chunks_of_a_long_function_carry_their_own_lines() -> None:
    from twokeys.chunking import ChunkerConfig, approx_token_counter, chunk_document
    from twokeys.ingest.readers.code import read_code
    from twokeys.types import Document

    body = "".join(f"    total += compute_step_{i}(value, factor={i})\n" for i in range(200))
    text = f"import os\n\n\ndef accumulate(value):\n    total = 0\n{body}    return total\n"
    doc, warning = read_code(Document("calc.py", "", text, "calc.py", 0.0, "x", "text"))
    assert warning == ""
    config = ChunkerConfig(max_tokens=128, overlap_tokens=0, min_tokens=16)
    chunks = chunk_document(doc, approx_token_counter, config)
    symbols = [c.locator.symbol for c in chunks if c.locator is not None]
    assert symbols[0] == "calc" and set(symbols[1:]) == {"calc.accumulate"}
    for chunk in chunks[1:]:
        loc = chunk.locator
        assert loc is not None and loc.line_start is not None
        first = text.count("\n", 0, chunk.start + len(chunk.text) - len(chunk.text.lstrip())) + 1
        last = text.count("\n", 0, chunk.start + len(chunk.text.rstrip()) - 1) + 1
        assert (loc.line_start, loc.line_end) == (first, last)
        assert chunk.heading_path == ("calc.accumulate",)
    assert chunks[1].locator is not None and chunks[1].locator.line_start == 4
    assert chunks[-1].locator is not None and chunks[-1].locator.line_end == 206


def test_a_comment_above_a_class_s_first_method_goes_with_it() -> None:
    text = "class Pool:\n    # Take one.\n    def acquire(self):\n        return 1\n"
    assert read("pool.py", text) == [
        (1, 1, "pool.Pool", "class Pool:"),
        (2, 4, "pool.Pool.acquire", "# Take one."),
    ]


def test_many_definitions_are_read_in_one_sweep() -> None:
    methods = "".join(
        f"    # ü {i}\n    def m{i}(self):\n        return {i}\n\n" for i in range(3000)
    )
    text = f"class Big:\n{methods}"
    segments, warning = code_segments(text, "big.py", "python")
    rows = table(text, segments)
    assert warning == "" and len(rows) == 3001
    assert rows[-1] == (11998, 12000, "big.Big.m2999", "# ü 2999")


def test_a_cpp_header_ending_in_h_is_read_as_cpp() -> None:
    text = "#pragma once\nclass Socket {\n public:\n  int open(int port) { return port; }\n};\n"
    assert [row[:3] for row in read("net/socket.h", text)] == [
        (1, 1, "socket"),
        (2, 3, "socket.Socket"),
        (4, 5, "socket.Socket.open"),
    ]
