"""The classic retrieval models, side by side with BM25: boolean, tf-idf, BM25+, BM25L, LSI.

Each is a :class:`~twokeys.retrievers.base.Retriever` built by a ``build_<name>(index,
settings)`` factory registered in :mod:`twokeys.retrievers.catalog`, so all of them run
under ``twokeys search --mode`` and in evaluations. They share the index's analyzer and
its term-frequency matrix (:meth:`twokeys.store.local.LocalIndex.term_matrix`, embedded
backend only). Weights are computed on first use and kept per backend object, so the
next query (and the next retriever over the same open index) reuses them. LSI's
factors are read from the index's generation folder, where ``twokeys index --derive
lsi`` or ``twokeys optimize --derive lsi`` saves them; without them they are fitted in
memory, never written by a reader.

The maths lives in :mod:`twokeys.lexical` (``boolean``, ``tfidf``, ``variants``, ``lsi``).
"""

from __future__ import annotations

import copy
import os
import threading
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from twokeys.analysis import Analyzer
from twokeys.errors import ConfigError
from twokeys.lexical import boolean, lsi, tfidf, variants
from twokeys.lexical.bm25 import TermMatrix, score, term_weight
from twokeys.retrievers.base import Retriever, RetrieverResult, indexed_texts
from twokeys.store.base import IndexBackend, RowMask
from twokeys.store.local import LocalIndex, load_derived, save_derived
from twokeys.topk import top_k, top_k_allowed
from twokeys.types import Evidence, ScoredChunk

if TYPE_CHECKING:
    from twokeys.engine import Index
    from twokeys.request import SearchRequest

LSI_RANK_ENV = "TWOKEYS_LSI_RANK"
_LSI_CACHE_VERSION = 1  # bump when the weighting or the factor layout changes

T = TypeVar("T")
_CACHE: weakref.WeakKeyDictionary[IndexBackend, dict[str, Any]] = weakref.WeakKeyDictionary()


_CACHE_LOCK = threading.RLock()  # computes run under it: each value is computed once


