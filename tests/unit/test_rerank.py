"""The Reranker base class: ordering, ties, top_n, blending, the registry, proximity scores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from twokeys.errors import ConfigError
from twokeys.rerank import get_reranker, register_reranker, register_reranker_family, reorder
from twokeys.rerank.base import Reranker, Scores
from twokeys.rerank.proximity import ProximityReranker, proximity_scores
from twokeys.types import Chunk, Hit, ScoredChunk


class LengthReranker(Reranker):
    """Scores a passage by its number of words: deterministic and obvious."""

    name = "length"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def score(self, query: str, passages: Sequence[str]) -> Scores:
        self.seen.append(list(passages))
        return np.array([len(p.split()) for p in passages], np.float64)


def _run(scores: Sequence[float]) -> list[ScoredChunk]:
    return [ScoredChunk(row=10 + i, score=s, rank=i + 1) for i, s in enumerate(scores)]


def test_rerank_orders_head_by_reranker_score() -> None:
    run = _run([0.9, 0.8, 0.7, 0.6])
    passages = ["a", "a b c", "a b"]  # rows 10, 11, 12
    out = LengthReranker().rerank("q", run, passages, top_n=3)
    assert [s.row for s in out] == [11, 12, 10, 13]
    assert [s.rank for s in out] == [1, 2, 3, 4]
    assert [s.score for s in out[:3]] == [3.0, 2.0, 1.0]
    assert out[3] == ScoredChunk(13, 0.6, 4)  # past top_n: unchanged place and score


def test_ties_keep_the_original_order() -> None:
    run = _run([0.9, 0.8, 0.7])
    out = LengthReranker().rerank("q", run, ["x y", "x", "x y"], top_n=3)
    assert [s.row for s in out] == [10, 12, 11]


def test_top_n_limits_what_is_scored() -> None:
    reranker = LengthReranker()
    run = _run([0.9, 0.8, 0.7])
    out = reranker.rerank("q", run, ["a", "a b", "a b c d e"], top_n=2)
    assert reranker.seen == [["a", "a b"]]
    assert [s.row for s in out] == [11, 10, 12]


def test_top_n_beyond_the_run_and_empty_run() -> None:
    assert [s.row for s in LengthReranker().rerank("q", _run([1.0]), ["a"], top_n=30)] == [10]
    assert LengthReranker().rerank("q", [], [], top_n=5) == []


def test_bad_arguments_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="top_n"):
        LengthReranker().rerank("q", _run([1.0]), ["a"], top_n=0)
    with pytest.raises(ConfigError, match="passages"):
        LengthReranker().rerank("q", _run([1.0, 0.5]), ["a"], top_n=2)
    with pytest.raises(ConfigError, match="blend"):
        reorder(_run([1.0]), np.array([1.0]), blend=1.5)
    with pytest.raises(ConfigError, match="NaN"):
        reorder(_run([1.0]), np.array([np.nan]))


def test_blend_mixes_minmax_normalised_scores() -> None:
    run = _run([1.0, 0.5, 0.0])
    scores = np.array([0.0, 0.0, 10.0])
    # first stage normalised: 1, .5, 0; reranker: 0, 0, 1
    out = reorder(run, scores, blend=0.6)
    assert [s.row for s in out] == [10, 12, 11]  # 0.6 * 1, 0.4 * 1, 0.6 * 0.5
    assert [s.score for s in out] == pytest.approx([0.6, 0.4, 0.3])
    assert [s.row for s in reorder(run, scores, blend=0.3)] == [12, 10, 11]
    assert [s.row for s in reorder(run, scores, blend=1.0)] == [10, 11, 12]


def test_rerank_hits_reorders_hits_by_their_indexed_text() -> None:
    def hit(rank: int, text: str) -> Hit:
        chunk = Chunk(f"d{rank}", 0, text, 0, len(text))
        return Hit(rank, 1.0 / rank, chunk, title="T", path=f"d{rank}")

    hits = [hit(1, "short"), hit(2, "a much longer passage")]
    out = LengthReranker().rerank_hits("q", hits, top_n=2)
    assert [h.doc_id for h in out] == ["d2", "d1"]
    assert [h.rank for h in out] == [1, 2]
    assert out[0].score == 5.0  # "T" title line + four words


def test_registry_names_and_errors() -> None:
    register_reranker("test-length", LengthReranker)
    assert isinstance(get_reranker("test-length"), LengthReranker)
    register_reranker_family("test-family", lambda arg: LengthReranker())
    assert isinstance(get_reranker("test-family:anything"), LengthReranker)
    with pytest.raises(ConfigError, match="unknown reranker 'nope'.*e5"):
        get_reranker("nope")
    with pytest.raises(ConfigError, match="unknown reranker"):
        get_reranker("test-family:")


def test_cross_encoder_refuses_a_name_that_is_not_a_local_directory(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="not a local directory"):
        get_reranker("cross-encoder:cross-encoder/ms-marco-MiniLM-L6-v2")


def test_proximity_scores_by_hand() -> None:
    query = ["solar", "wind"]
    near = ["solar", "wind", "power"]  # distance 1: acc = 1
    far = ["solar", "x", "x", "wind"]  # distance 3: acc = 1/9
    none = ["solar", "x", "x", "x", "x", "x", "wind"]  # distance 6 > window 5
    scores = proximity_scores(query, [near, far, none], [2.0, 1.0], window=5, k1=1.2, b=0.0)
    assert scores[0] == pytest.approx(1.0 * 2.2 * 1 / (1.2 + 1))
    assert scores[1] == pytest.approx(1.0 * 2.2 * (1 / 9) / (1.2 + 1 / 9))
    assert scores[2] == 0.0


def test_proximity_reranker_prefers_adjacent_query_terms() -> None:
    reranker = ProximityReranker(blend=0.0)
    scores = reranker.score(
        "solar wind", ["the solar wind reaches earth", "solar panels and wind farms far apart"]
    )
    assert scores[0] > scores[1]
