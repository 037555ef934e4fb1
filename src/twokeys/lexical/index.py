"""The embedded lexical index: BM25 over memory-mapped term-major arrays."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from twokeys.lexical import bm25
from twokeys.store.base import LexicalIndex
from twokeys.topk import top_k
from twokeys.types import ScoredChunk


class ArrayLexicalIndex(LexicalIndex):
    """Exact BM25 top-k from precomputed weights (see :mod:`twokeys.lexical.bm25`)."""

    def __init__(
        self,
        vocabulary: Mapping[str, int],
        indptr: npt.NDArray[np.int64],
        indices: npt.NDArray[np.int32],
        weights: npt.NDArray[np.float32],
        n_docs: int,
    ) -> None:
        self._vocabulary = vocabulary
        self._indptr = indptr
        self._indices = indices
        self._weights = weights
        self._n_docs = n_docs

    def _query_ids(self, terms: Sequence[str]) -> dict[int, float]:
        counts = Counter(t for t in terms if t in self._vocabulary)
        return {self._vocabulary[t]: float(c) for t, c in sorted(counts.items())}

    def search(self, terms: Sequence[str], k: int) -> list[ScoredChunk]:
        ids = self._query_ids(terms)
        if not ids:
            return []
        scores = bm25.score(ids, self._indptr, self._indices, self._weights, self._n_docs)
        rows, values = top_k(scores, k, only_positive=True)
        return [
            ScoredChunk(row=int(r), score=float(s), rank=i + 1)
            for i, (r, s) in enumerate(zip(rows, values, strict=True))
        ]

    def explain(self, terms: Sequence[str], row: int) -> tuple[tuple[str, float], ...]:
        counts = Counter(t for t in terms if t in self._vocabulary)
        out: list[tuple[str, float]] = []
        for term, qtf in counts.items():
            w = bm25.term_weight(
                self._vocabulary[term], row, self._indptr, self._indices, self._weights
            )
            if w > 0:
                out.append((term, qtf * w))
        return tuple(sorted(out, key=lambda tw: (-tw[1], tw[0])))

    def has_term(self, term: str) -> bool:
        return term in self._vocabulary

    def idf(self, terms: Sequence[str]) -> list[float]:
        df = np.array(
            [
                int(self._indptr[t + 1] - self._indptr[t]) if t >= 0 else 0
                for t in (self._vocabulary.get(term, -1) for term in terms)
            ],
            np.int64,
        )
        return [float(x) for x in bm25.idf(df, self._n_docs)]
