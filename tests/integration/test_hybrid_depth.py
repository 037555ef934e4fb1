"""The hybrid's fused top does not depend on how many hits the caller asks for.

The hybrid fuses the first ``candidates`` entries of each run; asking for more hits
(``twokeys eval`` asks for 300 chunks) must only add hits below them. Before, the
semantic-support rule read a missing chunk's similarity from the last entry of however
deep the dense run went, and chunks far down the BM25 run could tier above the rest.
"""

from __future__ import annotations

import json

import pytest

from conftest import SHARED_DATA, SUPPORT_KB
from twokeys import open_index
from twokeys.engine import Index
from twokeys.evaluation.beir import load_collection
from twokeys.evaluation.experiment import default_index_path, ensure_index
from twokeys.indexer import IndexOptions, build_index


def _queries() -> list[str]:
    lines = (SUPPORT_KB / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Index:
    path = tmp_path_factory.mktemp("depth") / "kb.twokeys"
    build_index(SUPPORT_KB / "docs", path, IndexOptions(encoder="test-hash"))
    return open_index(path)


@pytest.mark.parametrize("candidates", [3, 8])
def test_the_fused_top_does_not_change_with_k(kb: Index, candidates: int) -> None:
    queries = _queries()
    assert len(queries) >= 30
    for query in queries:
        top = kb.search(query, k=candidates, candidates=candidates)
        deep = kb.search(query, k=60, candidates=candidates)
        assert [(h.chunk_id, h.score) for h in deep[: len(top)]] == [
            (h.chunk_id, h.score) for h in top
        ], query


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="shared data not available")
@pytest.mark.parametrize("name", ["adi", "medline"])
def test_the_fused_top_ten_documents_do_not_change_with_k(name: str) -> None:
    """As ``twokeys eval`` asks (300 chunks) and as a user asks (10)."""
    root = SHARED_DATA / name
    collection = load_collection(root, "test")
    prepared = ensure_index(collection, default_index_path(root))
    with open_index(prepared.path) as index:
        for text in collection.queries.values():
            if not text.strip():
                continue
            top = [h.chunk_id for h in index.search(text, k=10)]
            deep = [h.chunk_id for h in index.search(text, k=300)]
            assert deep[:10] == top, text


def test_explain_gives_the_returned_hits_each_sensors_own_evidence(kb: Index) -> None:
    """The hybrid explains only the hits it returns (not all its candidates): each one's
    evidence is what the sensor's own explained run says of it, and explaining changes
    neither ranking nor score."""
    for query in _queries():
        hits = kb.search(query, k=10, explain=True)
        plain = kb.search(query, k=10)
        assert [(h.chunk_id, h.score) for h in hits] == [(h.chunk_id, h.score) for h in plain]
        sensors = {
            mode: {
                h.chunk_id: h.evidence[0] for h in kb.search(query, mode=mode, k=100, explain=True)
            }
            for mode in ("bm25", "dense")
        }
        for hit in hits:
            for ev in hit.evidence:
                own = sensors[ev.retriever][hit.chunk_id]
                assert (ev.rank, ev.score, ev.matched_terms) == (
                    own.rank,
                    own.score,
                    own.matched_terms,
                )
            held = {mode for mode, run in sensors.items() if hit.chunk_id in run}
            assert {ev.retriever for ev in hit.evidence} == held
