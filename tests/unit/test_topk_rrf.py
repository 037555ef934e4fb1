"""Deterministic top-k and Reciprocal Rank Fusion with hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from twokeys.errors import ConfigError
from twokeys.fusion.rrf import rrf
from twokeys.topk import top_k, top_k_entries
from twokeys.types import ScoredChunk


def test_top_k_orders_by_score_then_row_even_across_the_cut() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.5, 0.9], np.float32)
    rows, values = top_k(scores, 4)
    assert rows.tolist() == [1, 5, 0, 2]
    assert values.tolist() == pytest.approx([0.9, 0.9, 0.5, 0.5])


def test_top_k_positive_only_and_edge_cases() -> None:
    scores = np.array([0.0, 2.0, 0.0, 1.0], np.float32)
    rows, _ = top_k(scores, 10, only_positive=True)
    assert rows.tolist() == [1, 3]
    assert top_k(scores, 0)[0].size == 0
    assert top_k(np.array([], np.float32), 3)[0].size == 0


def run(*rows: int) -> list[ScoredChunk]:
    return [ScoredChunk(row=r, score=1.0 / (i + 1), rank=i + 1) for i, r in enumerate(rows)]


def test_rrf_hand_computed() -> None:
    fused = rrf({"bm25": run(7, 3, 9), "dense": run(3, 5)}, k=60)
    by_row = {h.row: h.score for h in fused}
    assert by_row[3] == pytest.approx(1 / (60 + 2) + 1 / (60 + 1))
    assert by_row[7] == pytest.approx(1 / (60 + 1))
    assert by_row[5] == pytest.approx(1 / (60 + 2))
    assert by_row[9] == pytest.approx(1 / (60 + 3))
    assert [h.row for h in fused] == [3, 7, 5, 9]
    assert [h.rank for h in fused] == [1, 2, 3, 4]


def test_rrf_missing_document_gets_nothing_and_ties_break_by_row() -> None:
    fused = rrf({"a": run(4), "b": run(2)}, k=10)
    assert [(h.row, h.score) for h in fused] == [
        (2, pytest.approx(1 / 11)),
        (4, pytest.approx(1 / 11)),
    ]


def test_rrf_k_is_used_and_validated() -> None:
    assert rrf({"a": run(1)}, k=0)[0].score == pytest.approx(1.0)
    with pytest.raises(ConfigError):
        rrf({"a": run(1)}, k=-1)


def test_top_k_entries_equals_top_k_of_the_dense_vector() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 30))
        # few distinct values, zeros and negatives: ties at the cut in most vectors
        dense = rng.choice(np.array([-1.0, 0.0, 0.0, 0.5, 1.0, 2.0], np.float32), size=n)
        ids = rng.permutation(n)[: int(rng.integers(0, n + 1))]
        ids = np.union1d(ids, np.flatnonzero(dense > 0))  # every positive entry stored
        rng.shuffle(ids)
        for k in (0, 1, 3, 10, 40):
            want_rows, want_values = top_k(dense, k, only_positive=True)
            rows, values = top_k_entries(ids.astype(np.int32), dense[ids], k)
            assert rows.dtype == want_rows.dtype and values.dtype == want_values.dtype
            assert rows.tolist() == want_rows.tolist()
            assert values.tolist() == want_values.tolist()
