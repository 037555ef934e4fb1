"""Hostile but realistic input through the command line: every failure is one line,
every silent drop a named warning (issue 12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_docs
from twokeys.cli import main

DOCS = {
    "a.md": "# Power\n\n## ZX-4821\n\nUndervoltage on the power supply.\n",
    "b.md": "# Firmware\n\n## ZX-4812\n\nSignature check failed.\n",
}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("kb")
    src = write_docs(root / "docs", DOCS)
    index = str(root / "kb.twokeys")
    code, _, err = run("index", str(src), "--index", index, "--encoder", "test-hash", "-q")
    assert code == 0, err
    return index


@pytest.mark.parametrize(
    ("value", "shown"), [("-60", "-60.0"), ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf")]
)
def test_bad_rrf_k_is_one_line(kb: str, value: str, shown: str) -> None:
    code, out, err = run("search", "power", "--index", kb, "--fusion", "rrf", "--rrf-k", value)
    assert code == 1 and out == ""
    assert err.startswith("error: rrf_k: must be") and err.endswith(f", got {shown}\n")
    assert err.count("\n") == 1


def test_odd_names_and_records_are_indexed_with_named_warnings(tmp_path: Path) -> None:
    src = tmp_path / "docs"
    write_docs(src, DOCS)
    with open(os.path.join(os.fsencode(src), b"caf\xe9.md"), "wb") as fh:
        fh.write(b"# Menu\n\nEspresso and croissants.\n")
    records = [
        '{"_id": "y.md", "text": "Record y of c.jsonl."}',
        '{"_id": "s\\ud800", "title": "Bad \\udfff title", "text": "lone \\ud800 surrogate"}',
        '{"_id": "t", "text": ""}',
    ]
    (src / "c.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    (src / "c.jsonl#y.md").write_text("A file whose name collides.\n", encoding="utf-8")
    (src / "headings.md").write_text("# Release notes\n\n## Version 4.2\n", encoding="utf-8")
    (src / "page.html").write_text("<h1>Unclosed heading<p>Page body.</p>", encoding="utf-8")
    index = str(src / "kb.twokeys")  # inside its own source folder
    code, out, err = run("index", str(src), "--index", index, "--encoder", "test-hash", "-q")
    assert code == 0, err
    assert err.splitlines() == [
        "warning: c.jsonl line 2: lone surrogate escapes in id, title, text replaced by U+FFFD",
        "warning: skipped c.jsonl line 3: empty text and no title (nothing to index)",
        "warning: skipped c.jsonl#y.md: id 'c.jsonl#y.md' is already taken by c.jsonl",
        "warning: caf\ufffd.md: file name is not valid UTF-8 (bytes shown as U+FFFD)",
    ]
    assert "indexed 7 documents" in out and "2 skipped, 2 with warnings" in out
    for query, path in [
        ("croissants", "caf\ufffd.md"),
        ("surrogate", "c.jsonl"),
        ("4.2", "headings.md"),
        ("page body", "page.html"),
    ]:
        code, out, err = run("search", query, "--index", index, "--mode", "bm25", "-k", "1")
        assert code == 0 and out.startswith(f"1. {path}"), (query, out, err)
    # the second run finds the index it wrote and leaves it out again
    code, out, err = run("index", str(src), "--index", index, "--encoder", "test-hash", "-q")
    assert code == 0 and "7 unchanged" in out


def test_a_query_that_is_not_utf8_is_repaired_with_a_warning(kb: str) -> None:
    for command in ("search", "ask"):
        code, out, err = run(command, "power caf\udce9", "--index", kb)
        assert code == 0, err
        assert err.startswith(
            "warning: the query is not valid UTF-8; its undecodable bytes are replaced by U+FFFD"
        )
        assert "a.md" in out


def test_the_library_rejects_unencodable_and_overlong_queries(kb: str) -> None:
    from twokeys import open_index
    from twokeys.errors import ConfigError

    with open_index(kb) as index:
        with pytest.raises(ConfigError, match=r"^query: not valid Unicode \(lone surrogates"):
            index.search("power caf\udce9")
        with pytest.raises(ConfigError, match=r"^query: 100,000 characters, over the limit of"):
            index.search("x" * 100_000, mode="bm25")
        with pytest.raises(ConfigError, match=r"^query: 10,001 characters"):
            index.search_many(["power", "y " * 5000 + "z"])
    code, _, err = run("search", "power " * 3000, "--index", kb)
    assert code == 1 and err.startswith("error: query: 18,000 characters, over the limit")


@pytest.mark.parametrize("fusion", ["adaptive", "minmax", "zscore", "dbsf", "chance"])
def test_a_query_without_lexical_terms_keeps_the_dense_scores(kb: str, fusion: str) -> None:
    from twokeys import open_index

    with open_index(kb) as index:
        assert index.search("?!? ... ---", mode="bm25") == []
        dense = index.search("?!? ... ---", mode="dense", k=2)
        hybrid = index.search("?!? ... ---", mode="hybrid", fusion=fusion, k=2, explain=True)
    assert [(h.chunk.id, h.score) for h in hybrid] == [(h.chunk.id, h.score) for h in dense]
    assert hybrid[0].score < 1.0  # not min-max's 1.0 for the best of a single sensor
    assert [e.retriever for e in hybrid[0].evidence] == ["dense"]
    assert hybrid[0].evidence[0].weight == 1.0


def test_escape_sequences_never_reach_the_terminal(tmp_path: Path) -> None:
    evil = "\x1b]0;owned\x07\x1b[2J\x9b31m"
    src = write_docs(
        tmp_path / "docs",
        {
            f"clear{evil}.md": f"# Title {evil} [bold]markup[/bold]\n\n"
            f"The fuse {evil} protects the power supply. Replace the fuse when it blows.\n",
        },
    )
    index = str(tmp_path / "kb.twokeys")
    code, out, err = run("index", str(src), "--index", index, "--encoder", "test-hash", "-q")
    assert code == 0, err
    outputs = [out, err]
    for args in (
        ["search", "fuse", "--explain"],
        ["search", f"fuse {evil}", "--mode", "bm25"],
        ["ask", "What does the fuse protect?"],
        ["ask", "What does the fuse protect?", "--show-context"],
        ["info"],
    ):
        code, out, err = run(*args, "--index", index)
        assert code == 0, (args, err)
        outputs += [out, err]
    code, out, err = run("search", "fuse", "--index", str(tmp_path / f"missing{evil}"))
    assert code == 1
    outputs += [out, err]
    for text in outputs:
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, text
    assert any("[bold]markup[/bold]" in text for text in outputs)  # shown, not interpreted
    assert any("clear\ufffd]0;owned" in text for text in outputs)


def test_for_terminal_keeps_text_and_replaces_controls() -> None:
    from twokeys.sanitize import for_terminal

    assert for_terminal("a\tb\nc\r\x1b[2Jd\x7f\x9b") == "a b c \ufffd[2Jd\ufffd\ufffd"
    assert for_terminal("a\tb\nc\x00", multiline=True) == "a\tb\nc\ufffd"
    assert for_terminal("caf\udce9 \u00e9\u4e2d") == "caf\ufffd \u00e9\u4e2d"


def test_indexing_another_source_into_an_index_is_refused_without_replace(
    tmp_path: Path,
) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    extra = write_docs(tmp_path / "extra", {"new.md": "# New\n\nA new page about fuses.\n"})
    index = str(tmp_path / "kb.twokeys")
    base = ["--index", index, "--no-dense", "-q"]
    assert run("index", str(src), *base)[0] == 0
    code, out, err = run("index", str(extra / "new.md"), *base)
    assert code == 1 and out == ""
    assert err == (
        f"error: {index} was built from {src}; indexing {extra / 'new.md'} into it would "
        f"remove 2 of its 2 documents (pass --replace to make it an index of "
        f"{extra / 'new.md'} alone, or use another --index)\n"
    )
    code, out, _ = run("search", "signature", "--index", index, "--mode", "bm25")
    assert code == 0 and "b.md" in out  # untouched
    # the same source syncs: a deleted file is removed without asking
    (src / "b.md").unlink()
    code, out, _ = run("index", str(src), *base)
    assert code == 0 and "0 added, 0 changed, 1 unchanged, 1 removed" in out
    code, out, _ = run("index", str(extra / "new.md"), *base, "--replace")
    assert code == 0 and "1 added, 0 changed, 0 unchanged, 1 removed" in out
    from twokeys.store.local import read_manifest

    assert read_manifest(Path(index)).source == str(extra / "new.md")


def test_progress_is_plain_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    code, _, err = run("index", str(src), "--index", str(tmp_path / "kb"), "--no-dense")
    assert code == 0
    lines = err.splitlines()
    assert lines[0] == "Reading and chunking: started"
    assert lines[1].startswith("Reading and chunking: done, 2 in ")
    assert lines[2] == "Lexical index: started (2)"
    assert lines[3].startswith("Lexical index: done, 2/2 (100%) in ")


def test_plain_progress_reports_every_ten_seconds() -> None:
    from twokeys.cliutil import _PlainProgress

    now = [0.0]
    lines: list[str] = []
    progress = _PlainProgress(lines.append, clock=lambda: now[0])
    advance = progress.stage("Embedding", 1000)
    for _ in range(25):
        now[0] += 1.0
        advance(40)
    progress.finish()
    assert lines == [
        "Embedding: started (1,000)",
        "Embedding: 400/1,000 (40%), 10 s",
        "Embedding: 800/1,000 (80%), 20 s",
        "Embedding: done, 1,000/1,000 (100%) in 25.0 s",
    ]
