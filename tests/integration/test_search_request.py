"""The engine and the CLI answer one SearchRequest: shorthands, conflicts, serialisation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_docs
from twokeys.cli import main
from twokeys.engine import Index, open_index
from twokeys.errors import ConfigError
from twokeys.indexer import IndexOptions, build_index
from twokeys.request import SearchRequest

DOCS = {
    "a.md": "# Power\n\n## ZX-4821\n\nUndervoltage on the power supply. Replace the fuse.\n",
    "b.md": "# Firmware\n\n## ZX-4812\n\nSignature check failed after a firmware update.\n",
    "c.md": "# Refunds\n\nA broken item can be returned for a refund within 30 days.\n",
}


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    src = write_docs(tmp_path / "docs", DOCS)
    path = tmp_path / "kb.twokeys"
    build_index(src, path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture
def kb(index_path: Path) -> Index:
    return open_index(index_path)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_keywords_and_request_give_the_same_hits(kb: Index) -> None:
    by_keywords = kb.search("power fuse", mode="hybrid-rrf", k=3, rrf_k=10.0, explain=True)
    request = SearchRequest("power fuse", k=3, fusion="rrf", rrf_k=10.0, explain=True)
    assert kb.search(request) == by_keywords
    assert by_keywords[0].evidence and by_keywords[0].evidence[0].fused > 0
    plain = SearchRequest("-", k=3, fusion="rrf", rrf_k=10.0)
    assert kb.search_many(["power fuse", "firmware"], mode="hybrid-rrf", k=3, rrf_k=10.0) == [
        kb.search(plain.with_query(q)) for q in ("power fuse", "firmware")
    ]


def test_lexical_weight_reaches_the_fusion(kb: Index) -> None:
    lexical = kb.search("refund", mode="hybrid-minmax", lexical_weight=1.0, k=3, explain=True)
    dense = kb.search("refund", mode="hybrid-minmax", lexical_weight=0.0, k=3, explain=True)
    assert {e.weight for e in lexical[0].evidence if e.retriever == "bm25"} == {1.0}
    assert {e.weight for e in dense[0].evidence if e.retriever == "dense"} == {1.0}


def test_keyword_requests_are_checked_each_time(kb: Index) -> None:
    assert kb.search("power", mode="bm25", k=2) == kb.search("power", mode="bm25", k=2)
    with pytest.raises(ConfigError, match="k: must be an integer"):
        kb.search("power", mode="bm25", k=2.0)
    with pytest.raises(ConfigError, match="k: must be an integer"):
        kb.search("power", mode="bm25", k=True)
    with pytest.raises(ConfigError, match="query: is empty"):
        kb.search("  ", mode="bm25", k=2)


def test_request_with_options_is_an_error(kb: Index) -> None:
    with pytest.raises(ConfigError, match=r"options \(k\) given with a SearchRequest"):
        kb.search(SearchRequest("power"), k=3)


def test_hits_serialise_through_the_library(kb: Index, index_path: Path) -> None:
    hits = kb.search("ZX-4821", k=2, explain=True)
    code, out, _ = run("search", "ZX-4821", "--index", str(index_path), "--json", "-k", "2")
    assert code == 0
    assert json.loads(out) == [h.to_dict() for h in hits]
    data = hits[0].to_dict()
    assert data["chunk_id"] == hits[0].chunk.id and data["path"] == "a.md"
    assert data["evidence"][0]["matched_terms"] == [
        list(t) for t in hits[0].evidence[0].matched_terms
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--mode", "hybrid-rrf", "--fusion", "minmax"), "mode hybrid-rrf sets fusion rrf"),
        (("--mode", "hybrid+e5", "--rerank", "proximity"), "mode hybrid+e5 sets reranker e5"),
        (("--mode", "bm25", "--rrf-k", "10"), "rrf_k: applies to the hybrid retriever only"),
        (("--fusion", "minmax", "--rrf-k", "10"), "rrf_k: applies to the rrf fusions only"),
        (
            (
                "--rerank-top",
                "5",
            ),
            "rerank_top: applies only with a reranker",
        ),
        (("--mode", "hybrid-rrf", "--rrf-k", "inf"), "rrf_k: must be finite"),
    ],
)
def test_cli_conflicts_are_one_line_errors(
    index_path: Path, args: tuple[str, ...], message: str
) -> None:
    code, _, err = run("search", "power", "--index", str(index_path), *args)
    assert code == 1, err
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_cli_reaches_every_fusion_parameter(index_path: Path) -> None:
    code, out, _ = run(
        "search", "refund", "--index", str(index_path), "--fusion", "minmax",
        "--lexical-weight", "1", "--json", "-k", "1",
    )  # fmt: skip
    assert code == 0
    assert {e["weight"] for e in json.loads(out)[0]["evidence"] if e["retriever"] == "bm25"} == {
        1.0
    }
    code, out, _ = run(
        "search", "power", "--index", str(index_path), "--mode", "hybrid-rrf", "--rrf-k", "7",
        "--explain",
    )  # fmt: skip
    assert code == 0 and "rrf 1/(7+" in out


def test_cli_help_shows_the_library_defaults() -> None:
    code, out, _ = run("search", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "[default: hybrid]" in text and "[default: adaptive]" in text
    assert "[default: 60]" in text and "[default: 0.45]" in text and "[default: 20]" in text
