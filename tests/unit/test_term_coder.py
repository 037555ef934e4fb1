"""The build's analysis (``TermCoder``: compiled raw-token scan, each distinct raw token
analysed once, term ids by array operations) gives ``Analyzer.index_terms`` exactly."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SHARED_DATA
from twokeys.analysis import _RAW_TOKEN, Analyzer, AnalyzerSpec, raw_tokens_of
from twokeys.lexical import coding
from twokeys.lexical.bm25 import build_term_matrix, build_term_matrix_from_ids
from twokeys.lexical.coding import QueryCoder, TermCoder

COLLECTIONS = ("scifact", "cranfield", "cisi", "medline", "adi", "cacm")
SPECS = (
    AnalyzerSpec(),
    AnalyzerSpec(stemmer="porter", stopwords="lucene"),
    AnalyzerSpec(stemmer="none", stopwords="none", identifier_parts=False, lowercase=False),
    AnalyzerSpec(cjk_bigrams=False),
)
# the identifiers and scripts the analyzer exists for, and the edges of its pattern
HARD = [
    "ZX-4821 qwen2.5:14b nomic-embed-text SSL_CTX_new --unrestricted -v .NET C++ C# c#_x",
    "/etc/grub.d/40_custom user@example.com camelCaseName HTTPServer don't O'Reilly's",
    "Müller’s naïve café – “quoted” ﬁle ① x² ½ ΔT Straße ǅ İstanbul",
    "東京都の天気は晴れ 한국어 텍스트 mixed日本語text ｶﾀｶﾅ 中",
    "--- -- - . / ++ # a--b a..b a++ a+++ a#b a# #a 'quoted' '' x'y 1,234.5 3.14e-10",
    "",
    "   \n\t ",
]


def _texts(name: str, limit: int) -> list[str]:
    path = SHARED_DATA / name / "corpus.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    texts = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            texts.append(f"{record.get('title', '')}\n{record.get('text', '')}")
            if len(texts) >= limit:
                break
    return texts


def _coded_terms(coder: TermCoder, texts: list[str], batch: int) -> list[list[str]]:
    out: list[list[str]] = []
    for start in range(0, len(texts), batch):
        ids, per_text = coder.encode(texts[start : start + batch])
        assert ids.dtype == np.int32 and per_text.size == len(texts[start : start + batch])
        terms = [coder.terms[i] for i in ids.tolist()]
        at = 0
        for n in per_text.tolist():
            out.append(terms[at : at + n])
            at += n
        assert at == len(terms)
    return out


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.stemmer}-{s.stopwords}")
def test_coder_gives_index_terms_on_hard_texts(spec: AnalyzerSpec, compiled: bool) -> None:
    analyzer = Analyzer(spec)
    coder = TermCoder(Analyzer(spec), compiled=compiled)
    texts = HARD * 2  # the second time every raw token is known
    assert _coded_terms(coder, texts, 3) == [analyzer.index_terms(t) for t in texts]


@pytest.mark.parametrize("name", COLLECTIONS)
def test_coder_gives_index_terms_on_the_shared_collections(name: str) -> None:
    texts = _texts(name, 3000)
    expected = [Analyzer().index_terms(t) for t in texts]
    for compiled in (True, False):
        assert _coded_terms(TermCoder(Analyzer(), compiled=compiled), texts, 97) == expected


class _Tokens:
    """A ``learn`` for ``RawTable.encode`` that makes every raw token its own term."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, raws: list[str]) -> tuple[np.ndarray, np.ndarray]:
        first = len(self.seen)
        self.seen += raws
        return np.arange(first, len(self.seen), dtype=np.int32), np.ones(len(raws), np.int32)


