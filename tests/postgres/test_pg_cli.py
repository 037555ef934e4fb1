"""The command line with a postgresql:// --index: index, search, info, ask, eval, --from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import SUPPORT_KB, write_docs
from twokeys.cli import main

pytestmark = pytest.mark.postgres


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_index_search_info_ask_on_postgres_like_on_disk(tmp_path: Path, pg_url: str) -> None:
    docs = str(SUPPORT_KB / "docs")
    local = str(tmp_path / "kb.twokeys")
    for where in (local, pg_url):
        code, out, err = run("index", docs, "--index", where, "--encoder", "test-hash", "-q")
        assert code == 0, err
        assert "indexed " in out
    outputs = []
    for where in (local, pg_url):
        code, out, err = run(
            "search", "What does error code ZX-4821 mean?", "--index", where, "--json", "-k", "5"
        )
        assert code == 0, err
        outputs.append([(h["path"], h["heading"], h["score"]) for h in json.loads(out)])
    assert [h[:2] for h in outputs[0]] == [h[:2] for h in outputs[1]]
    assert [h[2] for h in outputs[0]] == pytest.approx([h[2] for h in outputs[1]], abs=1e-5)
    code, out, _ = run("info", "--index", pg_url, "--json")
    data = json.loads(out)
    _, out_l, _ = run("info", "--index", local, "--json")
    assert data["counts"] == json.loads(out_l)["counts"]
    assert data["path"].startswith("postgresql://") and data["encoder"]["id"] == "test:hash-64"
    assert data["size_bytes"] > 100_000  # the tables' size in the database
    question = "What does error code ZX-4821 mean?"
    code, out, err = run("ask", question, "--index", pg_url, "--mode", "bm25")
    assert code == 0, err
    assert "errors/zx-4821.md" in out


def test_index_from_an_embedded_index_copies_without_embedding(tmp_path: Path, pg_url: str) -> None:
    docs = {"a.md": "# A\n\nZX-4821 power.\n", "b.md": "# B\n\nHub.\n"}
    src = write_docs(tmp_path / "docs", docs)
    local = str(tmp_path / "kb.twokeys")
    assert run("index", str(src), "--index", local, "--encoder", "test-hash", "-q")[0] == 0
    code, out, err = run("index", "--from", local, "--index", pg_url, "-q")
    assert code == 0, err
    assert "indexed 2 documents" in out and "0 chunks embedded" in out
    code, out, _ = run("search", "ZX-4821", "--index", pg_url, "--mode", "bm25")
    assert code == 0 and out.startswith("1. a.md")
    code, _, err = run("index", "--from", local, "--index", str(tmp_path / "other.twokeys"))
    assert code != 0 and "postgresql://" in err
    code, _, err = run("index", "--index", pg_url)
    assert code != 0 and "SOURCE" in err


def test_eval_builds_and_reuses_a_postgres_index(tmp_path: Path, pg_url: str) -> None:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    corpus = {"d1": "power supply undervoltage", "d2": "firmware signature", "d3": "refund"}
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in corpus.items())
    )
    (root / "queries.jsonl").write_text(
        json.dumps({"_id": "1", "text": "power undervoltage"}) + "\n"
        + json.dumps({"_id": "2", "text": "firmware"}) + "\n"
    )  # fmt: skip
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n")
    args = ("eval", str(root), "--index", pg_url, "--no-dense", "--json")
    code, out, err = run(*args)
    assert code == 0, err
    assert "indexed postgresql://" in err
    data = json.loads(out)
    assert data["index"].startswith("postgresql://")
    assert data["retrievers"]["bm25"]["means"]["nDCG@10"] == pytest.approx(1.0)
    code, out, err = run(*args)
    assert code == 0 and "reusing index postgresql://" in err
