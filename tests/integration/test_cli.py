"""The command line: index, search, info; errors are one clean line."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_index_search_info_roundtrip(tmp_path: Path) -> None:
    src = write_docs(tmp_path / "docs", DOCS)
    index = str(tmp_path / "kb.twokeys")
    code, out, _ = run("index", str(src), "--index", index, "--encoder", "test-hash", "-q")
    assert code == 0 and "indexed 2 documents" in out
    code, out, _ = run("search", "ZX-4821", "--index", index, "--mode", "bm25", "--explain")
    assert code == 0
    assert out.splitlines()[0].startswith("1. a.md")
    assert "terms: zx-4821" in out
    code, out, _ = run("search", "ZX-4821", "--index", index, "--json", "-k", "2")
    hits = json.loads(out)
    assert hits[0]["path"] == "a.md" and hits[0]["heading"] == "Power > ZX-4821"
    assert {e["retriever"] for e in hits[0]["evidence"]} == {"bm25", "dense"}
    code, out, _ = run("info", "--index", index, "--json")
    data = json.loads(out)
    assert data["counts"]["documents"] == 2 and data["encoder"]["id"] == "test:hash-64"
    code, out, _ = run("info", "--index", index)
    assert code == 0 and "documents" in out


def test_info_and_check_name_an_older_analyzer(tmp_path: Path) -> None:
    """An index an older twokeys' analyzer built can't be searched, but ``info`` still
    shows it and, like ``check`` (whose files do match), says which command brings it up
    to date; the search's error names the same command."""
    from twokeys.analysis import ANALYZER_VERSION

    src = write_docs(tmp_path / "docs", DOCS)
    index = tmp_path / "kb.twokeys"
    assert run("index", str(src), "--index", str(index), "--no-dense", "-q")[0] == 0
    manifest = index / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["analyzer"]["version"] = ANALYZER_VERSION - 1
    manifest.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run("info", "--index", str(index))
    assert code == 0 and f"older than this twokeys' v{ANALYZER_VERSION}" in out
    assert "twokeys index" in out
    code, out, _ = run("info", "--index", str(index), "--json")
    assert code == 0 and json.loads(out)["analyzer"]["version"] == ANALYZER_VERSION - 1
    code, out, err = run("check", "--index", str(index))
    assert code == 0 and "ok" in out
    assert err.startswith("note: analyzer (older than") and "twokeys index" in err
    code, _, err = run("search", "ZX-4821", "--index", str(index), "--mode", "bm25")
    assert code == 1 and "run `twokeys index` on its source again" in err
    assert run("index", str(src), "--index", str(index), "--no-dense", "-q")[0] == 0
    code, out, err = run("check", "--index", str(index))
    assert code == 0 and "note:" not in err
    code, out, _ = run("search", "ZX-4821", "--index", str(index), "--mode", "bm25")
    assert code == 0 and out.splitlines()[0].startswith("1. a.md")


def test_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    code, _, err = run("search", "x", "--index", str(tmp_path / "missing.twokeys"))
    assert code == 1
    assert err.startswith("error: no index at") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run("index", str(tmp_path / "nope"), "--index", str(tmp_path / "ix"))
    assert code == 1 and "no such file or directory" in err
    code, _, err = run("index", str(tmp_path), "--index", str(tmp_path / "i"), "--encoder", "x")
    assert code == 1 and "unknown encoder 'x'" in err


def test_index_path_from_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    src = write_docs(tmp_path / "docs", DOCS)
    monkeypatch.setenv("TWOKEYS_INDEX", str(tmp_path / "env.twokeys"))
    assert run("index", str(src), "--no-dense", "-q")[0] == 0
    code, out, _ = run("search", "signature", "--mode", "bm25")
    assert code == 0 and "b.md" in out