def _cached(backend: IndexBackend, key: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per backend object and key, whichever threads ask."""
    store = _CACHE.get(backend)
    if store is None or key not in store:
        with _CACHE_LOCK:
            store = _CACHE.setdefault(backend, {})
            if key not in store:
                store[key] = compute()
    value: T = store[key]
    return value


@dataclass(frozen=True, eq=False)
class Lexicon:
    """The index's term-frequency matrix with its term ids and document frequencies."""

    matrix: TermMatrix
    term_ids: Mapping[str, int]
    df: npt.NDArray[np.int64]

    def counts(self, terms: Sequence[str]) -> dict[int, int]:
        """{term id: count} of the known ``terms``, in term-id order."""
        found = Counter(self.term_ids[t] for t in terms if t in self.term_ids)
        return dict(sorted(found.items()))

    def postings(self, term: str) -> npt.NDArray[np.int64]:
        t = self.term_ids.get(term)
        if t is None:
            return np.empty(0, np.int64)
        start, end = int(self.matrix.indptr[t]), int(self.matrix.indptr[t + 1])
        return np.asarray(self.matrix.indices[start:end], np.int64)


def lexicon(index: Index, mode: str) -> Lexicon:
    """The backend's term matrix (cached); a ConfigError if the backend has none."""
    backend = index.backend
    load = getattr(backend, "term_matrix", None)
    if not callable(load):
        raise ConfigError(
            f"mode: {mode!r} needs the embedded index backend (it reads the term-frequency "
            f"matrix, which {type(backend).__name__} does not provide)"
        )

    def build() -> Lexicon:
        matrix: TermMatrix = load()
        ids = {term: i for i, term in enumerate(matrix.vocabulary)}
        return Lexicon(matrix, ids, matrix.document_frequencies())

    return _cached(backend, "lexicon", build)


def _run(rows: npt.NDArray[np.int64], values: npt.NDArray[np.float32]) -> list[ScoredChunk]:
    return [
        ScoredChunk(row=int(r), score=float(s), rank=i + 1)
        for i, (r, s) in enumerate(zip(rows, values, strict=True))
    ]


# -- sparse weighted models: tf-idf, BM25+, BM25L --------------------------------------


class _Restrictable(Retriever):
    """A classic retriever ranks all rows, or, restricted by a filter, the rows allowed.

    The retrievers are kept per open index (their weights are costly), so a filtered
    search ranks with a shallow copy that holds the filter's mask.
    """

    allowed: RowMask | None = None

    def restricted(self, allowed: RowMask | None) -> Retriever:
        if allowed is None:
            return self
        copy_ = copy.copy(self)
        copy_.allowed = allowed
        return copy_


class SparseRetriever(_Restrictable):
    """Scores a query as ``sum_t qw(t) * w(t, d)`` over precomputed posting weights."""

    def __init__(
        self, name: str, analyzer: Analyzer, lex: Lexicon, weights: npt.NDArray[np.float32]
    ) -> None:
        self.name = name
        self.analyzer = analyzer
        self.lexicon = lex
        self.weights = weights

    def query_weights(self, counts: Mapping[int, int]) -> dict[int, float]:
        """{term id: query weight}; the raw count by default, as in BM25."""
        return {t: float(c) for t, c in counts.items()}

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        qw = self.query_weights(self.lexicon.counts(self.analyzer.query_terms(query)))
        if not qw:
            return RetrieverResult([])
        m = self.lexicon.matrix
        scores = score(qw, m.indptr, m.indices, self.weights, m.n_docs)
        run = _run(*top_k_allowed(scores, k, self.allowed, only_positive=True))
        evidence = {}
        if explain:
            for hit in run:
                matched = self.contributions(qw, hit.row)
                evidence[hit.row] = (
                    Evidence(self.name, hit.rank, hit.score, matched_terms=matched),
                )
        return RetrieverResult(run, evidence)

    def contributions(self, qw: Mapping[int, float], row: int) -> tuple[tuple[str, float], ...]:
        m = self.lexicon.matrix
        out = []
        for t, q in qw.items():
            w = term_weight(t, row, m.indptr, m.indices, self.weights)
            if w > 0:
                out.append((m.vocabulary[t], q * w))
        return tuple(sorted(out, key=lambda tw: (-tw[1], tw[0])))


class TfidfRetriever(SparseRetriever):
    """The vector space model, SMART ``ltc`` weights, cosine (:mod:`twokeys.lexical.tfidf`)."""

    def __init__(self, analyzer: Analyzer, lex: Lexicon) -> None:
        weights = tfidf.tfidf_weights(lex.matrix)
        super().__init__("tfidf", analyzer, lex, weights)

    def query_weights(self, counts: Mapping[int, int]) -> dict[int, float]:
        return tfidf.query_weights(counts, self.lexicon.df, self.lexicon.matrix.n_docs)


class BM25VariantRetriever(SparseRetriever):
    """BM25+ (``name="bm25+"``) or BM25L (``"bm25l"``), see :mod:`twokeys.lexical.variants`."""

    def __init__(
        self,
        name: str,
        analyzer: Analyzer,
        lex: Lexicon,
        params: variants.BM25PlusParams | variants.BM25LParams,
    ) -> None:
        if name == "bm25+" and isinstance(params, variants.BM25PlusParams):
            weights = variants.bm25plus_weights(lex.matrix, params)
        elif name == "bm25l" and isinstance(params, variants.BM25LParams):
            weights = variants.bm25l_weights(lex.matrix, params)
        else:
            raise ConfigError(f"mode: {name!r} does not fit {type(params).__name__}")
        super().__init__(name, analyzer, lex, weights)
        self.params = params


# -- boolean -------------------------------------------------------------------------


class BooleanRetriever(_Restrictable):
    """Exact-match boolean queries (:mod:`twokeys.lexical.boolean`), matches ranked by BM25."""

    name = "boolean"

    def __init__(self, analyzer: Analyzer, backend: IndexBackend, lex: Lexicon) -> None:
        self.analyzer = analyzer
        self.backend = backend
        self.lexicon = lex

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        tree = boolean.compile_query(query, self.analyzer.query_terms)
        n_docs = self.lexicon.matrix.n_docs
        rows = boolean.evaluate(tree, self.lexicon.postings, n_docs, self.verify_phrase)
        if self.allowed is not None:
            rows = rows[self.allowed[rows]]
        if not rows.size:
            return RetrieverResult([])
        terms = list(boolean.positive_terms(tree))
        lexical = self.backend.lexical
        bm25 = {hit.row: hit.score for hit in lexical.search(terms, n_docs)}
        scores = np.array([bm25.get(int(r), 0.0) for r in rows], np.float32)
        positions, values = top_k(scores, k)
        run = _run(rows[positions], values)
        evidence = {}
        if explain:
            for hit in run:
                matched = lexical.explain(terms, hit.row)
                evidence[hit.row] = (
                    Evidence(self.name, hit.rank, hit.score, matched_terms=matched),
                )
        return RetrieverResult(run, evidence)

    def verify_phrase(
        self, candidates: npt.NDArray[np.int64], phrase: tuple[str, ...]
    ) -> npt.NDArray[np.int64]:
        """The candidate rows whose indexed text, analysed, holds ``phrase`` contiguously."""
        texts = indexed_texts(self.backend, [int(r) for r in candidates])
        keep = []
        for row, text in zip(candidates, texts, strict=True):
            if boolean.contains_sequence(self.analyzer.query_terms(text), phrase):
                keep.append(int(row))
        return np.asarray(keep, np.int64)


# -- LSI -----------------------------------------------------------------------------


class LsiRetriever(_Restrictable):
    """Latent semantic indexing with query folding (:mod:`twokeys.lexical.lsi`)."""

    name = "lsi"

    def __init__(self, analyzer: Analyzer, lex: Lexicon, model: lsi.LsiModel) -> None:
        self.analyzer = analyzer
        self.lexicon = lex
        self.model = model

    def retrieve(self, query: str, k: int, *, explain: bool = False) -> RetrieverResult:
        counts = self.lexicon.counts(self.analyzer.query_terms(query))
        qw = tfidf.query_weights(counts, self.lexicon.df, self.lexicon.matrix.n_docs)
        if not qw or self.model.rank == 0:
            return RetrieverResult([])
        scores = lsi.cosine_scores(self.model, lsi.fold_query(self.model, qw))
        run = _run(*top_k_allowed(scores, k, self.allowed))
        evidence = {}
        if explain:
            evidence = {hit.row: (Evidence(self.name, hit.rank, hit.score),) for hit in run}
        return RetrieverResult(run, evidence)


class LsiNotBuiltWarning(UserWarning):
    """The index has no saved LSI factors, so they are fitted in memory (slow, not kept)."""


def lsi_name(params: lsi.LsiParams) -> str:
    """The derived-array name of the LSI factors fitted with ``params``."""
    return f"lsi-v{_LSI_CACHE_VERSION}-r{params.rank}-s{params.seed}"


_LSI_KEYS = ("u", "s", "chunks")


def load_lsi(backend: LocalIndex, matrix: TermMatrix, params: lsi.LsiParams) -> lsi.LsiModel | None:
    """The factors saved in the generation folder, if they fit ``matrix``."""
    arrays = load_derived(backend, lsi_name(params), _LSI_KEYS)
    if arrays is None:
        return None
    try:
        model = lsi.LsiModel.from_arrays(arrays)
    except (KeyError, ValueError):
        return None
    return model if _fits(model, matrix) else None


def save_lsi_factors(backend: LocalIndex, params: lsi.LsiParams) -> bool:
    """Fit and save the LSI factors unless valid ones are saved; whether it fitted.

    A writer's step (``twokeys index --derive lsi``, ``twokeys optimize --derive lsi``):
    raises :class:`OSError` if the generation folder is not writable.
    """
    matrix = backend.term_matrix()
    if load_lsi(backend, matrix, params) is not None:
        return False
    save_derived(backend, lsi_name(params), lsi.fit(matrix, params).to_arrays())
    return True


def lsi_model(index: Index, lex: Lexicon, params: lsi.LsiParams) -> lsi.LsiModel:
    """The fitted model: from memory, else from the generation folder, else fitted in
    memory only (reading never writes), with a :class:`LsiNotBuiltWarning`."""
    backend = index.backend

    def load_or_fit() -> lsi.LsiModel:
        if isinstance(backend, LocalIndex):
            model = load_lsi(backend, lex.matrix, params)
            if model is not None:
                return model
            warnings.warn(
                f"{backend.path}: no LSI factors of rank {params.rank} are saved; fitting "
                "them in memory for this session (build them once with 'twokeys optimize "
                f"--index {backend.path} --derive lsi')",
                LsiNotBuiltWarning,
                stacklevel=2,
            )
        return lsi.fit(lex.matrix, params)

    return _cached(backend, lsi_name(params), load_or_fit)


def _fits(model: lsi.LsiModel, matrix: TermMatrix) -> bool:
    terms, chunks = int(model.term_vectors.shape[0]), int(model.chunk_vectors.shape[0])
    return terms == len(matrix.vocabulary) and chunks == matrix.n_docs


# -- factories (see twokeys.retrievers.catalog) ----------------------------------------


def build_boolean(index: Index, request: SearchRequest) -> Retriever:
    retriever = BooleanRetriever(index.analyzer, index.backend, lexicon(index, "boolean"))
    return retriever.restricted(index.allowed_rows(request.filters))


def build_tfidf(index: Index, request: SearchRequest) -> Retriever:
    lex = lexicon(index, "tfidf")
    retriever = _cached(index.backend, "tfidf", lambda: TfidfRetriever(index.analyzer, lex))
    return retriever.restricted(index.allowed_rows(request.filters))


def build_bm25plus(index: Index, request: SearchRequest) -> Retriever:
    lex = lexicon(index, "bm25+")
    bm25 = index.manifest.bm25
    params = variants.BM25PlusParams(k1=bm25.k1, b=bm25.b)
    return _cached(
        index.backend,
        f"bm25+:{params}",
        lambda: BM25VariantRetriever("bm25+", index.analyzer, lex, params),
    ).restricted(index.allowed_rows(request.filters))


def build_bm25l(index: Index, request: SearchRequest) -> Retriever:
    lex = lexicon(index, "bm25l")
    bm25 = index.manifest.bm25
    params = variants.BM25LParams(k1=bm25.k1, b=bm25.b)
    return _cached(
        index.backend,
        f"bm25l:{params}",
        lambda: BM25VariantRetriever("bm25l", index.analyzer, lex, params),
    ).restricted(index.allowed_rows(request.filters))


def build_lsi(index: Index, request: SearchRequest, *, rank: int | None = None) -> Retriever:
    """LSI at ``rank`` (default: ``$TWOKEYS_LSI_RANK``, else 200)."""
    if rank is None:
        rank = _env_rank()
    lex = lexicon(index, "lsi")
    model = lsi_model(index, lex, lsi.LsiParams(rank=rank))
    return LsiRetriever(index.analyzer, lex, model).restricted(index.allowed_rows(request.filters))


def lsi_params() -> lsi.LsiParams:
    """The LSI parameters searches use: rank from ``$TWOKEYS_LSI_RANK``, else 200."""
    return lsi.LsiParams(rank=_env_rank())


def _env_rank() -> int:
    raw = os.environ.get(LSI_RANK_ENV, "").strip()
    if not raw:
        return lsi.DEFAULT_RANK
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{LSI_RANK_ENV}: must be an integer, got {raw!r}") from None
