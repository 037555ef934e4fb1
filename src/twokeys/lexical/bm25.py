"""BM25 over a term-major sparse matrix: pure array functions.

Scoring follows Lucene's ``BM25Similarity`` (Robertson et al. 1994, "Okapi at TREC-3";
Lucene drops the constant ``(k1 + 1)`` factor, which does not change rankings)::

    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
    w(t, d)     = idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    score(q, d) = sum over query terms t of qtf(t) * w(t, d)

Weights are computed once at index time ("eager" scoring, as in bm25s), so a query is
a sum of a few sparse rows. Unlike Lucene, document lengths are exact, not encoded in
one byte.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError


@dataclass(frozen=True)
class BM25Params:
    """BM25 parameters; defaults are Anserini's BEIR "flat" settings."""

    k1: float = 0.9
    b: float = 0.4

    def __post_init__(self) -> None:
        if not (isinstance(self.k1, int | float) and 0 <= self.k1 <= 10):
            raise ConfigError(f"bm25.k1: must be a number in [0, 10], got {self.k1!r}")
        if not (isinstance(self.b, int | float) and 0 <= self.b <= 1):
            raise ConfigError(f"bm25.b: must be a number in [0, 1], got {self.b!r}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> BM25Params:
        unknown = sorted(set(data) - {"k1", "b"})
        if unknown:
            raise ConfigError(f"bm25: unknown field(s) {', '.join(unknown)}")
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TermMatrix:
    """Term frequencies, term-major CSR: row ``t`` lists the chunks containing term ``t``.

    ``indices[indptr[t]:indptr[t+1]]`` are chunk rows in increasing order and ``tf`` the
    matching frequencies; ``lengths[d]`` is the number of terms of chunk ``d``.
    """

    vocabulary: list[str]
    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int32]
    tf: npt.NDArray[np.float32]
    lengths: npt.NDArray[np.float32]

    @property
    def n_docs(self) -> int:
        return int(self.lengths.size)

    def document_frequencies(self) -> npt.NDArray[np.int64]:
        return np.diff(self.indptr)


def build_term_matrix(docs_terms: Iterable[Sequence[str]]) -> TermMatrix:
    """Count terms per chunk and lay them out term-major with a sorted vocabulary."""
    term_ids: dict[str, int] = {}
    rows: list[npt.NDArray[np.int32]] = []
    cols: list[npt.NDArray[np.int32]] = []
    vals: list[npt.NDArray[np.float32]] = []
    lengths: list[int] = []
    for row, terms in enumerate(docs_terms):
        counts = Counter(terms)
        lengths.append(len(terms))
        if not counts:
            continue
        ids = np.fromiter(
            (term_ids.setdefault(t, len(term_ids)) for t in counts), np.int32, len(counts)
        )
        cols.append(ids)
        rows.append(np.full(len(counts), row, np.int32))
        vals.append(np.fromiter(counts.values(), np.float32, len(counts)))
    vocabulary = sorted(term_ids)
    # remap insertion-order ids to sorted-vocabulary ids
    remap = np.empty(len(term_ids), np.int32)
    for new_id, word in enumerate(vocabulary):
        remap[term_ids[word]] = new_id
    if cols:
        term = remap[np.concatenate(cols)]
        chunk = np.concatenate(rows)
        tf = np.concatenate(vals)
    else:
        term = np.empty(0, np.int32)
        chunk = np.empty(0, np.int32)
        tf = np.empty(0, np.float32)
    order = np.lexsort((chunk, term))
    counts_per_term = np.bincount(term, minlength=len(vocabulary))
    indptr = np.zeros(len(vocabulary) + 1, np.int64)
    np.cumsum(counts_per_term, out=indptr[1:])
    return TermMatrix(
        vocabulary=vocabulary,
        indptr=indptr,
        indices=chunk[order],
        tf=tf[order],
        lengths=np.asarray(lengths, np.float32),
    )


def idf(df: npt.NDArray[np.int64], n_docs: int) -> npt.NDArray[np.float64]:
    """Lucene's BM25 idf, always positive."""
    dfs = df.astype(np.float64)
    return np.log1p((n_docs - dfs + 0.5) / (dfs + 0.5))


def bm25_weights(matrix: TermMatrix, params: BM25Params) -> npt.NDArray[np.float32]:
    """Per-(term, chunk) BM25 weights, aligned with ``matrix.indices``."""
    if matrix.tf.size == 0:
        return np.empty(0, np.float32)
    avgdl = float(matrix.lengths.mean()) or 1.0
    term_idf = idf(matrix.document_frequencies(), matrix.n_docs)
    per_entry_idf = np.repeat(term_idf, np.diff(matrix.indptr))
    tf = matrix.tf.astype(np.float64)
    dl = matrix.lengths[matrix.indices].astype(np.float64)
    norm = params.k1 * (1.0 - params.b + params.b * dl / avgdl)
    return (per_entry_idf * tf / (tf + norm)).astype(np.float32)


def score(
    term_ids: Mapping[int, float],
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    weights: npt.NDArray[np.float32],
    n_docs: int,
) -> npt.NDArray[np.float32]:
    """Scores of every chunk for a query given as {term id: query term weight}."""
    scores = np.zeros(n_docs, np.float32)
    for t, qtf in term_ids.items():
        start, end = int(indptr[t]), int(indptr[t + 1])
        if qtf == 1.0:
            scores[indices[start:end]] += weights[start:end]
        else:
            scores[indices[start:end]] += np.float32(qtf) * weights[start:end]
    return scores


def term_weight(
    t: int,
    row: int,
    indptr: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int32],
    weights: npt.NDArray[np.float32],
) -> float:
    """The weight of term ``t`` in chunk ``row`` (0.0 if absent), by binary search."""
    start, end = int(indptr[t]), int(indptr[t + 1])
    pos = start + int(np.searchsorted(indices[start:end], row))
    if pos < end and int(indices[pos]) == row:
        return float(weights[pos])
    return 0.0
