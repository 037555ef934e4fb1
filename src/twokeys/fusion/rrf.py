"""Reciprocal Rank Fusion.

Cormack, Clarke and Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods", SIGIR 2009::

    RRF(d) = sum over runs r containing d of 1 / (k + rank_r(d))

with ``k = 60`` as in the paper. A chunk absent from a run gets nothing from it (it is
not given the run's minimum score). Ties are broken by row, so output is deterministic.
Weighted RRF multiplies each run's terms by a per-run weight (1.0 when not given).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from twokeys.errors import ConfigError
from twokeys.types import ScoredChunk

DEFAULT_K = 60.0


def check_k(k: float) -> float:
    """``k`` if it is a usable RRF constant (finite, >= 0), else a :class:`ConfigError`."""
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k < 0:
        raise ConfigError(f"rrf.k: must be a finite number >= 0, got {k!r}")
    return float(k)


def check_weight(name: str, weight: float) -> float:
    """A run weight if it is finite and >= 0, else a :class:`ConfigError` naming the run."""
    valid = isinstance(weight, int | float) and not isinstance(weight, bool)
    if not valid or not math.isfinite(weight) or weight < 0:
        raise ConfigError(f"weights.{name}: must be a finite number >= 0, got {weight!r}")
    return float(weight)


def rrf_term(rank: int, k: float = DEFAULT_K) -> float:
    """One run's contribution for a 1-based ``rank``."""
    return 1.0 / (k + rank)


def rrf(
    runs: Mapping[str, Sequence[ScoredChunk]],
    k: float = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
) -> list[ScoredChunk]:
    """Fuse named runs (each ranked, ranks 1-based) into one ranked run."""
    k = check_k(k)
    fused: dict[int, float] = {}
    for name in sorted(runs):  # a fixed order of float additions: the same sums for any order
        run = runs[name]
        weight = 1.0 if weights is None else check_weight(name, weights.get(name, 1.0))
        for hit in run:
            fused[hit.row] = fused.get(hit.row, 0.0) + weight * rrf_term(hit.rank, k)
    ordered = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return [ScoredChunk(row=row, score=score, rank=i + 1) for i, (row, score) in enumerate(ordered)]
