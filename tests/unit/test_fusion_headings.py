"""The heading rule: the forms a query's name stands under, the rows whose heading line
holds one, the adaptive fusion ranking them first below the exact tier, and the hybrid
reading heading lines from its index."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from conftest import DEBUG_PAGES, HashEncoder, PrefersTheTrait, hash_index, open_hybrid
from twokeys import open_index
from twokeys.analysis import Analyzer
from twokeys.fusion.adaptive import AdaptiveParams, QueryFeatures, adaptive_fusion
from twokeys.fusion.headings import headed_rows, name_forms, names
from twokeys.request import SearchRequest
from twokeys.retrievers.hybrid import HybridRetriever
from twokeys.types import ScoredChunk

QUERY = "DebugStruct helper for writing Debug implementations"
TERMS = Analyzer().index_terms


def run(*pairs: tuple[int, float]) -> list[ScoredChunk]:
    return [ScoredChunk(row, score, i + 1) for i, (row, score) in enumerate(pairs)]


def forms_of(query: str) -> frozenset[str]:
    analyzer = Analyzer()
    raws = [t.text for t in analyzer.tokens(query)]
    identifiers = [analyzer.query_terms(raw)[0] for raw in raws if _is_name(raw)]
    return name_forms(raws, identifiers, analyzer.query_terms)


def _is_name(raw: str) -> bool:
    return any(c in raw for c in ":._") or raw[1:] != raw[1:].lower()


def test_a_names_forms_are_its_whole_its_joined_parts_and_its_last_name() -> None:
    forms = forms_of("std::fmt::DebugStruct helper for Debug implementations")
    assert {"std::fmt::debugstruct", "fmt::debugstruct", "debugstruct"} <= forms
    assert not forms & {"std", "fmt", "debug", "struct", "helper"}  # plain words: never
    forms = forms_of("slice::from_raw_parts build a slice")
    assert {"slice::from_raw_parts", "from_raw_parts"} <= forms
    assert "slice" not in forms and "raw" not in forms
    # a last name that is a plain word is no form (many headings hold it)
    assert "stdin" not in forms_of("io::stdin lock read lines")
    assert forms_of("read lines from standard input") == frozenset()


def test_only_the_identifiers_words_give_forms() -> None:
    analyzer = Analyzer()
    raws = ["AtomicBool", "flag", "OnceCell"]
    forms = name_forms(raws, ["atomicbool"], analyzer.query_terms)  # OnceCell not matched
    assert forms == {"atomicbool"}


def lead(text: str) -> tuple[str, ...]:
    analyzer = Analyzer()
    tokens = analyzer.tokens(text)
    return analyzer.terms_of(tokens[0], for_query=False) if tokens else ()


def test_a_heading_names_what_its_innermost_heading_begins_with() -> None:
    assert names("DebugStruct in std::fmt", {"debugstruct"}, lead)
    assert names("Reference > html.stylesheet", {"html.stylesheet"}, lead)
    assert names("Struct std::fmt::DebugStruct", {"struct"}, lead)
    # mentioned inside a sentence, or in an outer heading only: not named
    assert not names("The DebugStruct helper in std::fmt", {"debugstruct"}, lead)
    assert not names("IL-10 > Results", {"il-10"}, lead)
    assert not names("Production of IL-10 by monocytes", {"il-10"}, lead)
    assert not names("", {"x"}, lead)


def test_headed_rows_read_each_heading_line_once_and_only_when_asked() -> None:
    lines = {
        1: ("fmt/struct.DebugStruct", "DebugStruct in std::fmt"),
        2: ("fmt/trait.Debug", "Debug in std::fmt"),
        3: ("fmt/struct.DebugStruct", "DebugStruct in std::fmt"),
        4: ("debug.md", "Debug > DebugStruct"),
    }
    asked: list[list[int]] = []

    def headings(rows: Sequence[int]) -> list[tuple[str, str]]:
        asked.append(list(rows))
        return [lines[r] for r in rows]

    found = headed_rows([1, 2, 3], headings, {"debugstruct"}, TERMS, lead)
    assert found == {1, 3} and asked == [[1, 2, 3]]
    assert headed_rows([1, 2], headings, set(), TERMS, lead) == frozenset()
    assert headed_rows([], headings, {"debugstruct"}, TERMS, lead) == frozenset()
    assert len(asked) == 1  # nothing read without forms or rows
    # a heading that holds the name's words but not the name: not headed
    assert headed_rows([2], headings, {"debugstruct"}, TERMS, lead) == frozenset()
    # two documents (or two sections) headed by the name: a topic they share, nothing
    # is singled out
    assert headed_rows([1, 3, 4], headings, {"debugstruct"}, TERMS, lead) == frozenset()
    assert headed_rows([2, 4], headings, {"debugstruct"}, TERMS, lead) == {4}
    lines[5] = ("debug.md", "Debug > DebugStruct > Examples")  # a second heading holds it
    assert headed_rows([4, 5], headings, {"debugstruct"}, TERMS, lead) == frozenset()
    # one heading holds it, but only mentions it
    lines[6] = ("debug.md", "Debug > The DebugStruct helper")
    assert headed_rows([2, 6], headings, {"debugstruct"}, TERMS, lead) == frozenset()


def test_headed_rows_rank_first_below_the_exact_tier() -> None:
    lexical = run((1, 20.0), (2, 19.0), (3, 15.0), (4, 14.0))
    dense = run((1, 0.70), (3, 0.60), (2, 0.50), (4, 0.40))
    features = QueryFeatures((), (), (), 1.0, 6, n_words=6)
    params = AdaptiveParams()
    plain = adaptive_fusion(lexical, dense, features, {}, params, depth=100, weight=0.45)
    assert [h.row for h in plain] == [1, 2, 3, 4]
    headed = adaptive_fusion(
        lexical, dense, features, {}, params, depth=100, weight=0.45, headed={3}
    )
    assert [h.row for h in headed] == [3, 1, 2, 4]
    assert [h.rank for h in headed] == [1, 2, 3, 4]
    # the exact tier stays above: among its rows and among the rest, headed ones first
    tiered = QueryFeatures(("x_y",), (), (), 1.0, 6, n_words=6)
    both = adaptive_fusion(
        lexical, dense, tiered, {2: 1, 4: 1}, params, depth=100, weight=0.45, headed={3, 4}
    )
    assert [h.row for h in both] == [4, 2, 3, 1]
    # a row outside the candidates is not lifted
    deep = adaptive_fusion(lexical, dense, features, {}, params, depth=2, weight=0.45, headed={4})
    assert [h.row for h in deep][-1] == 4


def _index_pages(tmp_path: Path, encoder: HashEncoder) -> Path:
    """The page about ``DebugStruct`` and the ``Debug`` trait's page, which uses it."""
    return hash_index(tmp_path, DEBUG_PAGES, encoder)


