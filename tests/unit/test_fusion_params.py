"""Fusion parameters are checked where they are used (the library), not only by the CLI."""

from __future__ import annotations

import math

import pytest

from twokeys.engine import SearchRequest
from twokeys.errors import ConfigError
from twokeys.fusion.adaptive import AdaptiveParams
from twokeys.fusion.convex import convex_combination
from twokeys.fusion.normalization import minmax
from twokeys.fusion.rrf import check_k, rrf
from twokeys.types import ScoredChunk

RUNS = {
    "bm25": [ScoredChunk(0, 3.0, 1), ScoredChunk(1, 1.0, 2)],
    "dense": [ScoredChunk(1, 0.9, 1), ScoredChunk(2, 0.5, 2)],
}


@pytest.mark.parametrize("k", [-60.0, -1, math.nan, math.inf, -math.inf, True, "60"])
def test_rrf_rejects_a_k_that_is_not_a_finite_non_negative_number(k: object) -> None:
    with pytest.raises(ConfigError, match=r"^rrf\.k: must be a finite number >= 0, got "):
        rrf(RUNS, k)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^rrf_k: "):
        SearchRequest("q", fusion="rrf", rrf_k=k)  # type: ignore[arg-type]


def test_rrf_k_zero_and_integers_are_fine() -> None:
    assert check_k(0) == 0.0
    fused = rrf(RUNS, 0)
    assert [h.row for h in fused] == [1, 0, 2]
    assert fused[0].score == pytest.approx(1 / 2 + 1 / 1)


@pytest.mark.parametrize("weight", [math.nan, math.inf, -0.5])
def test_run_weights_must_be_finite_and_non_negative(weight: float) -> None:
    with pytest.raises(ConfigError, match=r"^weights\.bm25: must be a finite number >= 0"):
        rrf(RUNS, 60, {"bm25": weight})
    with pytest.raises(ConfigError, match=r"^weights\.bm25: must be a finite number >= 0"):
        convex_combination(RUNS, {"bm25": weight, "dense": 0.5}, minmax)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("lexical_weight", math.nan, "lexical_weight: must be finite"),
        ("lexical_weight", 1.5, "lexical_weight: must be in [0, 1]"),
        ("candidates", 0, "candidates: must be"),
        ("rerank_top", -3, "rerank_top: must be"),
    ],
)
def test_search_requests_are_validated(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        SearchRequest("q", **{field: value})  # type: ignore[arg-type]
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("base_lexical_weight", math.nan),
        ("confidence_floor", math.inf),
        ("support_power", math.nan),
        ("support_power", math.inf),
        ("floor_length", math.nan),
        ("floor_length", 0),
    ],
)
def test_adaptive_params_reject_nan_and_infinity(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=rf"^adaptive\.{field}: must be"):
        AdaptiveParams(**{field: value})  # type: ignore[arg-type]
