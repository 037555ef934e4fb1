"""Lexical confidence and weighted RRF, by hand."""

from __future__ import annotations

import math

import pytest

from twokeys.fusion.confidence import lexical_confidence
from twokeys.fusion.rrf import rrf
from twokeys.types import ScoredChunk


def test_confidence_is_the_matched_share_of_idf_mass() -> None:
    idf = {"zx-4821": 3.0, "error": 1.0, "mean": 0.5}
    q = {"zx-4821": 1.0, "error": 1.0, "mean": 1.0}
    assert lexical_confidence(q, idf, ["zx-4821"]) == pytest.approx(3.0 / 4.5)
    assert lexical_confidence(q, idf, ["error", "mean"]) == pytest.approx(1.5 / 4.5)
    assert lexical_confidence(q, idf, []) == 0.0
    assert lexical_confidence(q, idf, ["zx-4821", "error", "mean", "other"]) == pytest.approx(1.0)
    assert lexical_confidence({"a": 2.0, "b": 1.0}, {"a": 1.0, "b": 1.0}, ["a"]) == pytest.approx(
        2 / 3
    )
    assert lexical_confidence({}, {}, ["a"]) == 0.0


def test_weighted_rrf_hand_computed() -> None:
    bm25 = [ScoredChunk(1, 9.0, 1), ScoredChunk(2, 5.0, 2)]
    dense = [ScoredChunk(3, 0.9, 1), ScoredChunk(1, 0.8, 2)]
    fused = {h.row: h.score for h in rrf({"bm25": bm25, "dense": dense}, 60, {"bm25": 0.25})}
    assert fused[1] == pytest.approx(0.25 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(0.25 / 62)
    assert fused[3] == pytest.approx(1 / 61)
    assert math.isclose(sum(fused.values()), 0.25 / 61 + 1 / 62 + 0.25 / 62 + 1 / 61)
