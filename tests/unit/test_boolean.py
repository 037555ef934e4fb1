"""Boolean queries: the parser, analysis into index terms, and evaluation on a tiny index."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from conftest import write_docs
from twokeys import IndexOptions, build_index, open_index
from twokeys.analysis import Analyzer
from twokeys.engine import Index
from twokeys.errors import QuerySyntaxError
from twokeys.lexical import boolean
from twokeys.lexical.boolean import (
    And,
    AndQuery,
    Node,
    Not,
    Or,
    Phrase,
    PhraseQuery,
    Query,
    TermQuery,
    Word,
    compile_query,
    parse,
    positive_terms,
)
from twokeys.request import SearchRequest


def show(node: Node | Query | None) -> str:
    """A compact s-expression of a syntax or query tree."""
    if node is None:
        return "-"
    if isinstance(node, Word | TermQuery):
        return node.text if isinstance(node, Word) else node.term
    if isinstance(node, Phrase):
        return f'"{node.text}"'
    if isinstance(node, PhraseQuery):
        return '"' + " ".join(node.terms) + '"'
    if isinstance(node, Not | boolean.NotQuery):
        return f"(NOT {show(node.operand)})"
    op = "AND" if isinstance(node, And | AndQuery) else "OR"
    return f"({op} " + " ".join(show(o) for o in node.operands) + ")"


# -- parser --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "tree"),
    [
        ("power", "power"),
        ("power supply", "(AND power supply)"),
        ("power AND supply", "(AND power supply)"),
        ("power OR supply fuse", "(OR power (AND supply fuse))"),
        ("power supply OR fuse", "(OR (AND power supply) fuse)"),
        ("a OR b AND c OR d", "(OR a (AND b c) d)"),
        ("NOT power supply", "(AND (NOT power) supply)"),
        ("power -firmware", "(AND power (NOT firmware))"),
        ("power NOT NOT fuse", "(AND power (NOT (NOT fuse)))"),
        ("(power OR supply) fuse", "(AND (OR power supply) fuse)"),
        ("power -(fuse OR alarm)", "(AND power (NOT (OR fuse alarm)))"),
        ('"ZX-4821 undervoltage" power', '(AND "ZX-4821 undervoltage" power)'),
        ('-"power supply"', '(NOT "power supply")'),
        ("ZX-4821 --force", "(AND ZX-4821 --force)"),
        ("power and supply", "(AND power and supply)"),  # lower case: plain words
        ("power - supply", "(AND power - supply)"),
    ],
)
def test_parse_precedence_and_forms(query: str, tree: str) -> None:
    assert show(parse(query)) == tree


def test_parse_records_columns() -> None:
    node = parse('power "zx-4821 fault"')
    assert node == And((Word("power", 1), Phrase("zx-4821 fault", 7)))
    assert parse("NOT a") == Not(Word("a", 5))
    assert parse("a OR b") == Or((Word("a", 1), Word("b", 6)))


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("power (fault))", "unbalanced parenthesis at column 14"),
        ("(power OR fault", "unbalanced parenthesis at column 1"),
        ("power AND (fault OR supply", "unbalanced parenthesis at column 11"),
        (") power", "unbalanced parenthesis at column 1"),
        ('power "zx-4821 fault', "unterminated quote at column 7"),
        ("power AND", "missing term after AND at column 7"),
        ("power AND OR fuse", "missing term after AND at column 7"),
        ("OR power", "missing term before OR at column 1"),
        ("power OR", "missing term after OR at column 7"),
        ("power NOT", "missing term after NOT at column 7"),
        ("power (NOT)", "missing term after NOT at column 8"),
        ("power ()", "empty parentheses at column 7"),
        ('power ""', "empty phrase at column 7"),
        ("   ", "the query is empty"),
    ],
)
def test_syntax_errors_name_the_column(query: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse(query)
    assert str(info.value) == f"query syntax: {message}"


# -- analysis ------------------------------------------------------------------------

ANALYZER = Analyzer()


def compiled(query: str) -> str:
    return show(compile_query(query, ANALYZER.query_terms))


def test_words_become_index_terms() -> None:
    assert compiled("Supplies ZX-4821") == "(AND suppli zx-4821)"
    # an alphabetic identifier analyses to itself and its parts: all are required
    assert compiled("nomic-embed-text") == "(AND nomic-embed-text nomic emb text)"
    assert compiled('"power supplies"') == '"power suppli"'
    assert compiled('"ZX-4821"') == "zx-4821"


def test_stopwords_are_dropped_with_their_operators() -> None:
    assert compiled("the power") == "power"
    assert compiled("power OR the") == "power"
    assert compiled("power -the") == "power"
    assert compiled("power (the OR of) fuse") == "(AND power fuse)"
    assert compiled('"the power of the supply"') == '"power suppli"'


def test_empty_and_negative_only_queries_are_errors() -> None:
    with pytest.raises(QuerySyntaxError, match="no searchable terms"):
        compile_query("the OF and", ANALYZER.query_terms)
    with pytest.raises(QuerySyntaxError, match="at least one positive term"):
        compile_query("NOT power", ANALYZER.query_terms)
    with pytest.raises(QuerySyntaxError, match="at least one positive term"):
        compile_query("-power -(fuse OR alarm)", ANALYZER.query_terms)


def test_positive_terms_follow_negation_parity() -> None:
    tree = compile_query('power NOT (fuse OR NOT supply) "power alarm"', ANALYZER.query_terms)
    assert positive_terms(tree) == ("power", "suppli", "alarm")


def test_contains_sequence() -> None:
    assert boolean.contains_sequence(["a", "b", "c"], ["b", "c"])
    assert not boolean.contains_sequence(["a", "b", "c"], ["a", "c"])
    assert not boolean.contains_sequence(["a"], ["a", "b"])


# -- evaluation on a tiny index --------------------------------------------------------

DOCS = {
    "a.md": "# Power\n\n## ZX-4821\n\nUndervoltage on the power supply. Replace the fuse.\n",
    "b.md": "# Firmware\n\n## ZX-4812\n\nSignature check failed after the firmware update.\n",
    "c.md": "# Supply chain\n\nOur supply team knows the power of planning.\n",
    "d.md": "# Alarms\n\nUndervoltage alarms are unrelated to ZX-4821 firmware.\n",
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    root = tmp_path_factory.mktemp("boolean")
    src = write_docs(root / "docs", DOCS)
    build_index(src, root / "kb.twokeys", IndexOptions(encoder=None))
    with open_index(root / "kb.twokeys") as index:
        yield index


def docs(kb: Index, query: str) -> list[str]:
    return [hit.doc_id for hit in kb.search(query, mode="boolean", k=10)]


def test_and_or_not_sets(kb: Index) -> None:
    assert sorted(docs(kb, "power supply")) == ["a.md", "c.md"]
    assert sorted(docs(kb, "power AND fuse")) == ["a.md"]
    assert sorted(docs(kb, "fuse OR firmware")) == ["a.md", "b.md", "d.md"]
    assert sorted(docs(kb, "power -fuse")) == ["c.md"]
    assert sorted(docs(kb, "power NOT fuse")) == ["c.md"]
    assert sorted(docs(kb, "(undervoltage OR signature) -firmware")) == ["a.md"]
    assert sorted(docs(kb, "firmware OR NOT power")) == ["b.md", "d.md"]
    assert docs(kb, "power AND firmware AND fuse") == []
    assert docs(kb, "nosuchterm OR otherterm") == []


def test_phrase_needs_adjacent_words(kb: Index) -> None:
    assert docs(kb, '"power supply"') == ["a.md"]  # c.md has both words, not together
    assert docs(kb, '"supply power"') == []
    assert docs(kb, '"ZX-4821 undervoltage"') == ["a.md"]  # heading line, then body
    assert sorted(docs(kb, "ZX-4821 undervoltage")) == ["a.md", "d.md"]
    assert docs(kb, '"undervoltage alarms" ZX-4821') == ["d.md"]


def test_identifiers_match_whole(kb: Index) -> None:
    assert docs(kb, "ZX-4812") == ["b.md"]
    assert sorted(docs(kb, "ZX-4821")) == ["a.md", "d.md"]
    assert sorted(docs(kb, "zx-4821 -ZX-4812")) == ["a.md", "d.md"]
    assert sorted(docs(kb, "4821")) == ["a.md", "d.md"]  # a part of ZX-4821, not of ZX-4812


def test_matches_ranked_by_bm25_with_evidence(kb: Index) -> None:
    result = kb.retriever(SearchRequest.parse("q", "boolean")).retrieve(
        "power OR firmware", 10, explain=True
    )
    bm25 = {h.row: h.score for h in kb.backend.lexical.search(["power", "firmwar"], 100)}
    assert sorted(bm25) == sorted(h.row for h in result.run)
    assert [h.score for h in result.run] == pytest.approx([bm25[h.row] for h in result.run])
    keys = [(-h.score, h.row) for h in result.run]
    assert keys == sorted(keys)
    assert [h.rank for h in result.run] == [1, 2, 3, 4]
    top = result.evidence[result.run[0].row][0]
    assert top.retriever == "boolean"
    assert sum(w for _, w in top.matched_terms) == pytest.approx(result.run[0].score, rel=1e-5)
    # a match without any positive term still ranks, after the scored ones, by row
    hits = kb.search("fuse OR NOT firmware", mode="boolean", k=10)
    assert [h.doc_id for h in hits] == ["a.md", "c.md"]
    assert hits[0].score > 0 and hits[1].score == 0.0
    assert len(kb.search("power", mode="boolean", k=1)) == 1


def test_syntax_errors_surface_from_search(kb: Index) -> None:
    with pytest.raises(QuerySyntaxError, match="column 7"):
        kb.search("power (fuse", mode="boolean")
    with pytest.raises(QuerySyntaxError, match="positive term"):
        kb.search("-power", mode="boolean")


def test_evaluate_with_fake_postings() -> None:
    postings = {"a": [0, 2, 4], "b": [2, 3], "c": [4]}

    def lookup(term: str) -> boolean.Rows:
        return np.asarray(postings.get(term, []), np.int64)

    def verify(rows: boolean.Rows, phrase: tuple[str, ...]) -> boolean.Rows:
        return rows[rows != 2]

    def run(query: str) -> list[int]:
        tree = compile_query(query, lambda text: text.split())
        return boolean.evaluate(tree, lookup, 5, verify).tolist()

    assert run("a b") == [2]
    assert run("a OR b") == [0, 2, 3, 4]
    assert run("a -b") == [0, 4]
    assert run("a OR NOT b") == [0, 1, 2, 4]
    assert run('"a b"') == []  # the candidate row 2 fails verification
    assert run('"a c" OR b') == [2, 3, 4]
    assert run("a -(b OR c)") == [0]
    assert run("a zzz") == []