def test_the_hybrid_reads_its_chunks_heading_lines(tmp_path: Path) -> None:
    encoder = HashEncoder()
    with open_hybrid(_index_pages(tmp_path, encoder), encoder, QUERY) as (index, retriever):
        assert retriever.headings is not None
        read = list(retriever.headings([0, 1]))
        assert [doc for doc, _ in read] == [c.doc_id for c in index.backend.chunks([0, 1])]
        assert dict(read) == {"debugstruct.md": "DebugStruct", "debug.md": "Debug"}


def test_the_rule_decides_the_hybrids_order_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``Index.search``: BM25 and the dense model both put the page that uses the
    name first, so without the rule the hybrid does; with it, the page headed by it."""
    import twokeys.retrievers.hybrid as hybrid

    encoder = PrefersTheTrait()
    _index_pages(tmp_path, encoder)
    with open_index(tmp_path / "kb.twokeys", encoder=encoder) as index:
        assert index.search(QUERY, mode="dense", k=1)[0].path == "debug.md"
        assert index.search(QUERY, mode="bm25", k=1)[0].path == "debug.md"
        assert index.search(QUERY, mode="hybrid", k=1)[0].path == "debugstruct.md"
        # a one-word query is left to the bare-name rules: no heading is read
        bare = index.retriever(SearchRequest("DebugStruct"))
        assert isinstance(bare, HybridRetriever)

        def unread(rows: Sequence[int]) -> list[tuple[str, str]]:
            raise AssertionError("read")

        bare.headings = unread
        assert bare.retrieve("DebugStruct", 2).run[0].row in (0, 1)
        with pytest.raises(AssertionError, match="read"):
            bare.retrieve(QUERY, 2)
    monkeypatch.setattr(hybrid, "headed_rows", lambda *args: frozenset())
    with open_index(tmp_path / "kb.twokeys", encoder=encoder) as index:
        assert index.search(QUERY, mode="hybrid", k=1)[0].path == "debug.md"
