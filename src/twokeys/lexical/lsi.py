"""Latent semantic indexing: a truncated SVD of the weighted term-chunk matrix.

S. Deerwester, S. T. Dumais, G. W. Furnas, T. K. Landauer, R. Harshman, "Indexing by
latent semantic analysis", JASIS 41(6), 1990. The term-chunk matrix ``A`` (terms x
chunks) holds the cosine-normalised tf-idf weights of :mod:`twokeys.lexical.tfidf`
(SMART ``ltc``) and is factored as ``A ~ U_k S_k V_k^T``, keeping the ``k`` largest
singular values (the rank).

* A chunk is the row of ``V_k S_k`` (Deerwester's "rows of DS"), L2-normalised and
  kept in float64 (a float32 product's last bits depend on the BLAS kernel and the
  memory alignment, and could reorder chunks of nearly equal cosine).
* A query ``q`` (``ltc`` weights over the index's terms) is folded in as a
  pseudo-document, ``q_k = S_k^-1 U_k^T q`` (Deerwester's ``D_q = X_q^T T S^-1``), and,
  like every document, compared in the scaled space: ``cosine(q_k S_k, row of V_k S_k)``.

The SVD is exact (LAPACK) for a small matrix and otherwise ARPACK's Lanczos
(``scipy.sparse.linalg.svds``) from a seeded starting vector; singular vectors get a
fixed sign (largest component of each ``u`` positive), so the factors are the same
run after run. The rank is clipped to ``min(A.shape)`` (dense) or ``min(A.shape) - 1``
(ARPACK needs ``k < min(shape)``); components with a zero singular value are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse  # type: ignore[import-untyped, unused-ignore]
import scipy.sparse.linalg  # type: ignore[import-untyped, unused-ignore]

from twokeys.errors import ConfigError
from twokeys.lexical.bm25 import TermMatrix
from twokeys.lexical.tfidf import tfidf_weights

DEFAULT_RANK = 200
MAX_RANK = 10_000
DENSE_LIMIT = 4_000_000  # matrix cells; up to this a dense LAPACK SVD is exact and quick

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LsiParams:
    """The number of latent dimensions kept, and the seed of ARPACK's starting vector."""

    rank: int = DEFAULT_RANK
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.rank, bool) or not isinstance(self.rank, int):
            raise ConfigError(f"lsi.rank: must be an integer, got {self.rank!r}")
        if not 1 <= self.rank <= MAX_RANK:
            raise ConfigError(f"lsi.rank: must be in [1, {MAX_RANK}], got {self.rank}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"lsi.seed: must be an integer >= 0, got {self.seed!r}")


@dataclass(frozen=True, eq=False)
class LsiModel:
    """The factors a search needs: ``U_k``, the diagonal of ``S_k`` and the chunk vectors."""

    term_vectors: npt.NDArray[np.float32]  # U_k, (terms, k)
    singular_values: FloatArray  # (k,), decreasing
    chunk_vectors: FloatArray  # rows of V_k S_k, L2-normalised, (chunks, k)

    @property
    def rank(self) -> int:
        return int(self.singular_values.size)

    def to_arrays(self) -> dict[str, npt.NDArray[np.floating]]:
        return {"u": self.term_vectors, "s": self.singular_values, "chunks": self.chunk_vectors}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> LsiModel:
        u, s, chunks = arrays["u"], arrays["s"], arrays["chunks"]
        if u.ndim != 2 or s.ndim != 1 or chunks.ndim != 2 or not u.shape[1] == s.size:
            raise ValueError("lsi: inconsistent factor shapes")
        if chunks.shape[1] != s.size or chunks.dtype != np.float64 or s.dtype != np.float64:
            raise ValueError("lsi: inconsistent factor shapes or types")
        return cls(u, s, chunks)


def weighted_matrix(matrix: TermMatrix) -> scipy.sparse.csr_array:
    """The (terms x chunks) matrix of ``ltc`` weights; the term-major CSR is its layout."""
    weights = tfidf_weights(matrix).astype(np.float64)
    shape = (len(matrix.vocabulary), matrix.n_docs)
    return scipy.sparse.csr_array(
        (weights, np.asarray(matrix.indices), np.asarray(matrix.indptr)), shape=shape
    )


def truncated_svd(
    a: scipy.sparse.csr_array, rank: int, *, seed: int = 0
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``U_k, s_k, V_k^T`` for the ``rank`` largest singular values, in decreasing order."""
    m, n = a.shape
    smallest = min(m, n)
    if smallest == 0:
        return np.zeros((m, 0)), np.zeros(0), np.zeros((0, n))
    if m * n <= DENSE_LIMIT:
        k = min(rank, smallest)
        u, s, vt = np.linalg.svd(a.toarray(), full_matrices=False)
        u, s, vt = u[:, :k], s[:k], vt[:k]
    else:
        k = min(rank, smallest - 1)
        v0 = np.random.default_rng(seed).standard_normal(smallest)
        u, s, vt = scipy.sparse.linalg.svds(a, k=k, v0=v0, solver="arpack")
        order = np.argsort(-s, kind="stable")
        u, s, vt = u[:, order], s[order], vt[order]
    keep = s > (s[0] if s.size else 0.0) * max(m, n) * np.finfo(np.float64).eps
    u, s, vt = u[:, keep], s[keep], vt[keep]
    signs = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(u.shape[1])])
    signs[signs == 0] = 1.0
    return u * signs, s, vt * signs[:, None]


def fit(matrix: TermMatrix, params: LsiParams) -> LsiModel:
    """Factor ``matrix``'s ``ltc`` weights and keep what folding and ranking need."""
    u, s, vt = truncated_svd(weighted_matrix(matrix), params.rank, seed=params.seed)
    chunks = vt.T * s
    norms = np.linalg.norm(chunks, axis=1, keepdims=True)
    chunks = np.divide(chunks, norms, out=np.zeros_like(chunks), where=norms > 0)
    return LsiModel(
        term_vectors=u.astype(np.float32),
        singular_values=s,
        chunk_vectors=chunks,
    )


def fold_query(model: LsiModel, weights: Mapping[int, float]) -> FloatArray:
    """The query's pseudo-document ``q_k = S_k^-1 U_k^T q`` from {term id: weight}."""
    q = np.zeros(model.rank)
    for t, w in weights.items():
        q += w * model.term_vectors[t].astype(np.float64)
    out: FloatArray = q / model.singular_values
    return out


def cosine_scores(model: LsiModel, folded: FloatArray) -> FloatArray:
    """Cosine of the folded query with every chunk, both scaled by ``S_k``."""
    scaled = folded * model.singular_values
    norm = float(np.linalg.norm(scaled))
    if norm == 0:
        return np.zeros(model.chunk_vectors.shape[0])
    scores: FloatArray = model.chunk_vectors @ (scaled / norm)
    return scores
