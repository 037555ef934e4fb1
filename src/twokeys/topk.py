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


def top_k_allowed(
    scores: npt.NDArray[np.floating],
    k: int,
    allowed: npt.NDArray[np.bool_] | None,
    *,
    only_positive: bool = False,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """:func:`top_k` among the rows ``allowed`` marks (all rows when it is None)."""
    if allowed is None:
        return top_k(scores, k, only_positive=only_positive)
    rows = np.flatnonzero(allowed)
    positions, values = top_k(scores[rows], k, only_positive=only_positive)
    return rows[positions].astype(np.int64), values  # rows ascend: ties still break by row


def top_k_entries(
    ids: npt.NDArray[np.integer], scores: npt.NDArray[np.floating], k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """:func:`top_k` over sparse entries: the ``k`` best positive (id, score) pairs.

    Ordered by (-score, id), whatever the order of the entries; gives what
    ``top_k(dense, k, only_positive=True)`` gives for the dense vector holding
    ``scores`` at ``ids`` (and zeros elsewhere). ``ids`` must be distinct.
    """
    if k <= 0 or scores.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    positive = scores > 0
    if not positive.all():
        ids, scores = ids[positive], scores[positive]
    if scores.size > k:
        kth = np.partition(scores, scores.size - k)[scores.size - k]
        keep = scores >= kth
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order].astype(np.int64), scores[order].astype(np.float32)
