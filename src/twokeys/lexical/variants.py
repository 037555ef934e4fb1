"""BM25+ and BM25L: two lower-bounded BM25 variants, as per-posting weight arrays.

Both come from Lv & Zhai's observation that BM25's length normalisation lets a long
document that contains a query term score no better than a short one that lacks it.

**BM25+** (Y. Lv, C. Zhai, "Lower-bounding term frequency normalization", CIKM 2011)
adds a constant ``delta`` to the normalised term-frequency part of every matching term::

    w(t, d) = idf(t) * ((k1 + 1) * tf / (tf + k1 * (1 - b + b * |d| / avgdl)) + delta)
    idf(t)  = ln((N + 1) / df(t))

**BM25L** (Y. Lv, C. Zhai, "When documents are very long, BM25 fails!", SIGIR 2011)
shifts the length-normalised frequency ``c = tf / (1 - b + b * |d| / avgdl)`` by
``delta`` before saturating it::

    w(t, d) = idf(t) * (k1 + 1) * (c + delta) / (k1 + c + delta)
    idf(t)  = ln((N + 1) / (df(t) + 0.5))

The idf is each paper's own. BM25L's is exactly Lucene's ``ln(1 + (N - df + 0.5) /
(df + 0.5))`` from :func:`twokeys.lexical.bm25.idf`, so that function is used. BM25+'s
``ln((N + 1) / df)`` differs; it is kept so that "BM25+" means the published model
(both are always positive, which is what Lucene's form is for). Unlike Lucene's BM25 the
``(k1 + 1)`` factor is kept: with BM25+ it sets the scale ``delta`` is added to, so
dropping it would change rankings.

A query scores as in BM25: ``sum over query terms of qtf(t) * w(t, d)``
(:func:`twokeys.lexical.bm25.score`), only over the chunks containing ``t``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.lexical.bm25 import TermMatrix, idf


def _check(field: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(f"{field}: must be a number in [{low:g}, {high:g}], got {value!r}")


@dataclass(frozen=True)
class BM25PlusParams:
    """BM25+ parameters: ``k1`` and ``b`` as in BM25, ``delta`` the lower bound (paper: 1.0)."""

    k1: float = 0.9
    b: float = 0.4
    delta: float = 1.0

    def __post_init__(self) -> None:
        _check("bm25+.k1", self.k1, 0, 10)
        _check("bm25+.b", self.b, 0, 1)
        _check("bm25+.delta", self.delta, 0, 10)


@dataclass(frozen=True)
class BM25LParams:
    """BM25L parameters: ``k1`` and ``b`` as in BM25, ``delta`` the shift (paper: 0.5)."""

    k1: float = 0.9
    b: float = 0.4
    delta: float = 0.5

    def __post_init__(self) -> None:
        _check("bm25l.k1", self.k1, 0, 10)
        _check("bm25l.b", self.b, 0, 1)
        _check("bm25l.delta", self.delta, 0, 10)


def _length_norm(matrix: TermMatrix, b: float) -> npt.NDArray[np.float64]:
    """``1 - b + b * |d| / avgdl`` for the chunk of every posting."""
    avgdl = float(matrix.lengths.mean()) or 1.0
    dl = matrix.lengths[matrix.indices].astype(np.float64)
    return 1.0 - b + b * dl / avgdl


def _per_posting(values: npt.NDArray[np.float64], matrix: TermMatrix) -> npt.NDArray[np.float64]:
    return np.repeat(values, np.diff(matrix.indptr))


def bm25plus_idf(df: npt.NDArray[np.int64], n_docs: int) -> npt.NDArray[np.float64]:
    """BM25+'s idf ``ln((N + 1) / df)`` (terms with ``df = 0`` get 0: they match nothing)."""
    dfs = df.astype(np.float64)
    with np.errstate(divide="ignore"):
        out = np.log((n_docs + 1.0) / dfs)
    return np.where(dfs > 0, out, 0.0)


def bm25plus_weights(matrix: TermMatrix, params: BM25PlusParams) -> npt.NDArray[np.float32]:
    """Per-(term, chunk) BM25+ weights, aligned with ``matrix.indices``."""
    if matrix.tf.size == 0:
        return np.empty(0, np.float32)
    term_idf = _per_posting(bm25plus_idf(matrix.document_frequencies(), matrix.n_docs), matrix)
    tf = matrix.tf.astype(np.float64)
    norm = params.k1 * _length_norm(matrix, params.b)
    tf_part = (params.k1 + 1.0) * tf / (tf + norm) + params.delta
    return (term_idf * tf_part).astype(np.float32)


def bm25l_weights(matrix: TermMatrix, params: BM25LParams) -> npt.NDArray[np.float32]:
    """Per-(term, chunk) BM25L weights, aligned with ``matrix.indices``."""
    if matrix.tf.size == 0:
        return np.empty(0, np.float32)
    term_idf = _per_posting(idf(matrix.document_frequencies(), matrix.n_docs), matrix)
    shifted = matrix.tf.astype(np.float64) / _length_norm(matrix, params.b) + params.delta
    tf_part = (params.k1 + 1.0) * shifted / (params.k1 + shifted)
    return (term_idf * tf_part).astype(np.float32)
