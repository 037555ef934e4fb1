"""Disagreements between two retrievers: which queries, in what order, who was right."""

from __future__ import annotations

import pytest

from twokeys.evaluation.disagreements import (
    TIE,
    RankedDoc,
    Side,
    find_disagreements,
    natural_key,
)

QUERIES = {"q1": "error ZX-4821", "q2": "money back", "q3": "reset", "q4": "warranty"}
QRELS = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 2, "x": 0}}
BM25 = Side(
    "bm25",
    {"q1": ["a", "x"], "q2": ["x", "y"], "q3": ["c", "x"], "q4": ["d", "x", "e", "f"]},
    {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 1.0},
)
DENSE = Side(
    "dense",
    {"q1": ["x", "y"], "q2": ["b", "x"], "q3": ["c", "y"], "q4": ["e", "d"]},
    {"q1": 0.0, "q2": 1.0, "q3": 1.0, "q4": 0.63},
)


def test_finds_and_orders_disagreements() -> None:
    found = find_disagreements(QUERIES, QRELS, BM25, DENSE)
    assert [d.query_id for d in found] == ["q1", "q2", "q4"]  # q3: same top-1, both found
    q1, q2, q4 = found
    assert q1.reason == "only bm25 has a relevant doc in its top 10" and q1.winner == "bm25"
    assert q2.reason == "only dense has a relevant doc in its top 10" and q2.winner == "dense"
    assert q4.reason == "top-1 differs" and q4.winner == "bm25"
    assert q1.query == "error ZX-4821" and (q1.left, q1.right) == ("bm25", "dense")
    assert q1.delta == -1.0 and q4.delta == pytest.approx(-0.37)
    assert q4.left_top == (RankedDoc("d", 2), RankedDoc("x", 0), RankedDoc("e", 0))
    assert q4.right_top == (RankedDoc("e", 0), RankedDoc("d", 2))


def test_depth_decides_what_counts_as_found() -> None:
    qrels = {"q": {"r": 1}}
    left = Side("bm25", {"q": ["r", "x"]}, {"q": 1.0})
    right = Side("dense", {"q": ["r", "y", "z"]}, {"q": 1.0})
    assert find_disagreements({}, qrels, left, right) == []  # same top-1, both found
    right_late = Side("dense", {"q": ["r"]}, {"q": 1.0})
    left_late = Side("bm25", {"q": ["x", "y", "r"]}, {"q": 0.5})
    found = find_disagreements({}, qrels, left_late, right_late, depth=2, shown=1)
    assert found[0].reason == "only dense has a relevant doc in its top 2"
    assert found[0].left_top == (RankedDoc("x", 0),) and found[0].query == ""


def test_equal_ndcg_is_a_tie_and_missing_rankings_count_as_empty() -> None:
    qrels = {"q10": {"r": 1}, "q2": {"r": 1}, "q9": {"r": 1}}
    left = Side("bm25", {"q10": ["x"], "q2": ["y"]}, {"q10": 0.0, "q2": 0.0})
    right = Side("dense", {"q10": ["y"], "q2": ["x"]}, {"q10": 0.0, "q2": 0.0})
    found = find_disagreements({}, qrels, left, right)
    assert [d.query_id for d in found] == ["q2", "q10"]  # q9: neither side has anything
    assert all(d.winner == TIE and d.reason == "top-1 differs" for d in found)


def test_natural_key_orders_numbers_numerically() -> None:
    assert sorted(["q10", "q2", "1", "b", "q1a"], key=natural_key) == [
        "1",
        "b",
        "q1a",
        "q2",
        "q10",
    ]
