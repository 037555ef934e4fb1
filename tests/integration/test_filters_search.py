"""Filters inside every retriever: a filtered search returns k hits when k chunks match."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import filter_corpus, write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.cli import main
from twokeys.engine import Index
from twokeys.request import SearchRequest

MODES = ("bm25", "dense", "hybrid", "hybrid-rrf", "hybrid-minmax", "tfidf", "bm25+", "lsi")


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("filters")
    path = root / "kb.twokeys"
    build_index(write_docs(root / "docs", filter_corpus()), path, IndexOptions(encoder="test-hash"))
    return path


@pytest.fixture
def kb(index_path: Path) -> Index:
    return open_index(index_path)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_filters_before_top_k(kb: Index, mode: str) -> None:
    unfiltered = kb.search("power fuse", mode=mode, k=3)
    for folder in ("policies", "guides"):
        hits = kb.search("power fuse", mode=mode, k=3, filters=[f"path:{folder}/*"])
        assert len(hits) == 3 and all(h.path.startswith(f"{folder}/") for h in hits)
    # at least one folder had fewer than 3 of the unfiltered top 3: filtered before top-k
    assert min(sum(h.path.startswith(f) for h in unfiltered) for f in ("policies", "guides")) < 3
    wide = kb.search("power fuse", mode=mode, k=50, filters=["path:policies/*", "lang=en"])
    paths = {h.path for h in wide}
    assert paths == {f"policies/doc-{i:02d}.md" for i in (1, 5, 7, 11)}  # all that match


def test_ranking_within_the_filter_is_the_unfiltered_ranking(kb: Index) -> None:
    everything = kb.search("power fuse", mode="bm25", k=50)
    allowed = [h.chunk_id for h in everything if h.path.startswith("policies/")]
    filtered = kb.search("power fuse", mode="bm25", k=50, filters=["path:policies/"])
    assert [h.chunk_id for h in filtered] == allowed
    assert [h.rank for h in filtered] == list(range(1, len(filtered) + 1))


def test_numeric_date_kind_and_id_filters(kb: Index) -> None:
    def docs(*filters: str) -> set[str]:
        return {h.doc_id for h in kb.search("power fuse", mode="bm25", k=50, filters=filters)}

    assert docs("version>=10") == {"guides/doc-10.md", "policies/doc-11.md"}
    assert docs("updated<2024-02-01") == {"guides/doc-00.md", "policies/doc-09.md"}
    assert docs("kind:text") == {"notes/other.txt"}
    assert docs("id:notes/other.txt,guides/doc-02.md") == {"notes/other.txt", "guides/doc-02.md"}
    assert docs("lang=fr") == set()
    request = SearchRequest.parse("power", "hybrid", filters=["lang=de", "version>3"])
    assert SearchRequest.from_dict(request.to_dict()) == request
    assert {h.doc_id for h in kb.search(request)} == {"guides/doc-06.md", "policies/doc-09.md"}


def test_cli_and_eval_take_filters(index_path: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["search", "power fuse", "--index", str(index_path), "--json", "-k", "10"]
    result = runner.invoke(main, [*args, "--filter", "path:policies/*", "--filter", "lang=en"])
    assert result.exit_code == 0, result.output
    assert {h["path"] for h in json.loads(result.stdout)} == {
        f"policies/doc-{i:02d}.md" for i in (1, 5, 7, 11)
    }
    result = runner.invoke(main, [*args, "--filter", "lang"])
    assert result.exit_code == 1 and "error: filter 'lang': expected" in result.stderr
    collection = tmp_path / "mini"
    (collection / "qrels").mkdir(parents=True)
    records = [
        {"_id": f"d{i}", "title": f"Doc {i}", "text": f"power fuse {i}", "lang": lang}
        for i, lang in enumerate(["en", "de", "en", "de"])
    ]
    (collection / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (collection / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "power fuse"}))
    (collection / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    runs = tmp_path / "runs"
    base = ["eval", str(collection), "--no-dense", "--json", "-q", "--save-runs", str(runs)]
    result = runner.invoke(
        main, [*base, "--index", str(tmp_path / "e.twokeys"), "--filter", "lang=de"]
    )
    assert result.exit_code == 0, result.output
    ranked = [line.split()[2] for line in (runs / "bm25.trec").read_text().splitlines()]
    assert sorted(ranked) == ["d1", "d3"]  # only the documents the filter allows
    assert json.loads(result.stdout)["retrievers"]["bm25"]["means"]
    result = runner.invoke(main, [*base, "--index", str(tmp_path / "f.twokeys"), "--filter", "x"])
    assert result.exit_code == 1 and "filter 'x'" in result.stderr
    assert not (tmp_path / "f.twokeys").exists()  # refused before indexing


def test_the_plain_bm25_search_ranks_as_the_retriever_does(kb: Index) -> None:
    """``Index.search`` answers a plain BM25 search (no filter, reranker or explain) from
    the lexical index's ``search_query`` directly; the retriever stack (taken with
    ``explain`` or a filter that allows every chunk) gives the same ranks and scores."""
    queries = ["power fuse", "fuse fuse POWER", "policies guide", "nothing-matches-this", "the"]
    for query in queries:
        for k in (1, 3, 50):
            plain = kb.search(query, mode="bm25", k=k)
            explained = kb.search(query, mode="bm25", k=k, explain=True)
            everything = kb.search(query, mode="bm25", k=k, filters=["path:*"])
            want = [(h.chunk_id, h.rank, h.score) for h in explained]
            assert [(h.chunk_id, h.rank, h.score) for h in plain] == want
            assert [(h.chunk_id, h.rank, h.score) for h in everything] == want
            assert plain == [replace(h, evidence=()) for h in explained]