@pytest.mark.skipif(coding._kernel is None, reason="kernel not built")
def test_compiled_scan_finds_the_patterns_tokens() -> None:
    """Random strings over the pattern's characters (connectors, leads, trails, non-ASCII
    letters and digits, CJK, marks): the scan's tokens are ``findall``'s, each distinct
    one learnt once (across calls too)."""
    kernel = coding._kernel
    assert kernel is not None
    rng = random.Random(11)
    alphabet = "aZ9_-.:/@+#'= \n\u00e9\u00b2\u00bd\u4e00\u0301\u2460\u0394\u01c5x\U0001d400"
    table, tokens = kernel.RawTable(), _Tokens()
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        ids, counts = table.encode([text, [text]], tokens)
        found = [tokens.seen[i] for i in np.frombuffer(ids, np.int32).tolist()]
        expected = _RAW_TOKEN.findall(text)
        assert found == [*expected, text], repr(text)
        assert np.frombuffer(counts, np.int64).tolist() == [len(expected), 1]
    assert len(tokens.seen) == len(set(tokens.seen)) == table.size()


@pytest.mark.skipif(coding._kernel is None, reason="kernel not built")
def test_compiled_table_refuses_what_is_not_text_and_a_bad_learn() -> None:
    kernel = coding._kernel
    assert kernel is not None
    with pytest.raises(TypeError, match="neither str nor list"):
        kernel.RawTable().encode([b"bytes"], _Tokens())  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not a str"):
        kernel.RawTable().encode([["ok", 3]], _Tokens())  # type: ignore[list-item]
    with pytest.raises(ValueError, match="counts for other tokens"):
        kernel.RawTable().encode(
            ["a b"], lambda raws: (np.zeros(1, np.int32), np.ones(1, np.int32))
        )
    with pytest.raises(ValueError, match="do not add up"):
        kernel.RawTable().encode(["a"], lambda raws: (np.zeros(2, np.int32), np.ones(1, np.int32)))
    with pytest.raises(ZeroDivisionError):
        kernel.RawTable().encode(["a"], lambda raws: 1 / 0)


def test_matrix_from_coded_ids_equals_the_matrix_of_index_terms() -> None:
    texts = HARD + _texts("adi", 200)
    analyzer = Analyzer()
    expected = build_term_matrix([analyzer.index_terms(t) for t in texts])
    for compiled in (True, False):
        coder = TermCoder(Analyzer(), compiled=compiled)
        batches = [coder.encode(texts[i : i + 7]) for i in range(0, len(texts), 7)]
        got = build_term_matrix_from_ids(batches, coder.terms, compiled=compiled)
        assert got.vocabulary == expected.vocabulary
        for field in ("indptr", "indices", "tf", "lengths"):
            assert np.array_equal(getattr(got, field), getattr(expected, field)), field


def test_compiled_and_numpy_postings_agree_however_batched() -> None:
    rng = random.Random(4)
    docs = [[f"w{rng.randint(0, 60)}" for _ in range(rng.randint(0, 25))] for _ in range(500)]
    expected = build_term_matrix(docs)
    terms = sorted({t for d in docs for t in d}, key=lambda t: rng.random())
    ids_of = {t: i for i, t in enumerate(terms)}
    for cuts in ([], [0, 1, 1, 250], list(range(0, 500, 9))):
        bounds = list(zip([0, *cuts], [*cuts, len(docs)], strict=True))
        batches = [
            (
                np.asarray([ids_of[t] for d in docs[a:b] for t in d], np.int32),
                np.asarray([len(d) for d in docs[a:b]], np.int64),
            )
            for a, b in bounds
        ]
        for compiled in (True, False):
            got = build_term_matrix_from_ids(batches, terms, compiled=compiled)
            assert got.vocabulary == expected.vocabulary
            for field in ("indptr", "indices", "tf", "lengths"):
                assert np.array_equal(getattr(got, field), getattr(expected, field)), field


@pytest.mark.skipif(coding._kernel is None, reason="kernel not built")
def test_compiled_postings_refuse_inconsistent_blocks() -> None:
    kernel = coding._kernel
    assert kernel is not None
    remap = np.arange(3, dtype=np.int32)
    df, out_i, out_f = np.zeros(3, np.int64), np.empty(0, np.int32), np.empty(0, np.float32)
    ids = [np.array([0, 1, 5], np.int32)]
    with pytest.raises(ValueError, match="term id is out of range"):
        kernel.postings(ids, [np.array([3], np.int64)], remap, False, df, df, out_i, out_f)
    ids = [np.array([0, 1], np.int32)]
    with pytest.raises(ValueError, match="lengths do not match"):
        kernel.postings(ids, [np.array([3], np.int64)], remap, False, df, df, out_i, out_f)
    with pytest.raises(ValueError, match="more postings than counted"):
        kernel.postings(ids, [np.array([2], np.int64)], remap, True, df, df, out_i, out_f)


