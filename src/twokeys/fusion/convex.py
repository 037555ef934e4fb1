"""Convex combination of normalised scores.

Bruch, Gai and Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM
TOIS 2023::

    fused(d) = sum over runs r of w_r * norm_r(d),   sum of w_r = 1

A chunk absent from a run scores as that run's lowest normalised entry: the run ranked
it below everything it kept, and the normalisations give entries below their ``depth``
that same floor, so a chunk's fused score does not depend on how deep the runs went.
With min-max the floor is 0 (nothing), as it is for a run whose entries all normalise
alike (one hit, or ties). With z-score it is negative: scoring an absent chunk 0 put a
chunk the dense model never retrieved above every retrieved one below the mean. With
DBSF, scoring it 0 made the fused top change with the depth asked for (SciFact train
nDCG@10 0.7350 at 300 chunks, 0.7324 at 100). With the floor, z-score and DBSF rank
alike (DBSF is z-score / 6 + 1/2) unless one run's scores are all equal (both give them
1.0). With chance-level scaling it is the run's depth-th entry's share of the top's lead
over chance. Ties are broken by row.

Each run may have its own normalisation (``normalize`` maps run names to normalisers):
the chance-level scaling measures each run from its own sensor's chance level.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.fusion.normalization import Normalizer
from twokeys.fusion.rrf import check_weight
from twokeys.types import ScoredChunk


def convex_combination(
    runs: Mapping[str, Sequence[ScoredChunk]],
    weights: Mapping[str, float],
    normalize: Normalizer | Mapping[str, Normalizer],
) -> list[ScoredChunk]:
    """Fuse runs by a weighted sum of their normalised scores (weights sum to 1);
    ``normalize`` is one normaliser for every run or one per run name."""
    if set(weights) != set(runs):
        raise ConfigError(f"convex: weights {sorted(weights)} must name the runs {sorted(runs)}")
    total = sum(check_weight(name, w) for name, w in weights.items())
    if total <= 0:
        raise ConfigError("convex: weights must be >= 0 and not all zero")
    if isinstance(normalize, Mapping):
        if set(normalize) != set(runs):
            raise ConfigError(
                f"convex: normalisers {sorted(normalize)} must name the runs {sorted(runs)}"
            )
        normalized = {name: normalize[name](runs[name]) for name in sorted(runs)}
    else:
        normalized = {name: normalize(runs[name]) for name in sorted(runs)}
    columns = {
        name: (
            np.fromiter((hit.row for hit in run), np.int64, len(run)),
            np.fromiter((hit.score for hit in run), np.float64, len(run)),
        )
        for name, run in normalized.items()
    }
    rows, fused = combine(columns, {name: weights[name] / total for name in columns})
    order = np.lexsort((rows, -fused))  # by score, descending; ties by row
    return [
        ScoredChunk(row, score, i + 1)
        for i, (row, score) in enumerate(
            zip(rows[order].tolist(), fused[order].tolist(), strict=True)
        )
    ]


def combine(
    columns: Mapping[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]],
    weights: Mapping[str, float],
    complete: Collection[str] = (),
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The union of the runs' rows (ascending) and each one's fused score: the sum, run
    by run in ``columns``' order, of ``weights[name] * score`` (the run's floor where it
    lacks the row); ``columns[name]``: a normalised run's rows and scores.

    The floor of a cut run is its lowest score: a row it lacks may have scored just
    under its last entry. A run named in ``complete`` holds every row that scores at all
    (BM25 returning fewer matches than it was asked for): a row it lacks scored nothing
    there, so its floor is 0 (or its lowest score, where a normalisation such as the
    z-score puts matches below 0). Flooring such a run at its lowest score gave every
    row of the other run nearly the top's share when the run held two or three near-equal
    matches (a rare name in two chunks of one page), which buried the only pages that
    hold the name.

    Vectorised, with the same float operations in the same order per row as a loop
    adding ``w * score`` to 0.0 run after run (numpy's float64 arithmetic rounds as
    Python's does), so the sums are those of the plain loop."""
    parts = [r for r, _ in columns.values()]
    rows = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
    fused = np.zeros(len(rows), np.float64)
    for name, (run_rows, scores) in columns.items():  # a fixed order of float additions
        w = weights[name]
        if not len(scores) or w == 0:
            continue
        floor = float(scores.min())
        if floor == float(scores.max()):  # all as good as the best: absent is below them
            floor = 0.0
        elif name in complete:  # absent scored nothing: at most 0, below every match
            floor = min(0.0, floor)
        column = np.full(len(rows), floor, np.float64)
        column[np.searchsorted(rows, run_rows)] = scores
        fused += w * column
    return rows, fused
