"""BM25 against a hand computation, and its array layout."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from twokeys.errors import ConfigError
from twokeys.lexical import bm25
from twokeys.lexical.bm25 import BM25Params, bm25_weights, build_term_matrix, score
from twokeys.lexical.index import ArrayLexicalIndex

DOCS = [
    ["zx-4821", "power", "power", "fault"],
    ["zx-4812", "firmware", "fault"],
    ["power", "supply", "guide", "for", "all", "devices"],
    [],
]


def hand_bm25(term: str, doc: list[str], docs: list[list[str]], k1: float, b: float) -> float:
    n = len(docs)
    df = sum(term in d for d in docs)
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    avgdl = sum(len(d) for d in docs) / n
    tf = doc.count(term)
    if tf == 0:
        return 0.0
    return idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))


def test_term_matrix_layout() -> None:
    m = build_term_matrix(DOCS)
    assert m.vocabulary == sorted(m.vocabulary)
    power = m.vocabulary.index("power")
    start, end = m.indptr[power], m.indptr[power + 1]
    assert m.indices[start:end].tolist() == [0, 2]
    assert m.tf[start:end].tolist() == [2.0, 1.0]
    assert m.lengths.tolist() == [4.0, 3.0, 6.0, 0.0]
    assert m.document_frequencies()[m.vocabulary.index("fault")] == 2


@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.2, 0.75), (2.0, 0.0), (0.5, 1.0)])
def test_scores_equal_hand_computation(k1: float, b: float) -> None:
    m = build_term_matrix(DOCS)
    weights = bm25_weights(m, BM25Params(k1, b))
    vocab = {t: i for i, t in enumerate(m.vocabulary)}
    query = ["power", "fault", "zx-4821"]
    got = score({vocab[t]: 1.0 for t in query}, m.indptr, m.indices, weights, m.n_docs)
    for d, doc in enumerate(DOCS):
        expected = sum(hand_bm25(t, doc, DOCS, k1, b) for t in query)
        assert got[d] == pytest.approx(expected, abs=1e-6)


def test_repeated_query_terms_count_like_lucene_boosts() -> None:
    m = build_term_matrix(DOCS)
    weights = bm25_weights(m, BM25Params())
    vocab = {t: i for i, t in enumerate(m.vocabulary)}
    index = ArrayLexicalIndex(vocab, m.indptr, m.indices, weights, m.n_docs)
    once = {h.row: h.score for h in index.search(["fault"], 10)}
    twice = {h.row: h.score for h in index.search(["fault", "fault"], 10)}
    assert twice[0] == pytest.approx(2 * once[0], rel=1e-6)


def test_search_ranks_ties_by_row_and_skips_unmatched() -> None:
    docs = [["b"], ["a"], ["a"], ["c"], ["a"]]
    m = build_term_matrix(docs)
    weights = bm25_weights(m, BM25Params())
    vocab = {t: i for i, t in enumerate(m.vocabulary)}
    index = ArrayLexicalIndex(vocab, m.indptr, m.indices, weights, m.n_docs)
    hits = index.search(["a", "unknown"], 2)
    assert [h.row for h in hits] == [1, 2]
    assert [h.rank for h in hits] == [1, 2]
    assert index.search(["unknown"], 5) == []
    explained = index.explain(["a", "b"], 1)
    assert [t for t, _ in explained] == ["a"]
    assert explained[0][1] == pytest.approx(hits[0].score, rel=1e-6)


def test_document_frequencies_count_chunks() -> None:
    docs = [["b"], ["a", "a"], ["a"], ["c"], ["a"]]
    m = build_term_matrix(docs)
    vocab = {t: i for i, t in enumerate(m.vocabulary)}
    index = ArrayLexicalIndex(vocab, m.indptr, m.indices, bm25_weights(m, BM25Params()), 5)
    assert index.document_frequencies(["a", "c", "unknown"]) == ([3, 1, 0], 5)


def test_term_evidence_reads_both_sensors() -> None:
    from twokeys.analysis import Analyzer
    from twokeys.retrievers.lexical import BM25Retriever

    analyzer = Analyzer()
    texts = ["error 40002 quota", "error upload", "error sync retry", "quota page"]
    m = build_term_matrix([analyzer.index_terms(t) for t in texts])
    vocab = {t: i for i, t in enumerate(m.vocabulary)}
    index = ArrayLexicalIndex(vocab, m.indptr, m.indices, bm25_weights(m, BM25Params()), 4)
    bm25_retriever = BM25Retriever(analyzer, index)
    run = index.search(analyzer.query_terms("error 40002"), 4)
    assert run[0].row == 0

    def pieces(words: Sequence[str]) -> list[int]:
        return [3 if w == "40002" else 1 for w in words]

    evidence = {
        e.term: e for e in bm25_retriever.term_evidence("error 40002 missing", run, [1, 2], pieces)
    }
    assert set(evidence) == {"error", "40002"}  # a term the corpus lacks has no evidence
    code, error = evidence["40002"], evidence["error"]
    assert code.top_share + error.top_share == pytest.approx(1.0)
    assert code.top_share > 0.5 and not code.in_dense_top and code.word_pieces == 3
    assert error.in_dense_top and error.chunk_share == pytest.approx(3 / 4)
    assert code.chunk_share == pytest.approx(1 / 4)
    assert not code.in_lexical_rest and error.in_lexical_rest  # rows 1, 2 hold "error"


def test_empty_corpus() -> None:
    m = build_term_matrix([])
    assert m.n_docs == 0
    assert bm25_weights(m, BM25Params()).size == 0
    assert np.array_equal(m.indptr, [0])


def test_params_validation() -> None:
    with pytest.raises(ConfigError, match=r"bm25\.k1"):
        BM25Params(k1=-1)
    with pytest.raises(ConfigError, match=r"bm25\.b"):
        BM25Params(b=1.5)
    with pytest.raises(ConfigError, match="unknown"):
        BM25Params.from_dict({"k": 1})


def naive_term_matrix(docs: list[list[str]]) -> dict[str, list[tuple[int, float]]]:
    postings: dict[str, list[tuple[int, float]]] = {}
    for row, doc in enumerate(docs):
        for term in sorted(set(doc)):
            postings.setdefault(term, []).append((row, float(doc.count(term))))
    return postings


@pytest.mark.parametrize("block", [1, 3, 7, 1 << 16])
def test_term_matrix_blocks_give_the_same_layout(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bm25, "_BLOCK", block)
    rng = random.Random(block)
    docs = [[f"t{rng.randint(0, 40)}" for _ in range(rng.randint(0, 15))] for _ in range(60)]
    m = build_term_matrix(docs)
    expected = naive_term_matrix(docs)
    assert m.vocabulary == sorted(expected)
    for t, term in enumerate(m.vocabulary):
        start, end = m.indptr[t], m.indptr[t + 1]
        got = list(zip(m.indices[start:end].tolist(), m.tf[start:end].tolist(), strict=True))
        assert got == expected[term]
    assert m.lengths.tolist() == [float(len(d)) for d in docs]
    weights = bm25_weights(m, BM25Params())
    vocab = {t: i for i, t in enumerate(m.vocabulary)}
    for row in (0, 17, 59):
        for term in set(docs[row]):
            expect = hand_bm25(term, docs[row], docs, 0.9, 0.4)
            got_w = bm25.term_weight(vocab[term], row, m.indptr, m.indices, weights)
            assert got_w == pytest.approx(expect, rel=1e-5)


def random_corpus(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    return [[rng.choice(words) for _ in range(rng.randint(0, 40))] for _ in range(n)]


def same_matrix(a: bm25.TermMatrix, b: bm25.TermMatrix) -> bool:
    return a.vocabulary == b.vocabulary and all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ("indptr", "indices", "tf", "lengths")
    )


def test_matrix_is_the_same_however_the_chunks_are_batched() -> None:
    docs = random_corpus(400, seed=3)
    whole = build_term_matrix(docs)
    term_ids = bm25.TermIds()
    ids = [np.fromiter(map(term_ids.__getitem__, d), np.int32, len(d)) for d in docs]
    for cuts in ([], [1], [0, 7, 7, 150, 399], list(range(0, 400, 3))):
        bounds = list(zip([0, *cuts], [*cuts, len(docs)], strict=True))
        batches = [
            (
                np.concatenate([np.empty(0, np.int32), *ids[a:b]]),
                np.array([len(d) for d in docs[a:b]], np.int64),
            )
            for a, b in bounds
        ]
        for compiled in (True, False):
            matrix = bm25.build_term_matrix_from_ids(batches, term_ids.terms, compiled=compiled)
            assert same_matrix(matrix, whole), (cuts, compiled)
    assert [term_ids.terms[i] for i in np.concatenate(ids[:2])] == docs[0] + docs[1]


def test_analysed_matrix_is_the_matrix_of_index_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    from twokeys.analysis import AnalyzerSpec, analyzer_for
    from twokeys.lexical import batches

    monkeypatch.setattr(batches, "BATCH_CHARS", 200)  # many small batches
    rng = random.Random(5)
    words = ["ZX-4821", "power", "rails", "nomic-embed-text", "qwen2.5:14b", "the", "über"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    analyzer = analyzer_for(AnalyzerSpec())
    expected = build_term_matrix([analyzer.index_terms(t) for t in texts])
    seen: list[int] = []
    got = batches.analysed_matrix(iter(texts), AnalyzerSpec(), seen.append)
    assert same_matrix(got, expected)
    assert sum(seen) == len(texts) and len(seen) > 10
    empty = batches.analysed_matrix([], AnalyzerSpec())
    assert empty.vocabulary == [] and empty.n_docs == 0 and empty.indptr.tolist() == [0]


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 16])
def test_weights_do_not_depend_on_the_block(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # terms whose postings cross a block's edge, and terms with no postings at all
    docs = [["a", "b", "a"], [], ["c"], ["a", "c", "d", "d"], ["b"], ["e"] * 5, ["a"]]
    m = build_term_matrix(docs)
    ends = m.indptr
    # a term without postings first, two in the middle, one last (each a repeated bound)
    indptr = np.insert(ends, [0, 2, 2, ends.size], [0, ends[2], ends[2], ends[-1]])
    m = replace(m, indptr=indptr, vocabulary=[f"t{i}" for i in range(indptr.size - 1)])
    monkeypatch.setattr(bm25, "_BLOCK", block)
    got = bm25_weights(m, BM25Params())
    terms = np.repeat(np.arange(len(m.indptr) - 1), np.diff(m.indptr))
    dl = m.lengths[m.indices].astype(np.float64)
    tf = m.tf.astype(np.float64)
    norm = 0.9 * (1.0 - 0.4 + 0.4 * dl / float(m.lengths.mean()))
    idf = bm25.idf(m.document_frequencies(), m.n_docs)
    assert got.tolist() == (idf[terms] * tf / (tf + norm)).astype(np.float32).tolist()
