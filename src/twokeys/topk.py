"""Exact, deterministic top-k selection over a dense score vector."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def top_k(
    scores: npt.NDArray[np.floating], k: int, *, only_positive: bool = False
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Rows and scores of the ``k`` best entries, ordered by (-score, row).

    Rows are stored in (document id, position) order, so ties break by chunk identity.
    ``argpartition`` alone leaves ties at the cut in arbitrary order; here every entry
    tied with the k-th score is kept until the final stable ordering.
    """
    if k <= 0 or scores.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    if only_positive:
        candidates = np.flatnonzero(scores > 0)
        values = scores[candidates]
    else:
        candidates = np.arange(scores.size)
        values = scores
    if candidates.size > k:
        kth = np.partition(values, candidates.size - k)[candidates.size - k]
        keep = values >= kth
        candidates = candidates[keep]
        values = values[keep]
    order = np.lexsort((candidates, -values))[:k]
    return candidates[order].astype(np.int64), values[order].astype(np.float32)
