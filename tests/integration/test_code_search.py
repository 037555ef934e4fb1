"""Code identifiers are found whole and by their parts, through a real index of code
files read by the tree-sitter reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from twokeys.engine import open_index
from twokeys.indexer import IndexOptions, build_index

pytest.importorskip("tree_sitter", reason="the [code] extra")

FILES = {
    "users.ts": (
        "export class UserService {\n"
        "  // Looks a user up in the store.\n"
        "  getUserById(id: number): User {\n    return this.store.fetch(id);\n  }\n\n"
        "  deleteAccount(id: number): void {\n    this.store.remove(id);\n  }\n}\n"
    ),
    "cli.py": (
        "import sys\n\n\ndef parse_args(argv):\n"
        '    """Read the command line."""\n    return argv[1:]\n\n\n'
        "def render_table(rows):\n    return '\\n'.join(rows)\n"
    ),
    "ssl.c": (
        "#include <ssl.h>\n\n/* A context for new connections. */\n"
        "SSL_CTX *SSL_CTX_new(const SSL_METHOD *method) {\n  return alloc_ctx(method);\n}\n\n"
        "void free_buffer(char *buffer) {\n  free(buffer);\n}\n"
    ),
    "server.go": (
        "package server\n\n// HTTPServerError wraps a failed request.\n"
        "type HTTPServerError struct {\n\tCode int\n}\n\n"
        "func (s *Server) ListenAndServe() error {\n\treturn nil\n}\n"
    ),
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("code")
    source = root / "src"
    source.mkdir()
    for name, text in FILES.items():
        (source / name).write_text(text, encoding="utf-8")
    build_index(source, root / "index", IndexOptions(encoder=None))
    return root / "index"


@pytest.mark.parametrize(
    ("query", "path", "needle"),
    [
        ("get user by id", "users.ts", "getUserById"),
        ("getUserById", "users.ts", "getUserById"),
        ("parse args", "cli.py", "def parse_args"),
        ("parse_args", "cli.py", "def parse_args"),
        ("ssl ctx new", "ssl.c", "SSL_CTX_new"),
        ("http server error", "server.go", "HTTPServerError"),
        ("listen and serve", "server.go", "ListenAndServe"),
    ],
)
def test_identifiers_are_found_by_their_parts(
    index: Path, query: str, path: str, needle: str
) -> None:
    with open_index(index) as kb:
        hits = kb.search(query, mode="bm25", k=3)
    assert hits, query
    assert hits[0].path == path
    assert needle in hits[0].text


def test_code_documents_are_kind_code_titled_by_their_path(index: Path) -> None:
    with open_index(index) as kb:
        hit = kb.search("render table", mode="bm25", k=1)[0]
    assert (hit.path, hit.title) == ("cli.py", "cli.py")
    assert "render_table" in hit.text
