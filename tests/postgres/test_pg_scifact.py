"""Parity with the embedded engine on SciFact (real PostgreSQL, real data).

BM25: every test query's top 10 is the same list of chunks, scores within 1e-4, for an
index built from the corpus by each backend. With MiniLM (``full``: eval's cached index,
or 10k chunks embedded): the embedded index copied into PostgreSQL gives nDCG@10 within
0.002 in every mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import conftest  # noqa: F401 - registers the test-hash encoder
from conftest import SHARED_DATA
from twokeys import IndexOptions, build_index, open_index
from twokeys.evaluation.beir import load_collection
from twokeys.evaluation.experiment import default_index_path, ensure_index
from twokeys.evaluation.runs import doc_ranking, evaluate
from twokeys.migrate import copy_into_postgres

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data not available"),
]
SCIFACT = SHARED_DATA / "scifact"


def test_scifact_bm25_top10_and_scores_equal_embedded(tmp_path: Path, pg_url: str) -> None:
    options = IndexOptions(encoder=None)
    local = tmp_path / "scifact.twokeys"
    build_index(SCIFACT / "corpus.jsonl", local, options)
    build_index(SCIFACT / "corpus.jsonl", pg_url, options)
    queries = load_collection(SCIFACT, "test").queries
    worst = 0.0
    with open_index(str(local)) as a, open_index(pg_url) as b:
        assert b.manifest.counts == a.manifest.counts
        for qid, query in queries.items():
            ra = a.search(query, mode="bm25", k=10)
            rb = b.search(query, mode="bm25", k=10)
            assert [h.chunk.id for h in ra] == [h.chunk.id for h in rb], qid
            worst = max([worst, *(abs(x.score - y.score) for x, y in zip(ra, rb, strict=True))])
    assert worst <= 1e-4, worst


def test_adi_with_the_real_encoder_ranks_as_the_embedded_engine(
    tmp_path: Path, pg_url: str
) -> None:
    """bm25, dense and the adaptive hybrid, default encoder: the same top 10 per query."""
    local = tmp_path / "adi.twokeys"
    build_index(SHARED_DATA / "adi" / "corpus.jsonl", local)
    copy_into_postgres(local, pg_url)
    queries = load_collection(SHARED_DATA / "adi", "test").queries
    with open_index(str(local)) as a, open_index(pg_url, encoder=a.encoder) as b:
        for mode in ("bm25", "dense", "hybrid"):
            for qid, query in queries.items():
                ra = a.search(query, mode=mode, k=10)
                rb = b.search(query, mode=mode, k=10)
                assert [h.chunk.id for h in ra] == [h.chunk.id for h in rb], (mode, qid)
                assert [h.score for h in ra] == pytest.approx([h.score for h in rb], abs=1e-4)


def test_scifact_hybrid_ndcg_equal_with_the_hash_encoder(tmp_path: Path, pg_url: str) -> None:
    """Every mode over SciFact's 10k chunks (the fast fake encoder: the default one takes
    15 minutes here, see the full test below): nDCG@10 within 0.002, top 10 identical."""
    options = IndexOptions(encoder="test-hash")
    local = tmp_path / "scifact.twokeys"
    build_index(SCIFACT / "corpus.jsonl", local, options)
    copy_into_postgres(local, pg_url)
    c = load_collection(SCIFACT, "test")
    with open_index(str(local)) as a, open_index(pg_url) as b:
        for mode in ("bm25", "dense", "hybrid"):
            scores, same = [], 0
            for kb in (a, b):
                run = {}
                for qid, q in c.queries.items():
                    run[qid] = doc_ranking(kb.search(q, mode=mode, k=100), 100)
                scores.append(evaluate(c.qrels, run, ["nDCG@10"])["nDCG@10"])
            for q in c.queries.values():
                same += [h.chunk_id for h in a.search(q, mode=mode, k=10)] == [
                    h.chunk_id for h in b.search(q, mode=mode, k=10)
                ]
            assert abs(scores[0] - scores[1]) <= 0.002, (mode, scores)
            assert same == len(c.queries), (mode, same)


@pytest.mark.full
def test_scifact_copied_index_gives_the_same_ndcg(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default encoder (MiniLM): eval's cached SciFact index (built once, 15 minutes
    here, when $TWOKEYS_CACHE has none) copied into PostgreSQL, nothing re-embedded;
    every mode's nDCG@10 within 0.002, printed for both engines."""
    c = load_collection(SCIFACT, "test")
    local = ensure_index(c, default_index_path(SCIFACT), encoder="minilm", cached=True).path
    copy_into_postgres(Path(local), pg_url)
    with open_index(str(local)) as a, open_index(pg_url, encoder=a.encoder) as b:
        for mode in ("bm25", "dense", "hybrid"):
            scores = []
            for kb in (a, b):
                run = {
                    qid: doc_ranking(kb.search(q, mode=mode, k=300), 100)
                    for qid, q in c.queries.items()
                }
                scores.append(evaluate(c.qrels, run, ["nDCG@10"])["nDCG@10"])
            with capsys.disabled():
                print(
                    f"\nSciFact test, MiniLM, {mode:6s} nDCG@10: embedded {scores[0]:.4f}, "
                    f"postgres {scores[1]:.4f}"
                )
            assert abs(scores[0] - scores[1]) <= 0.002, (mode, scores)