def test_a_coder_that_forgot_its_raw_tokens_gives_the_same_ids() -> None:
    coder = TermCoder(Analyzer())
    first = coder.encode(HARD)
    terms = list(coder.terms)
    coder.forget_raw_tokens()
    again = coder.encode(HARD)
    assert coder.terms == terms
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])


def _query_vocabulary(analyzer: Analyzer, texts: list[str]) -> dict[str, int]:
    """Term ids in term order for the index and query terms of ``texts``, less every
    third term (queries then hold terms the vocabulary lacks)."""
    terms = {t for text in texts for t in analyzer.index_terms(text) + analyzer.query_terms(text)}
    return {t: i for i, t in enumerate(sorted(terms)) if i % 3}


def _expected_ids(analyzer: Analyzer, vocabulary: dict[str, int], text: str) -> list[int]:
    return [vocabulary[t] for t in analyzer.query_terms(text) if t in vocabulary]


@pytest.mark.skipif(not QueryCoder.available, reason="kernel not built")
@pytest.mark.parametrize("keep", [3, 200_000])
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.stemmer}-{s.stopwords}")
def test_query_coder_gives_the_query_terms_ids(spec: AnalyzerSpec, keep: int) -> None:
    """A query's ids are its query terms' in order (repeats kept, unknown terms left
    out), every raw token known or new, also for a coder that forgets its tokens every
    few (``keep``)."""
    analyzer = Analyzer(spec)
    texts = [*HARD, *_texts("scifact", 200)]
    vocabulary = _query_vocabulary(analyzer, texts)
    coder = QueryCoder(Analyzer(spec), vocabulary, keep=keep)
    queries = [*HARD, *(t[:200] for t in texts[len(HARD) :]), "il-6 IL-6 il-6", "the the"]
    for text in queries * 2:  # the second time every raw token is known
        ids = np.frombuffer(coder.ids(text), np.int32).tolist()
        assert ids == _expected_ids(analyzer, vocabulary, text), text


@pytest.mark.skipif(not QueryCoder.available, reason="kernel not built")
def test_a_query_coder_shared_by_threads_gives_each_query_its_ids() -> None:
    analyzer = Analyzer()
    texts = _texts("scifact", 400)
    vocabulary = _query_vocabulary(analyzer, texts[:100])
    coder = QueryCoder(analyzer, vocabulary, keep=500)  # forgets now and then, mid-run
    expected = [_expected_ids(analyzer, vocabulary, t) for t in texts]
    from concurrent.futures import ThreadPoolExecutor

    def run(share: list[int]) -> list[list[int]]:
        return [np.frombuffer(coder.ids(texts[i]), np.int32).tolist() for i in share]

    shares = [list(range(i, len(texts), 4)) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        for share, got in zip(shares, pool.map(run, shares), strict=True):
            assert got == [expected[i] for i in share]


@given(
    st.lists(
        st.sampled_from(
            [
                *("a", "Ab", "AB", "aB", "x2", "2", "0.5", "-", "--", ".", "/", "'", "'s", "s"),
                *("_", ":", "@", "=", "+", "#", " ", "Ünï", "ǅ", "İ", "the", "running", "IL"),
                "mRNA",
            ]
        ),
        max_size=30,
    ).map("".join),
    st.sampled_from(SPECS),
)
def test_raws_analysed_together_give_index_terms(text: str, spec: AnalyzerSpec) -> None:
    analyzer = Analyzer(spec)
    raws = raw_tokens_of(analyzer.scan_form(text))
    together = [t for terms in analyzer.index_terms_of_raws(raws) for t in terms]
    assert together == Analyzer(spec).index_terms(text)
