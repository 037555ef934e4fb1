"""The analyzer's behaviour on the identifiers this product exists for."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from twokeys.analysis import Analyzer, AnalyzerSpec
from twokeys.errors import ConfigError

A = Analyzer()

# (input, index terms, query terms)
TABLE = [
    ("ZX-4821", ["zx-4821", "zx", "4821"], ["zx-4821"]),
    ("nomic-embed-text", ["nomic-embed-text", "nomic", "emb", "text"], None),
    ("mxbai-embed-large", ["mxbai-embed-large", "mxbai", "emb", "larg"], None),
    ("qwen2.5:14b", ["qwen2.5:14b", "qwen2.5", "qwen2", "5", "14b"], ["qwen2.5:14b"]),
    ("--unrestricted", ["--unrestricted", "unrestrict"], None),
    ("-v", ["-v", "v"], None),
    ("v3.3", ["v3.3", "v3", "3"], ["v3.3"]),
    ("1.2.10", ["1.2.10", "1", "2", "10"], ["1.2.10"]),
    ("format:json", ["format:json", "format", "json"], None),
    ("foo.bar_baz()", ["foo.bar_baz", "foo", "bar", "baz"], None),
    # a :: path: its shorter paths, and its last name when an identifier
    (
        "std::fmt::DebugStruct",
        [
            *("std::fmt::debugstruct", "fmt::debugstruct", "debugstruct"),
            *("std", "fmt", "debug", "struct"),
        ],
        None,
    ),
    ("std::fs::Metadata", ["std::fs::metadata", "fs::metadata", "std", "fs", "metadata"], None),
    ("HashMap::new", ["hashmap::new", "hash", "map", "new"], None),  # "new": a word
    ("unittest.mock.patch", ["unittest.mock.patch", "unittest", "mock", "patch"], None),
    ("SSL_CTX_new", ["ssl_ctx_new", "ssl", "ctx", "new"], None),
    ("CPU_OR", ["cpu_or", "cpu"], None),  # "or" is a stopword as a part
    ("C++", ["c++", "c"], None),
    ("C#", ["c#", "c"], None),
    (".NET", [".net", "net"], None),
    ("40P01", ["40p01"], None),
    ("192.168.0.1", ["192.168.0.1", "192", "168", "0", "1"], ["192.168.0.1"]),
    (
        "/etc/grub.d/40_custom",
        ["/etc/grub.d/40_custom", "grub.d", "40_custom", "etc", "grub", "d", "40", "custom"],
        ["/etc/grub.d/40_custom"],
    ),
    ("user@example.com", ["user@example.com", "example.com", "user", "exampl", "com"], None),
    ("camelCaseName", ["camelcasename", "camel", "case", "name"], None),
    ("don't", [], None),  # a Snowball stopword
    ("O'Reilly's books", ["o'reilli", "book"], None),
    ("the user's guides", ["user", "guid"], None),
    ("Running dogs", ["run", "dog"], None),
]


@pytest.mark.parametrize(("text", "index_terms", "query_terms"), TABLE, ids=[t[0] for t in TABLE])
def test_identifier_table(text: str, index_terms: list[str], query_terms: list[str] | None) -> None:
    assert A.index_terms(text) == index_terms
    assert A.query_terms(text) == (index_terms if query_terms is None else query_terms)


def test_a_shortened_path_meets_the_full_one() -> None:
    """``fs::Metadata`` and ``DebugStruct`` as a reader writes them find the page that
    writes ``std::fs::Metadata`` or ``std::fmt::DebugStruct`` in full, whole term to whole
    term, and not the page naming another item of the same module; dotted names are
    left as they were."""
    page = set(A.index_terms("Struct std::fs::Metadata: metadata information about a file"))
    assert A.query_terms("fs::Metadata")[0] in page
    assert A.query_terms("DebugStruct")[0] in set(A.index_terms("Struct std::fmt::DebugStruct"))
    assert A.query_terms("mock.patch")[0] not in set(A.index_terms("unittest.mock.patch()"))
    assert A.query_terms("fs::Metadata")[0] not in set(A.index_terms("std::fs::metadata_ext"))
    # numbers and versions are no qualified names: no shorter forms
    assert "2.10" not in A.index_terms("release 1.2.10")


def test_code_never_matches_its_near_twin() -> None:
    query = set(A.query_terms("ZX-4821"))
    assert query.isdisjoint(A.index_terms("see error ZX-4812 for details"))
    assert query <= set(A.index_terms("error ZX-4821: undervoltage"))


def test_bare_number_finds_the_code_through_its_part() -> None:
    assert set(A.query_terms("4821")) <= set(A.index_terms("error ZX-4821"))
    assert set(A.query_terms("4821")).isdisjoint(A.index_terms("error ZX-4812"))


def test_identifier_in_sentence_keeps_punctuation_out() -> None:
    terms = A.index_terms("Set format:json, then run qwen2.5:14b. Call SSL_CTX_new().")
    assert "format:json" in terms
    assert "qwen2.5:14b" in terms
    assert "ssl_ctx_new" in terms
    assert not any(t.endswith((".", ",", "(")) for t in terms)


def test_compound_of_codes_exposes_each_code() -> None:
    assert {"zx-4821", "zx-4812"} <= set(A.index_terms("ZX-4821/ZX-4812"))


def test_identifiers_are_not_stemmed_but_words_are() -> None:
    assert A.index_terms("running") == ["run"]
    assert "running_jobs" in A.index_terms("running_jobs")


def test_accents_and_non_latin_text() -> None:
    assert A.index_terms("Café naïve") == ["café", "naïv"]
    assert A.index_terms("Привет мир") == ["привет", "мир"]
    assert A.index_terms("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert A.index_terms("") == []
    assert A.index_terms("!!! ... ---") == []


def test_curly_apostrophe_and_unicode_dash_normalised() -> None:
    keep = Analyzer(AnalyzerSpec(stopwords="none"))
    assert keep.index_terms("don\u2019t") == ["don't"]
    assert A.index_terms("ZX\u20114821")[0] == "zx-4821"


def test_configurable_stemming_and_stopwords() -> None:
    plain = Analyzer(AnalyzerSpec(stemmer="none", stopwords="none"))
    assert plain.index_terms("The running dogs") == ["the", "running", "dogs"]
    porter = Analyzer(AnalyzerSpec(stemmer="porter"))
    assert porter.index_terms("generously") == ["gener"]


def test_spec_validation_names_the_field() -> None:
    with pytest.raises(ConfigError, match="analyzer.stemmer"):
        AnalyzerSpec(stemmer="klingon")
    with pytest.raises(ConfigError, match="unknown field"):
        AnalyzerSpec.from_dict({"stemer": "english"})
    with pytest.raises(ConfigError, match="analyzer.lowercase"):
        AnalyzerSpec.from_dict({"lowercase": "yes"})
    spec = AnalyzerSpec(stopwords="none")
    assert AnalyzerSpec.from_dict(spec.to_dict()) == spec


# Fragments for random text: identifiers, CJK, accents, curly quotes, odd punctuation.
FRAGMENTS = [
    *(row[0] for row in TABLE),
    "東京タワー",
    "東",
    "東京ZX-4821",
    "ZX-4821東京",
    "한국어",
    "ｆｕｌｌｗｉｄｔｈ",
    "Ｘ－１",
    "naïve",
    "Café's",
    "Ærøskøbing",
    "Привет",
    "don\u2019t",
    "O\u2018Brien",
    "ZX\u20114821",
    "a\u2013b",
    "x\u02bcs",
    "CamelCaseHTTPServer",
    "HTTP",
    "user's",
    "users'",
    "'quoted'",
    "---",
    "--",
    "-",
    "__init__",
    "C#.",
    "e.g.",
    "p<0.05",
    "IL-2R\u03b1",
    "10\u00b5m",
    "ﬁle",
    "12",
    "the",
    "running",
]
SEPARATORS = [" ", "  ", "\n", ", ", ". ", "(", ")", "/", ":", "-", "", "'", "\u3000", "\t"]


def random_texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 12)):
            parts.append(rng.choice(FRAGMENTS))
            parts.append(rng.choice(SEPARATORS))
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize(
    "spec",
    [
        AnalyzerSpec(),
        AnalyzerSpec(stemmer="porter", stopwords="lucene"),
        AnalyzerSpec(lowercase=False, identifier_parts=False, cjk_bigrams=False),
    ],
    ids=["default", "lucene", "plain"],
)
def test_fast_path_equals_token_by_token_analysis(spec: AnalyzerSpec) -> None:
    analyzer = Analyzer(spec)
    for text in random_texts(seed=4, n=600):
        tokens = analyzer.tokens(text)
        for for_query, fast in ((False, analyzer.index_terms), (True, analyzer.query_terms)):
            expected = [t for tok in tokens for t in analyzer.terms_of(tok, for_query=for_query)]
            assert fast(text) == expected, text
            assert fast(text) == expected, text  # again, from the memoised terms


def test_term_cache_is_bounded() -> None:
    analyzer = Analyzer()
    analyzer._index_cache._limit = 3
    text = "alpha beta gamma delta ZX-4821 epsilon"
    assert analyzer.index_terms(text) == A.index_terms(text)
    assert len(analyzer._index_cache) == 3
    assert analyzer.index_terms(text) == A.index_terms(text)


def test_cjk_first_is_where_the_cjk_pattern_starts() -> None:
    from twokeys.analysis import _CJK, _CJK_FIRST

    assert _CJK.fullmatch(chr(_CJK_FIRST))
    assert not any(_CJK.search(chr(code)) for code in range(_CJK_FIRST))


@given(st.text(alphabet=st.sampled_from("aé\u03a3\u303f\u3040\u30ff\u4e00\uac00\ufaff\U0001f600 ")))
def test_has_cjk_is_the_patterns_search(text: str) -> None:
    from twokeys.analysis import _CJK, _has_cjk

    assert _has_cjk(text) == (_CJK.search(text) is not None)


_IDENTIFIER_TEXT = st.lists(
    st.sampled_from(
        [
            *("a", "Ab", "AB", "aB", "x2", "2", "0", "é", "Σ", "ǅ", "İ", "²", "-", "--"),
            *(".", "/", "_", ":", "@", "=", "+", "++", "#", "'", " "),
        ]
    ),
    max_size=24,
).map("".join)


@given(_IDENTIFIER_TEXT)
def test_identifier_split_equals_the_patterns_split(text: str) -> None:
    from twokeys.analysis import _RAW_TOKEN, _split_identifier, _split_identifier_by_patterns

    for raw in _RAW_TOKEN.findall(text):
        segments, pieces = _split_identifier(raw)
        ref_segments, ref_pieces = _split_identifier_by_patterns(raw)
        assert list(segments) == list(ref_segments)
        assert [p for p in pieces if p] == [p for p in ref_pieces if p]


@given(st.text(alphabet=st.sampled_from("aBzZé\u00c9\u01c5\u0130\u03a3\u03c3\u00df2_"), max_size=8))
def test_a_piece_lowercase_after_its_first_character_has_no_camel_hump(piece: str) -> None:
    # the premise of _parts' flat test: such a piece is not split by _CAMEL
    from twokeys.analysis import _CAMEL

    if piece[1:].islower():
        assert _CAMEL.split(piece) == [piece]
