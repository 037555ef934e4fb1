"""Exact cosine search: one matrix-vector product over normalised embeddings."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from twokeys.dense.base import VectorIndex
from twokeys.errors import IndexFormatError
from twokeys.lexical.index import RUN_SLOTS, slotted_values
from twokeys.topk import top_k_allowed
from twokeys.types import RowMask, ScoredChunk

#: float16 rows widened at a time: 1,024 x 384 dims is a 1.5 MB buffer that stays in cache.
BLOCK_ROWS = 1024
#: the mean vector (the dense chance level's) is taken over every row up to this many, so
#: it is the one PostgreSQL's avg() gives and both backends fuse alike; above it, over
#: MEAN_ROWS evenly spaced rows. The level then errs well under a thousandth of a cosine
#: (a unit vector's components spread about 0.05 in 384 dimensions; the mean of 8,192 rows
#: is off by about 0.05 / 90 along any query), and the first hybrid search of a
#: million-row index reads 8,192 of its vectors, not 65,536 across the whole file (0.03 s
#: against 0.6 s from a cold page cache here).
EXACT_MEAN_ROWS = 65_536
MEAN_ROWS = 8_192

# A float16's bits shifted left by 13 land its exponent and mantissa in a float32's
# fields, read as the value times 2**-112 (the two formats' exponent biases, 15 and 127,
# differ by 112); subnormals come out right too. Widened as int16 -> int32, the sign
# is smeared over bits 28-31: the mask keeps bit 31 and clears the three exponent bits.
_F16_SHIFT = 13
_F16_MASK = np.int32(-0x70000001)  # 0x8FFFFFFF
_F16_UNBIAS = np.float32(2.0**112)


def cosine_scores(
    embeddings: npt.NDArray[np.floating], query: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """``embeddings @ query`` in float32 arithmetic, whatever the storage type.

    numpy has no BLAS kernel for float16 and converts float16 to float32 one element at
    a time on CPUs without AVX-512, so a plain float16 product is 17x slower than
    float32 (``benchmarks/vector_search.py``). Here float16 rows are widened a block at
    a time by integer shifts, and the 2**112 rescaling is folded into the query, so
    the scores equal those of ``embeddings.astype(np.float32) @ query`` bit for bit at
    about 1.6x float32's time, with memory bounded by one block.
    """
    q = np.asarray(query, np.float32)
    if embeddings.dtype == np.float32:
        return np.asarray(embeddings @ q, np.float32)
    n = embeddings.shape[0]
    scores = np.empty(n, np.float32)
    if embeddings.dtype == np.float16:
        bits = np.asarray(embeddings).view(np.int16)
        buffer = np.empty((min(n, BLOCK_ROWS), embeddings.shape[1]), np.int32)
        q_scaled = q * _F16_UNBIAS
        for start in range(0, n, BLOCK_ROWS):
            block = bits[start : start + BLOCK_ROWS]
            wide = buffer[: len(block)]
            np.left_shift(block, _F16_SHIFT, out=wide, dtype=np.int32)
            np.bitwise_and(wide, _F16_MASK, out=wide)
            np.matmul(wide.view(np.float32), q_scaled, out=scores[start : start + len(block)])
        return scores
    for start in range(0, n, BLOCK_ROWS):
        block = np.asarray(embeddings[start : start + BLOCK_ROWS], np.float32)
        np.matmul(block, q, out=scores[start : start + len(block)])
    return scores


def mean_vector(embeddings: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """The mean of the rows (of ``MEAN_ROWS`` evenly spaced ones in an array of more than
    ``EXACT_MEAN_ROWS``), summed in float64 a block at a time."""
    n, dim = embeddings.shape
    if n == 0:
        return np.zeros(dim, np.float32)
    rows = None if n <= EXACT_MEAN_ROWS else np.linspace(0, n - 1, MEAN_ROWS).astype(np.int64)
    total = np.zeros(dim, np.float64)
    count = n if rows is None else len(rows)
    for start in range(0, count, BLOCK_ROWS):
        if rows is None:
            block = embeddings[start : start + BLOCK_ROWS]
        else:
            block = embeddings[rows[start : start + BLOCK_ROWS]]
        total += np.asarray(block, np.float64).sum(axis=0)
    return (total / count).astype(np.float32)


class ExactVectorIndex(VectorIndex):
    """Brute-force top-k over an (n, dim) array of L2-normalised rows (float32 or float16)."""

    def __init__(self, embeddings: npt.NDArray[np.floating], source: str = "vectors") -> None:
        self._embeddings = embeddings
        self._source = source  # named in the error a damaged (non-finite) row raises
        self._mean: npt.NDArray[np.float32] | None = None  # computed at the first use

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, allowed: RowMask | None = None
    ) -> list[ScoredChunk]:
        if self._embeddings.shape[0] == 0:
            return []
        scores = cosine_scores(self._embeddings, query)
        if np.isnan(scores).any() and np.isfinite(query).all():  # one pass over n floats
            bad = np.flatnonzero(np.isnan(scores))[:5].tolist()
            raise IndexFormatError(
                f"{self._source}: rows {bad} are not finite vectors; run 'twokeys check'"
            )
        rows, values = top_k_allowed(scores, k, allowed)
        # tolist(): Python ints and floats of the same values, made in one call each; the
        # entries made in one call too (a hybrid search fuses 100 of them)
        ranks = list(range(1, len(rows) + 1))
        return slotted_values(ScoredChunk, RUN_SLOTS, (rows.tolist(), values.tolist(), ranks))

    def similarity(self, query: npt.NDArray[np.float32], row: int) -> float:
        return float(np.asarray(self._embeddings[row], np.float32) @ query)

    def similarities(
        self, query: npt.NDArray[np.float32], rows: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64]:
        block = np.asarray(self._embeddings[np.asarray(rows, np.int64)], np.float32)
        return (block @ np.asarray(query, np.float32)).astype(np.float64)

    def mean_similarity(self, query: npt.NDArray[np.float32]) -> float:
        if self._mean is None:  # two threads may both compute it: the same value
            self._mean = mean_vector(self._embeddings)
        return float(self._mean @ np.asarray(query, np.float32))
