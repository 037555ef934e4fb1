"""BM25+, BM25L and tf-idf cosine against hand computations; LSI's factors and folding."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twokeys.errors import ConfigError
from twokeys.lexical import lsi
from twokeys.lexical.bm25 import build_term_matrix, score
from twokeys.lexical.tfidf import query_weights, tfidf_weights
from twokeys.lexical.variants import (
    BM25LParams,
    BM25PlusParams,
    bm25l_weights,
    bm25plus_weights,
)

DOCS = [
    ["zx-4821", "power", "power", "fault"],
    ["zx-4812", "firmware", "fault"],
    ["power", "supply", "guide", "for", "all", "devices"],
    [],
]
QUERY = ["power", "fault", "zx-4821"]


def _stats(term: str, doc: list[str]) -> tuple[int, int, float, float]:
    n = len(DOCS)
    df = sum(term in d for d in DOCS)
    avgdl = sum(len(d) for d in DOCS) / n
    return n, df, doc.count(term), len(doc) / avgdl


def hand_bm25plus(term: str, doc: list[str], k1: float, b: float, delta: float) -> float:
    n, df, tf, rel_len = _stats(term, doc)
    if tf == 0:
        return 0.0
    return math.log((n + 1) / df) * ((k1 + 1) * tf / (tf + k1 * (1 - b + b * rel_len)) + delta)


def hand_bm25l(term: str, doc: list[str], k1: float, b: float, delta: float) -> float:
    n, df, tf, rel_len = _stats(term, doc)
    if tf == 0:
        return 0.0
    c = tf / (1 - b + b * rel_len)
    return math.log((n + 1) / (df + 0.5)) * (k1 + 1) * (c + delta) / (k1 + c + delta)


def ltc(terms: list[str]) -> dict[str, float]:
    n = len(DOCS)
    raw = {}
    for t in set(terms):
        df = sum(t in d for d in DOCS)
        raw[t] = (1 + math.log(terms.count(t))) * math.log(n / df)
    norm = math.sqrt(sum(w * w for w in raw.values()))
    return {t: w / norm for t, w in raw.items()} if norm else {}


def _query_scores(weights: np.ndarray, qw: dict[str, float]) -> np.ndarray:
    m = build_term_matrix(DOCS)
    ids = {m.vocabulary.index(t): w for t, w in qw.items()}
    return score(ids, m.indptr, m.indices, weights, m.n_docs)


@pytest.mark.parametrize(("k1", "b", "delta"), [(0.9, 0.4, 1.0), (1.2, 0.75, 0.5), (2.0, 0.0, 0)])
def test_bm25plus_equals_hand_computation(k1: float, b: float, delta: float) -> None:
    weights = bm25plus_weights(build_term_matrix(DOCS), BM25PlusParams(k1, b, delta))
    got = _query_scores(weights, dict.fromkeys(QUERY, 1.0))
    for d, doc in enumerate(DOCS):
        expected = sum(hand_bm25plus(t, doc, k1, b, delta) for t in QUERY)
        assert got[d] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("k1", "b", "delta"), [(0.9, 0.4, 0.5), (1.2, 0.75, 1.0), (0.5, 1.0, 0)])
def test_bm25l_equals_hand_computation(k1: float, b: float, delta: float) -> None:
    weights = bm25l_weights(build_term_matrix(DOCS), BM25LParams(k1, b, delta))
    got = _query_scores(weights, dict.fromkeys(QUERY, 1.0))
    for d, doc in enumerate(DOCS):
        expected = sum(hand_bm25l(t, doc, k1, b, delta) for t in QUERY)
        assert got[d] == pytest.approx(expected, abs=1e-6)


def test_bm25plus_weight_never_falls_below_idf_times_delta() -> None:
    # the paper's point: however long the chunk, a match is worth at least delta * idf
    docs = [["power", *["filler"] * 400], *[["other"]] * 50]
    m = build_term_matrix(docs)
    power = m.vocabulary.index("power")
    plus = bm25plus_weights(m, BM25PlusParams(k1=1.2, b=1.0, delta=1.0))[m.indptr[power]]
    bare = bm25plus_weights(m, BM25PlusParams(k1=1.2, b=1.0, delta=0.0))[m.indptr[power]]
    idf = math.log(52 / 1)
    assert bare < 0.05 * idf
    assert plus == pytest.approx(bare + idf, rel=1e-6)


def test_tfidf_cosine_equals_hand_computation() -> None:
    m = build_term_matrix(DOCS)
    weights = tfidf_weights(m)
    query = ["power", "power", "fault", "zx-4821", "unknown-term"]
    ids = {t: i for i, t in enumerate(m.vocabulary)}
    counts = {ids[t]: query.count(t) for t in set(query) if t in ids}
    got_qw = query_weights(counts, m.document_frequencies(), m.n_docs)
    expected_qw = ltc([t for t in query if t in ids])
    assert {m.vocabulary[t]: w for t, w in got_qw.items()} == pytest.approx(expected_qw, abs=1e-9)
    got = score(got_qw, m.indptr, m.indices, weights, m.n_docs)
    for d, doc in enumerate(DOCS):
        dw = ltc(doc) if doc else {}
        expected = sum(w * dw.get(t, 0.0) for t, w in expected_qw.items())
        assert got[d] == pytest.approx(expected, abs=1e-6)
    # documents are unit vectors; a query equal to a document scores 1 on it
    squares = np.bincount(m.indices, weights=weights.astype(np.float64) ** 2, minlength=m.n_docs)
    assert squares[:3] == pytest.approx([1.0, 1.0, 1.0], abs=1e-6)
    assert squares[3] == 0.0


def test_tfidf_term_in_every_chunk_weighs_nothing() -> None:
    m = build_term_matrix([["a", "b"], ["a", "c"]])
    a = m.vocabulary.index("a")
    assert query_weights({a: 3}, m.document_frequencies(), m.n_docs) == {}
    assert tfidf_weights(m)[m.indptr[a] : m.indptr[a + 1]].tolist() == [0.0, 0.0]


def test_variant_params_validation() -> None:
    with pytest.raises(ConfigError, match=r"bm25\+\.delta"):
        BM25PlusParams(delta=-1)
    with pytest.raises(ConfigError, match=r"bm25l\.b"):
        BM25LParams(b=2)
    with pytest.raises(ConfigError, match=r"bm25l\.k1"):
        BM25LParams(k1=True)
    assert BM25PlusParams().delta == 1.0 and BM25LParams().delta == 0.5


def test_empty_matrix_has_no_weights() -> None:
    m = build_term_matrix([])
    assert bm25plus_weights(m, BM25PlusParams()).size == 0
    assert bm25l_weights(m, BM25LParams()).size == 0
    assert tfidf_weights(m).size == 0


# -- LSI -----------------------------------------------------------------------------

LSI_DOCS = [
    ["power", "supply", "undervoltage", "fuse"],
    ["firmware", "update", "signature", "check"],
    ["power", "fuse", "replace", "fuse"],
    ["firmware", "signature", "failed"],
    ["supply", "chain", "team", "planning"],
    ["undervoltage", "alarm", "power"],
]


def test_svd_reproduces_the_matrix_at_full_rank() -> None:
    m = build_term_matrix(LSI_DOCS)
    a = lsi.weighted_matrix(m)
    assert a.shape == (len(m.vocabulary), len(LSI_DOCS))
    u, s, vt = lsi.truncated_svd(a, rank=1000)
    assert s.size == min(a.shape)
    assert np.all(np.diff(s) <= 0)
    np.testing.assert_allclose((u * s) @ vt, a.toarray(), atol=1e-10)


def test_arpack_path_matches_dense_and_is_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    a = lsi.weighted_matrix(build_term_matrix(LSI_DOCS))
    _, dense_s, _ = lsi.truncated_svd(a, rank=3)
    monkeypatch.setattr(lsi, "DENSE_LIMIT", 0)
    u1, s1, vt1 = lsi.truncated_svd(a, rank=3)
    u2, s2, vt2 = lsi.truncated_svd(a, rank=3)
    np.testing.assert_allclose(s1, dense_s, rtol=1e-8)
    assert np.array_equal(u1, u2) and np.array_equal(s1, s2) and np.array_equal(vt1, vt2)
    # ARPACK needs k < min(shape): a rank beyond that is clipped
    assert lsi.truncated_svd(a, rank=100)[1].size == min(a.shape) - 1


def test_folding_a_documents_own_terms_ranks_it_first() -> None:
    m = build_term_matrix(LSI_DOCS)
    model = lsi.fit(m, lsi.LsiParams(rank=200))
    assert model.rank == len(LSI_DOCS)
    np.testing.assert_allclose(np.linalg.norm(model.chunk_vectors, axis=1), 1.0, atol=1e-6)
    ids = {t: i for i, t in enumerate(m.vocabulary)}
    for d, doc in enumerate(LSI_DOCS):
        counts = {ids[t]: doc.count(t) for t in set(doc)}
        qw = query_weights(counts, m.document_frequencies(), m.n_docs)
        scores = lsi.cosine_scores(model, lsi.fold_query(model, qw))
        assert int(np.argmax(scores)) == d
        assert scores[d] == pytest.approx(1.0, abs=1e-5)


def test_fold_query_is_s_inverse_u_transpose_q() -> None:
    m = build_term_matrix(LSI_DOCS)
    model = lsi.fit(m, lsi.LsiParams(rank=2))
    q = {m.vocabulary.index("power"): 0.6, m.vocabulary.index("fuse"): 0.8}
    dense_q = np.zeros(len(m.vocabulary))
    for t, w in q.items():
        dense_q[t] = w
    expected = (model.term_vectors.T.astype(np.float64) @ dense_q) / model.singular_values
    np.testing.assert_allclose(lsi.fold_query(model, q), expected, rtol=1e-6)
    assert model.rank == 2 and model.chunk_vectors.shape == (len(LSI_DOCS), 2)


def test_lsi_model_arrays_roundtrip() -> None:
    model = lsi.fit(build_term_matrix(LSI_DOCS), lsi.LsiParams(rank=3))
    again = lsi.LsiModel.from_arrays(model.to_arrays())
    assert np.array_equal(again.term_vectors, model.term_vectors)
    with pytest.raises(ValueError, match="shapes"):
        lsi.LsiModel.from_arrays({**model.to_arrays(), "s": model.singular_values[:2]})


@pytest.mark.parametrize("rank", [0, -3, 1.5, True, "200", lsi.MAX_RANK + 1])
def test_lsi_rank_validation(rank: object) -> None:
    with pytest.raises(ConfigError, match=r"lsi\.rank"):
        lsi.LsiParams(rank=rank)  # type: ignore[arg-type]
