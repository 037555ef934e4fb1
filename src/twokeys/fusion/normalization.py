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
* ``chance``: (s - c) / (max - c), where ``c`` is the run's chance level, the score a
  chunk unrelated to the query gets: 0 for BM25 (it matches no query term), the
  query's mean cosine over all chunks for the dense model. A score says how far above
  chance a chunk is, as a share of the best chunk's lead. Min-max measures from the
  run's ``depth``-th entry instead, which for a dense run is far above chance: cosines
  are bounded and its top hundred lie in a narrow band, so min-max stretches
  differences of a few hundredths to the whole scale and overstates the dense model's
  gaps (MiniLM on SciFact: top cosine 0.65, hundredth about 0.45, corpus mean 0.11).
  A run whose best entry is no better than chance falls back to min-max.

A run with one entry or with all-equal scores normalises to 1.0 for every entry (each is
as good as the best). ``depth`` limits the statistics (min, max, mean, std) to the run's
first ``depth`` entries, so the top of a fused list does not change with how deep the
caller asked to go; entries below that depth score as the depth-th entry does, as if
they had just made the cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from twokeys.errors import ConfigError
from twokeys.types import ScoredChunk

Normalizer = Callable[[Sequence[ScoredChunk]], list[ScoredChunk]]


def _scores(run: Sequence[ScoredChunk]) -> np.ndarray:
    return np.fromiter((h.score for h in run), np.float64, len(run))


def _rescored(run: Sequence[ScoredChunk], values: np.ndarray) -> list[ScoredChunk]:
    return [ScoredChunk(h.row, v, h.rank) for h, v in zip(run, values.tolist(), strict=True)]


def minmax_scores(s: np.ndarray, depth: int | None = None) -> np.ndarray:
    """:func:`minmax` of a run's scores (float64, in rank order)."""
    ref = s if depth is None else s[: max(1, depth)]
    lo, hi = float(ref.min()), float(ref.max())
    if hi - lo <= 1e-12:
        return np.ones_like(s)
    out: np.ndarray = (np.maximum(s, lo) - lo) / (hi - lo)
    return out


def zscore_scores(s: np.ndarray, depth: int | None = None) -> np.ndarray:
    ref = s if depth is None else s[: max(1, depth)]
    std = float(ref.std())
    if std <= 1e-12:
        return np.ones_like(s)
    out: np.ndarray = (np.maximum(s, ref.min()) - ref.mean()) / std
    return out


def chance_scores(s: np.ndarray, depth: int | None = None, level: float = 0.0) -> np.ndarray:
    ref = s if depth is None else s[: max(1, depth)]
    hi = float(ref.max())
    if hi - level <= 1e-12:
        return minmax_scores(s, depth)
    out: np.ndarray = (np.maximum(s, ref.min()) - level) / (hi - level)
    return out


def dbsf_scores(s: np.ndarray, depth: int | None = None) -> np.ndarray:
    ref = s if depth is None else s[: max(1, depth)]
    mean, std = float(ref.mean()), float(ref.std())
    if std <= 1e-12:
        return np.ones_like(s)
    lo, hi = mean - 3 * std, mean + 3 * std
    out: np.ndarray = (np.maximum(s, ref.min()) - lo) / (hi - lo)
    return out


def normalized_scores(
    name: str, s: np.ndarray, depth: int | None = None, level: float = 0.0
) -> np.ndarray:
    """The named normalisation of a run's scores (float64, in rank order, not empty) as
    an array: what :func:`normalizer`'s function gives the run's entries, without making
    them (the adaptive fusion's fast path)."""
    if name == "chance":
        return chance_scores(s, depth, level)
    try:
        function = _ARRAYS[name]
    except KeyError:
        raise ConfigError(
            f"normalization: {name!r} is not one of {', '.join(NORMALIZERS)}"
        ) from None
    return function(s, depth)


def minmax(run: Sequence[ScoredChunk], depth: int | None = None) -> list[ScoredChunk]:
    return _rescored(run, minmax_scores(_scores(run), depth)) if run else []


def zscore(run: Sequence[ScoredChunk], depth: int | None = None) -> list[ScoredChunk]:
    return _rescored(run, zscore_scores(_scores(run), depth)) if run else []


def chance(
    run: Sequence[ScoredChunk], depth: int | None = None, level: float = 0.0
) -> list[ScoredChunk]:
    """Scores as shares of the top entry's lead over the chance ``level``."""
    return _rescored(run, chance_scores(_scores(run), depth, level)) if run else []


def dbsf(run: Sequence[ScoredChunk], depth: int | None = None) -> list[ScoredChunk]:
    return _rescored(run, dbsf_scores(_scores(run), depth)) if run else []


_ARRAYS: dict[str, Callable[[np.ndarray, int | None], np.ndarray]] = {
    "minmax": minmax_scores,
    "zscore": zscore_scores,
    "dbsf": dbsf_scores,
}

NORMALIZERS: dict[str, Callable[..., list[ScoredChunk]]] = {
    "minmax": minmax,
    "zscore": zscore,
    "dbsf": dbsf,
    "chance": chance,
}


def normalizer(name: str, depth: int | None = None, level: float = 0.0) -> Normalizer:
    """The named normalisation, its statistics taken over the first ``depth`` entries;
    ``level`` is the run's chance level (``chance`` reads it, the others do not)."""
    try:
        function = NORMALIZERS[name]
    except KeyError:
        raise ConfigError(
            f"normalization: {name!r} is not one of {', '.join(NORMALIZERS)}"
        ) from None
    if function is chance:
        return partial(chance, depth=depth, level=level)
    return function if depth is None else partial(function, depth=depth)
