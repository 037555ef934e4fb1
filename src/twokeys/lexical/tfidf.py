"""The vector space model with tf-idf weights and cosine similarity.

G. Salton, A. Wong, C. S. Yang, "A vector space model for automatic indexing",
Communications of the ACM 18(11), 1975. Weighting is SMART ``ltc`` for both sides
(Salton & Buckley, "Term-weighting approaches in automatic text retrieval", 1988)::

    w(t, d) = (1 + ln tf(t, d)) * ln(N / df(t))          l: log tf, t: idf
    w(t, d) = w(t, d) / sqrt(sum over t' of w(t', d)^2)  c: cosine normalisation

A query is weighted the same way over the terms the index knows (a term no chunk
contains has no idf and is ignored), so ``cosine(q, d) = sum_t w(t, q) * w(t, d)``: the
sparse dot product :func:`twokeys.lexical.bm25.score`. A term found in every chunk has
idf 0 and contributes nothing; a chunk whose weights are all 0 stays all 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from twokeys.lexical.bm25 import TermMatrix


def tfidf_idf(df: npt.NDArray[np.int64], n_docs: int) -> npt.NDArray[np.float64]:
    """``ln(N / df)``; 0 for ``df = 0`` (such a term matches nothing)."""
    dfs = df.astype(np.float64)
    with np.errstate(divide="ignore"):
        out = np.log(n_docs / dfs)
    return np.where(dfs > 0, out, 0.0)


def chunk_norms(matrix: TermMatrix, weights: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """The L2 norm of every chunk's weight vector (``weights`` aligned with ``indices``)."""
    squares = np.square(weights.astype(np.float64))
    return np.sqrt(np.bincount(matrix.indices, weights=squares, minlength=matrix.n_docs))


def tfidf_weights(matrix: TermMatrix, *, normalize: bool = True) -> npt.NDArray[np.float32]:
    """Per-(term, chunk) ``ltc`` weights aligned with ``matrix.indices`` (``ltn`` if not
    ``normalize``)."""
    if matrix.tf.size == 0:
        return np.empty(0, np.float32)
    term_idf = tfidf_idf(matrix.document_frequencies(), matrix.n_docs)
    weights = (1.0 + np.log(matrix.tf.astype(np.float64))) * np.repeat(
        term_idf, np.diff(matrix.indptr)
    )
    if normalize:
        norms = chunk_norms(matrix, weights)[matrix.indices]
        weights = np.divide(weights, norms, out=np.zeros_like(weights), where=norms > 0)
    return weights.astype(np.float32)


def query_weights(
    counts: Mapping[int, int], df: npt.NDArray[np.int64], n_docs: int
) -> dict[int, float]:
    """``ltc`` weights of a query given as {term id: count}; terms with weight 0 are left out."""
    raw = {}
    for t, count in counts.items():
        d = int(df[t])
        if count > 0 and d > 0:
            w = (1.0 + math.log(count)) * math.log(n_docs / d)
            if w > 0:
                raw[t] = w
    norm = math.sqrt(sum(w * w for w in raw.values()))
    return {t: w / norm for t, w in sorted(raw.items())} if norm > 0 else {}
