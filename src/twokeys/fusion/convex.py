"""Convex combination of normalised scores.

Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM
TOIS 2023::

    fused(d) = sum over runs r of w_r * norm_r(d),   sum of w_r = 1

A chunk absent from a run gets nothing from that run. Ties are broken by row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from twokeys.errors import ConfigError
from twokeys.fusion.normalization import Normalizer
from twokeys.fusion.rrf import check_weight
from twokeys.types import ScoredChunk


def convex_combination(
    runs: Mapping[str, Sequence[ScoredChunk]],
    weights: Mapping[str, float],
    normalize: Normalizer,
) -> list[ScoredChunk]:
    """Fuse runs by a weighted sum of their normalised scores (weights sum to 1)."""
    if set(weights) != set(runs):
        raise ConfigError(f"convex: weights {sorted(weights)} must name the runs {sorted(runs)}")
    total = sum(check_weight(name, w) for name, w in weights.items())
    if total <= 0:
        raise ConfigError("convex: weights must be >= 0 and not all zero")
    fused: dict[int, float] = {}
    for name in sorted(runs):  # a fixed order of float additions: the same sums for any order
        run = runs[name]
        w = weights[name] / total
        for hit in normalize(run):
            fused[hit.row] = fused.get(hit.row, 0.0) + w * hit.score
    ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [ScoredChunk(row=row, score=score, rank=i + 1) for i, (row, score) in enumerate(ordered)]
