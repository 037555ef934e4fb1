"""Score normalisations that put runs from different retrievers on one scale.

Each function maps a run's raw scores (one retriever, one query) to normalised scores,
keeping rows and ranks. They are the "rescore each run" half of score fusion; the
aggregation is :func:`twokeys.fusion.convex.convex_combination`.

* ``minmax``: (s - min) / (max - min) (Lee, "Analyses of multiple evidence
  combination", SIGIR 1997).
* ``zscore``: (s - mean) / std (Montague & Aslam, "Relevance score normalization for
  metasearch", CIKM 2001).
* ``dbsf``: distribution-based score fusion: min-max with the bounds mean - 3 std and
  mean + 3 std instead of the observed extremes, so one outlier does not squash the rest
  (Mazzeschi, "Distribution-based score fusion", 2023; Qdrant's DBSF).

A run with one entry or with all-equal scores normalises to 1.0 for every entry (each is
as good as the best).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from twokeys.errors import ConfigError
from twokeys.types import ScoredChunk

Normalizer = Callable[[Sequence[ScoredChunk]], list[ScoredChunk]]


def _rescored(run: Sequence[ScoredChunk], values: np.ndarray) -> list[ScoredChunk]:
    return [ScoredChunk(h.row, float(v), h.rank) for h, v in zip(run, values, strict=True)]


def minmax(run: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    if not run:
        return []
    s = np.array([h.score for h in run], np.float64)
    lo, hi = float(s.min()), float(s.max())
    if hi - lo <= 1e-12:
        return _rescored(run, np.ones_like(s))
    return _rescored(run, (s - lo) / (hi - lo))


def zscore(run: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    if not run:
        return []
    s = np.array([h.score for h in run], np.float64)
    std = float(s.std())
    if std <= 1e-12:
        return _rescored(run, np.ones_like(s))
    return _rescored(run, (s - s.mean()) / std)


def dbsf(run: Sequence[ScoredChunk]) -> list[ScoredChunk]:
    if not run:
        return []
    s = np.array([h.score for h in run], np.float64)
    mean, std = float(s.mean()), float(s.std())
    if std <= 1e-12:
        return _rescored(run, np.ones_like(s))
    lo, hi = mean - 3 * std, mean + 3 * std
    return _rescored(run, (s - lo) / (hi - lo))


NORMALIZERS: dict[str, Normalizer] = {"minmax": minmax, "zscore": zscore, "dbsf": dbsf}


def normalizer(name: str) -> Normalizer:
    try:
        return NORMALIZERS[name]
    except KeyError:
        raise ConfigError(
            f"normalization: {name!r} is not one of {', '.join(NORMALIZERS)}"
        ) from None
