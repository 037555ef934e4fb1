"""``twokeys eval`` on a tiny BEIR-layout collection written here (fake encoder), and on ADI."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest
from click.testing import CliRunner

import conftest  # registers the "test-hash" encoder
from conftest import SHARED_DATA, write_docs
from twokeys import open_index
from twokeys.engine import MODES
from twokeys.evaluation.experiment import default_index_path
from twokeys.evaluation.measures import standard_measures
from twokeys.evaluation.runs import doc_ranking
from twokeys.store.local import read_manifest

CORPUS = {
    "d1": ("Power supply", "The power supply reports undervoltage below eleven volts."),
    "d2": ("Firmware", "Firmware update failed because the signature check did not pass."),
    "d3": ("Refunds", "You get a refund when an item is delivered in a defective condition."),
    "d4": ("Shipping", "Orders ship within two business days from our warehouse."),
    "d5": ("Battery", "Charge the battery fully before first use to extend its life."),
    "d6": ("Wi-Fi", "Connect the device to a wireless network using the setup app."),
    "d7": ("Passwords", "Reset your password from the account settings page."),
    "d8": ("Warranty", "The warranty covers manufacturing defects for two years."),
}
QUERIES = {
    "1": "<b>power</b> & supply undervoltage",
    "2": "money back for a defective item",
    "3": "how long does shipping take",
    "4": "firmware signature check",
    "5": "wireless network setup for the device",
    "6": "an unjudged query",
}
QRELS = [("1", "d1", 1), ("2", "d3", 2), ("2", "d8", 1), ("3", "d4", 1), ("4", "d2", 1)]
QRELS += [("4", "d7", 0), ("5", "d6", 1), ("7", "d5", 1)]  # query 7 has no text: skipped
MEASURES = ["nDCG@10", "R@10", "R@100", "RR@10", "AP@1000"]


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for did, (title, text) in CORPUS.items():
            fh.write(json.dumps({"_id": did, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as fh:
        for qid, text in QUERIES.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r}" for q, d, r in QRELS]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    from twokeys.cli import main

    result = CliRunner().invoke(main, ["eval", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def _qrels() -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for qid, did, rel in QRELS:
        if qid in QUERIES:
            qrels.setdefault(qid, {})[did] = rel
    return qrels


def _expected_means(index: Path, mode: str) -> dict[str, float]:
    """ir-measures directly on runs built here from Index.search."""
    with open_index(index) as kb:
        run = {q: doc_ranking(kb.search(QUERIES[q], mode=mode, k=300), 100) for q in _qrels()}
    result = ir_measures.calc_aggregate(standard_measures(), _qrels(), run)
    return {str(m): float(v) for m, v in result.items()}


def test_table_json_and_index_reuse(collection: Path, tmp_path: Path) -> None:
    index = tmp_path / "tiny.twokeys"
    base = [str(collection), "--encoder", "test-hash", "--index", str(index)]
    code, out, err = run(*base, "-q")
    assert code == 0, err
    assert f"indexed {index} (no index yet)" in err
    lines = out.splitlines()
    assert "tiny (test, 5 queries)" in lines[0]
    header = next(line for line in lines if "retriever" in line)
    for column in ("nDCG@10", "Recall@10", "Recall@100", "MRR@10", "MAP", "ms/query"):
        assert column in header
    assert all(any(line.startswith(f"│ {r} ") for line in lines) for r in ("bm25", "hybrid"))
    assert "hybrid vs bm25 (baseline), paired over 5 queries" in out
    assert "W/T/L" in out and "t-test p" in out
    assert "Where bm25 and dense disagree" not in out
    generation = read_manifest(index).generation

    code, out, err = run(*base, "--json")  # progress bars on, to stderr
    assert code == 0, err
    assert f"reusing index {index}" in err and "indexed" not in err
    assert read_manifest(index).generation == generation
    data = json.loads(out)
    assert data["dataset"] == "tiny" and data["split"] == "test" and data["queries"] == 5
    assert data["index"] == str(index)
    assert [m["measure"] for m in data["measures"]] == MEASURES
    assert [m["label"] for m in data["measures"]][3:] == ["MRR@10", "MAP"]
    assert list(data["retrievers"]) == ["bm25", "dense", "hybrid"]
    for mode, result in data["retrievers"].items():
        assert result["means"] == pytest.approx(_expected_means(index, mode)), mode
        assert result["ms_per_query"] > 0
        assert set(result["per_query"]["nDCG@10"]) == {"1", "2", "3", "4", "5"}
    [comparison] = [c for c in data["comparisons"] if c["measure"] == "nDCG@10"]
    assert (comparison["a"], comparison["b"]) == ("bm25", "hybrid")
    assert comparison["wins"] + comparison["ties"] + comparison["losses"] == 5
    assert comparison["permutations"] == 32  # 2**5 sign flips: the exact test
    ndcg = {r: data["retrievers"][r]["per_query"]["nDCG@10"] for r in ("bm25", "hybrid")}
    assert comparison["deltas"] == pytest.approx(
        {q: ndcg["hybrid"][q] - ndcg["bm25"][q] for q in ndcg["bm25"]}
    )
    assert 0.0 <= comparison["t_pvalue"] <= 1.0 or comparison["t_pvalue"] is None
    assert data["disagreements"] == []


def test_save_runs_report_and_disagreements(collection: Path, tmp_path: Path) -> None:
    index = tmp_path / "tiny.twokeys"
    runs_dir, report = tmp_path / "runs", tmp_path / "out" / "report.html"
    code, out, err = run(
        str(collection),
        "--encoder",
        "test-hash",
        "--index",
        str(index),
        "--compare",
        "dense,hybrid",
        "--save-runs",
        str(runs_dir),
        "--report",
        str(report),
        "--disagreements",
        "-q",
    )
    assert code == 0, err
    assert "hybrid vs dense (baseline)" in out
    assert "Where bm25 and dense disagree" in out
    assert "warning: 1 judged query has no text in queries.jsonl; skipped" in err

    assert sorted(p.name for p in runs_dir.iterdir()) == ["bm25.trec", "dense.trec", "hybrid.trec"]
    lines = (runs_dir / "hybrid.trec").read_text(encoding="utf-8").splitlines()
    first = lines[0].split()
    assert len(first) == 6 and first[1] == "Q0" and first[3] == "1"
    assert first[5] == "twokeys-hybrid"
    trec_run = list(ir_measures.read_trec_run(str(runs_dir / "hybrid.trec")))
    from_file = ir_measures.calc_aggregate(standard_measures(), _qrels(), trec_run)
    expected = _expected_means(index, "hybrid")
    assert {str(m): v for m, v in from_file.items()} == pytest.approx(expected)

    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<rect" in html
    assert "<script" not in html and "http://" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "Paired comparison: hybrid against dense" in html
    assert "&lt;b&gt;power&lt;/b&gt; &amp; supply" in html
    assert "<b>power</b>" not in html
    assert "Where bm25 and dense disagree" in html

    code, out, err = run(
        str(collection),
        "--encoder",
        "test-hash",
        "--index",
        str(index),
        "--disagreements",
        "2",
        "--json",
        "-q",
    )
    assert code == 0, err
    items = json.loads(out)["disagreements"]
    assert 0 < len(items) <= 2
    for item in items:
        assert item["winner"] in ("bm25", "dense", "tie")
        assert {"query_id", "query", "reason", "bm25", "dense"} <= set(item)
        assert len(item["bm25"]["top"]) <= 3


def test_default_index_lives_in_the_cache(collection: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"TWOKEYS_CACHE": str(cache)}
    code, _, err = run(str(collection), "--no-dense", "-q", env=env)
    assert code == 0, err
    expected = default_index_path(collection, env)
    assert expected.parent == cache / "eval" and expected.name.startswith("tiny-")
    assert expected.name.endswith(".twokeys")
    assert read_manifest(expected).encoder is None
    assert not (collection / ".twokeys-index").exists()
    other = default_index_path(tmp_path / "elsewhere" / "tiny", env)
    assert other != expected and other.name.startswith("tiny-")
    # BM25 only can reuse any index; asking for dense rebuilds with vectors
    code, _, err = run(str(collection), "--encoder", "test-hash", "-q", env=env)
    assert code == 0 and "index built with encoder none, asked for test-hash" in err
    code, _, err = run(str(collection), "--no-dense", "-q", env=env)
    assert code == 0 and "reusing index" in err


def test_usage_errors_name_the_problem(collection: Path, tmp_path: Path) -> None:
    index = str(tmp_path / "x.twokeys")
    code, _, err = run(str(collection), "--retrievers", "bm25,bm52", "--index", index)
    assert code == 2 and f"'bm52' is not a retriever; choose from {', '.join(MODES)}" in err
    assert MODES[:3] == ("bm25", "dense", "hybrid")
    assert "Traceback" not in err
    code, _, err = run(str(collection), "--retrievers", "bm25,dense", "--no-dense")
    assert code == 2 and "dense need dense vectors" in err
    code, _, err = run(str(collection), "--retrievers", "lsi,hybrid+e5,hybrid-rrf", "--no-dense")
    assert code == 2 and "hybrid+e5, hybrid-rrf need dense vectors" in err
    code, _, err = run(str(collection), "--retrievers", "bm25,hybrid", "--compare", "bm25,dense")
    assert code == 2 and "'dense' is not in --retrievers" in err
    code, _, err = run(str(collection), "--retrievers", "bm25,hybrid", "--disagreements")
    assert code == 2 and "add dense to --retrievers" in err
    code, _, err = run(str(tmp_path / "nowhere"), "--index", index)
    assert code == 1 and err.startswith("error: ") and "missing corpus.jsonl" in err
    code, _, err = run(str(collection), "--split", "train", "--index", index)
    assert code == 1 and "missing train.tsv" in err
    assert not Path(index).exists()


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data not available")
def test_adi_hybrid_beats_bm25_and_report_is_written(tmp_path: Path) -> None:
    report = tmp_path / "adi.html"
    code, out, err = run(
        str(SHARED_DATA / "adi"),
        "--index",
        str(tmp_path / "adi.twokeys"),
        "--report",
        str(report),
        "--disagreements",
        "5",
        "--json",
        "-q",
    )
    assert code == 0, err
    data = json.loads(out)
    means = {name: r["means"]["nDCG@10"] for name, r in data["retrievers"].items()}
    assert data["queries"] == 35
    assert means["hybrid"] > means["bm25"], means
    assert len(data["disagreements"]) == 5
    html = report.read_text(encoding="utf-8")
    assert "<svg" in html and "Where bm25 and dense disagree" in html


def test_a_malformed_boolean_query_is_named_and_the_run_goes_on(
    collection: Path, tmp_path: Path
) -> None:
    queries = dict(QUERIES, **{"4": "firmware (signature check"})
    with open(collection / "queries.jsonl", "w", encoding="utf-8") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    index = str(tmp_path / "b.twokeys")
    args = [str(collection), "--no-dense", "--retrievers", "bm25,boolean", "--index", index]
    code, out, err = run(*args, "--json", "-q")
    assert code == 0, err
    assert (
        "warning: boolean: query 4 not run (query syntax: unbalanced parenthesis at column 10); "
        "scored as retrieving nothing" in err
    )
    data = json.loads(out)["retrievers"]
    assert data["boolean"]["failed"] == {"4": "query syntax: unbalanced parenthesis at column 10"}
    assert data["boolean"]["per_query"]["nDCG@10"]["4"] == 0.0
    assert data["bm25"]["failed"] == {} and data["bm25"]["per_query"]["nDCG@10"]["4"] > 0


def test_a_changed_corpus_updates_the_cached_index(collection: Path, tmp_path: Path) -> None:
    env = {"TWOKEYS_CACHE": str(tmp_path / "cache")}
    code, out, err = run(str(collection), "--no-dense", "-q", "--json", env=env)
    assert code == 0 and "no index yet" in err
    before = json.loads(out)["retrievers"]["bm25"]["means"]["nDCG@10"]
    code, _, err = run(str(collection), "--no-dense", "-q", env=env)
    assert code == 0 and "reusing index" in err
    # d1 loses its words: the cached index must not keep answering query 1 with them
    lines = (collection / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps({"_id": "d1", "title": "Misc", "text": "Nothing to see here."})
    (collection / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run(str(collection), "--no-dense", "-q", "--json", env=env)
    assert code == 0, err
    assert "(corpus.jsonl changed since the index was built)" in err
    after = json.loads(out)["retrievers"]["bm25"]["means"]["nDCG@10"]
    assert after < before
    assert json.loads(out)["retrievers"]["bm25"]["per_query"]["nDCG@10"]["1"] == 0.0


def test_unknown_judged_documents_and_a_foreign_index_are_named(
    collection: Path, tmp_path: Path
) -> None:
    qrels = collection / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "1\tghost-1\t1\n2\tghost-2\t0\n", encoding="utf-8")
    index = tmp_path / "x.twokeys"
    code, _, err = run(str(collection), "--no-dense", "-q", "--index", str(index))
    assert code == 0, err
    assert (
        "warning: 2 of the 9 judged documents (1 of 7 relevant) are not in the index "
        "(not in corpus.jsonl, or skipped when it was indexed); they count as misses" in err
    )
    other = write_docs(tmp_path / "other", {"x.md": "Unrelated text about power supplies.\n"})
    foreign = tmp_path / "foreign.twokeys"
    from twokeys import IndexOptions, build_index

    build_index(other, foreign, IndexOptions(encoder=None))
    code, _, err = run(str(collection), "--no-dense", "-q", "--index", str(foreign))
    assert code == 0 and "reusing index" in err
    assert (
        "warning: the index holds none of the 7 relevant documents the qrels name: "
        "was it built from another corpus? (--rebuild builds it from corpus.jsonl)" in err
    )


def test_an_empty_queries_file_is_blamed_not_the_qrels(collection: Path, tmp_path: Path) -> None:
    index = str(tmp_path / "x.twokeys")
    (collection / "queries.jsonl").write_text("\n", encoding="utf-8")
    code, _, err = run(str(collection), "--no-dense", "--index", index)
    assert code == 1 and err == f"error: {collection / 'queries.jsonl'}: no queries\n"
    (collection / "queries.jsonl").write_text('{"_id": "zz", "text": "q"}\n', encoding="utf-8")
    code, _, err = run(str(collection), "--no-dense", "--index", index)
    assert code == 1 and err.startswith(
        "error: none of the 1 queries of queries.jsonl is judged in qrels/test.tsv"
    )
    (collection / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    code, _, err = run(str(collection), "--no-dense", "--index", index)
    assert code == 1 and err == f"error: {collection / 'qrels' / 'test.tsv'}: no judgements\n"


def test_an_index_from_another_version_of_the_encoder_is_updated(
    collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same encoder name, other weights or graph (a new twokeys release): eval must not
    reuse the cached vectors (searching them fails with EncoderMismatchError)."""
    env = {"TWOKEYS_CACHE": str(tmp_path / "cache")}
    code, _, err = run(str(collection), "--encoder", "test-hash", "-q", env=env)
    assert code == 0 and "no index yet" in err, err
    code, _, err = run(str(collection), "--encoder", "test-hash", "-q", env=env)
    assert code == 0 and "reusing index" in err, err
    monkeypatch.setattr(conftest.HashEncoder, "fingerprint", lambda self: "sha256:" + "0" * 64)
    code, out, err = run(str(collection), "--encoder", "test-hash", "-q", "--json", env=env)
    assert code == 0, err
    assert "index was built with encoder test:hash-64" in err
    assert json.loads(out)["retrievers"]["dense"]["means"]["nDCG@10"] > 0
