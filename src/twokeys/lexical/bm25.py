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

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import chain
from types import ModuleType

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.grouping import groups_by_size

_kernel: ModuleType | None
try:  # the compiled postings (``_kernel.c``); numpy gives the same matrix without it
    from twokeys.lexical import _kernel
except ImportError:  # pragma: no cover - depends on the build
    _kernel = None


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


class TermIds(dict[str, int]):
    """Term -> id in order of first appearance; a new term gets the next id (and is
    appended to ``terms``)."""

    def __init__(self) -> None:
        super().__init__()
        self.terms: list[str] = []

    def __missing__(self, term: str) -> int:
        self[term] = new_id = len(self)
        self.terms.append(term)
        return new_id


# Terms (then postings) handled per numpy step while building or weighting the matrix:
# bounds the temporaries to a few MB whatever the corpus size.
_BLOCK = 1 << 16

# A block of chunk-major postings: term ids, tfs, first chunk row, postings per chunk.
_Block = tuple[npt.NDArray[np.int32], npt.NDArray[np.float32], int, npt.NDArray[np.int64]]

IdBatch = tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]
"""Consecutive chunks' terms as ids into a vocabulary shared by all batches: every term
occurrence in order, and each chunk's number of terms."""


def build_term_matrix(docs_terms: Iterable[Sequence[str]]) -> TermMatrix:
    """Count terms per chunk and lay them out term-major with a sorted vocabulary.

    Chunks are counted a block of terms at a time (term ids and a sort-based count in
    numpy, not a Counter per chunk), giving chunk-major postings a few bytes each. Then
    each block's postings are moved to their term's next free slots (count, then fill),
    so chunk rows stay increasing within each term and no corpus-sized temporary is made.
    """
    term_ids = TermIds()

    def batches() -> Iterator[IdBatch]:
        for group in groups_by_size(docs_terms, len, _BLOCK):
            flat = list(chain.from_iterable(group))
            ids = np.fromiter(map(term_ids.__getitem__, flat), np.int32, len(flat))
            yield ids, np.fromiter(map(len, group), np.int64, len(group))

    return build_term_matrix_from_ids(batches(), term_ids.terms)


def build_term_matrix_from_ids(
    batches: Iterable[IdBatch], terms: Sequence[str], *, compiled: bool = True
) -> TermMatrix:
    """:func:`build_term_matrix` of the chunks of ``batches`` (in order), whose ids name
    ``terms``; ``terms`` is read once the batches are exhausted (it may grow meanwhile).

    With the compiled kernel (``compiled``, and ``_kernel.c`` built) the batches' ids
    are kept as they come (4 bytes a term occurrence) and laid out term-major in two
    passes in C (count each term's chunks, then place each posting); otherwise each
    batch is counted into chunk-major postings in numpy, then placed a block at a time.
    Both give the same matrix.
    """
    kernel = _kernel if compiled else None
    id_blocks: list[npt.NDArray[np.int32]] = []
    per_chunks: list[npt.NDArray[np.int64]] = []
    blocks: list[_Block] = []
    lengths = array("f")
    for ids, per_chunk in batches:
        if kernel is not None:
            id_blocks.append(np.ascontiguousarray(ids, np.int32))
            per_chunks.append(np.ascontiguousarray(per_chunk, np.int64))
        else:
            blocks.append(_count_block(ids, per_chunk, len(lengths)))
        lengths.frombytes(per_chunk.astype(np.float32).tobytes())

    n_terms = len(terms)
    by_text = sorted(range(n_terms), key=terms.__getitem__)
    vocabulary = [terms[i] for i in by_text]
    remap = np.empty(n_terms, np.int32)  # first-appearance id -> sorted-vocabulary id
    remap[np.asarray(by_text, np.int64)] = np.arange(n_terms, dtype=np.int32)
    del by_text
    df = np.zeros(n_terms, np.int64)
    if kernel is not None:
        none_i, none_f = np.empty(0, np.int32), np.empty(0, np.float32)
        kernel.postings(id_blocks, per_chunks, remap, False, df, df, none_i, none_f)
    else:
        for ids, *_ in blocks:
            np.add.at(df, remap[ids], 1)
    indptr = np.zeros(n_terms + 1, np.int64)
    np.cumsum(df, out=indptr[1:])
    del df

    n_postings = int(indptr[-1])
    indices = np.empty(n_postings, np.int32)
    tf = np.empty(n_postings, np.float32)
    next_free = indptr[:-1].copy()
    if kernel is not None:
        kernel.postings(id_blocks, per_chunks, remap, True, next_free, next_free, indices, tf)
    blocks.reverse()
    while blocks:  # in chunk order, each block freed once placed
        ids, counts, first_row, per_chunk = blocks.pop()
        rows = np.repeat(
            np.arange(first_row, first_row + per_chunk.size, dtype=np.int32), per_chunk
        )
        terms_of = remap[ids]
        order = np.argsort(terms_of, kind="stable")  # keeps rows increasing within a term
        sorted_terms = terms_of[order]
        firsts = np.flatnonzero(np.diff(sorted_terms, prepend=-1))  # first entry of each term
        run_lengths = np.diff(firsts, append=sorted_terms.size)
        rank = np.arange(sorted_terms.size) - np.repeat(firsts, run_lengths)
        slots = next_free[sorted_terms] + rank
        indices[slots] = rows[order]
        tf[slots] = counts[order]
        next_free[sorted_terms[firsts]] += run_lengths
    return TermMatrix(
        vocabulary=vocabulary,
        indptr=indptr,
        indices=indices,
        tf=tf,
        lengths=np.array(lengths, np.float32),
    )


def _count_block(
    ids: npt.NDArray[np.int32], lengths: npt.NDArray[np.int64], first_row: int
) -> _Block:
    """The distinct terms of each chunk and their counts, chunk-major (see ``_Block``)."""
    n_chunks = len(lengths)
    rows = np.repeat(np.arange(n_chunks, dtype=np.int64), lengths)
    keys, counts = np.unique((rows << 32) | ids.astype(np.int64), return_counts=True)
    per_chunk = np.bincount(keys >> 32, minlength=n_chunks)
    return (keys & 0xFFFFFFFF).astype(np.int32), counts.astype(np.float32), first_row, per_chunk


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
    weights = np.empty(matrix.tf.size, np.float32)
    indptr = matrix.indptr
    for start in range(0, weights.size, _BLOCK):
        end = min(start + _BLOCK, weights.size)
        # each posting's term: the terms whose postings meet this block, each repeated
        # for its postings inside it (terms without postings repeated zero times)
        first = int(np.searchsorted(indptr, start, side="right")) - 1
        last = int(np.searchsorted(indptr, end - 1, side="right")) - 1
        inside = np.diff(np.minimum(np.maximum(indptr[first : last + 2], start), end))
        terms = np.repeat(np.arange(first, last + 1), inside)
        tf = matrix.tf[start:end].astype(np.float64)
        dl = matrix.lengths[matrix.indices[start:end]].astype(np.float64)
        norm = params.k1 * (1.0 - params.b + params.b * dl / avgdl)
        weights[start:end] = term_idf[terms] * tf / (tf + norm)
    return weights


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
        # rows are distinct within a term; add.at adds in one pass (no gather + scatter)
        if qtf == 1.0:
            np.add.at(scores, indices[start:end], weights[start:end])
        else:
            np.add.at(scores, indices[start:end], np.float32(qtf) * weights[start:end])
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
