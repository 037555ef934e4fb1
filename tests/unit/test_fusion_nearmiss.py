"""The near-miss rule: a chunk writing ``ZX-4812`` and not ``ZX-4821`` is not what a query
naming ``ZX-4821`` asks for (:mod:`twokeys.fusion.nearmiss`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from conftest import CODE_PAGES, ReadsCodesByPieces, hash_index
from twokeys import open_index
from twokeys.fusion.adaptive import AdaptiveParams, QueryFeatures, adaptive_fusion
from twokeys.fusion.nearmiss import is_code, near_miss_rows, shape
from twokeys.types import ScoredChunk


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("ZX-4821", True), ("v3.3", True), ("qwen2.5:14b", True), ("2024", False), ("update", False)],
)
def test_a_code_holds_a_digit_and_something_else(raw: str, expected: bool) -> None:
    assert is_code(raw) is expected


@pytest.mark.parametrize(
    ("code", "near", "far"),
    [
        (
            "ZX-4821",
            ["ZX-4812", "zx-1234", "(ZX-0000)"],
            ["ZX-48210", "AZX-4812", "ZX-481", "ZY-4812"],
        ),
        ("v3.3", ["v3.2", "V9.9"], ["v3.30", "v33", "xv3.2"]),
        ("qwen2.5:14b", ["qwen2.5:32b", "qwen3.0:70b"], ["qwen2.5:7b", "qwen2.5-14b"]),
    ],
)
def test_the_shape_keeps_letters_and_separators_and_counts_digits(
    code: str, near: list[str], far: list[str]
) -> None:
    pattern = re.compile(shape(code), re.I)
    assert pattern.search(code)
    for text in near:
        assert pattern.search(f"see {text} here"), text
    for text in far:
        assert not pattern.search(f"see {text} here"), text


def test_rows_writing_only_a_near_miss_are_found() -> None:
    texts = {
        1: "Error ZX-4812: firmware signature check failed",  # near-miss only
        2: "Error ZX-4821: power supply undervoltage",  # the code itself
        3: "Codes ZX-4812 and zx-4821 both appear in the event log",  # both: not moved
        4: "A firmware update without any code",  # no code at all
    }
    read_rows: list[Sequence[int]] = []

    def read(rows: Sequence[int]) -> list[str]:
        read_rows.append(rows)
        return [texts[r] for r in rows]

    assert near_miss_rows(["ZX-4821"], [1, 2, 3, 4], read) == {1}
    assert near_miss_rows(["after", "update"], [1, 2, 3, 4], read) == frozenset()
    assert near_miss_rows([], [1, 2], read) == frozenset()
    assert read_rows == [[1, 2, 3, 4]]  # nothing is read for a query without a code


def _hits(rows: Sequence[int]) -> list[ScoredChunk]:
    return [ScoredChunk(row, 1.0 - 0.1 * i, i + 1) for i, row in enumerate(rows)]


def test_near_misses_rank_below_the_other_candidates() -> None:
    lexical, dense = _hits([1, 2, 3]), _hits([1, 3, 2])
    features = QueryFeatures(("zx-4821",), (), (), 1.0, 4, n_words=4)
    params = AdaptiveParams()
    plain = adaptive_fusion(lexical, dense, features, {}, params, depth=100, weight=0.45)
    assert plain[0].row == 1
    moved = adaptive_fusion(
        lexical, dense, features, {}, params, depth=100, weight=0.45, near_miss={1}
    )
    assert [h.row for h in moved] == [*(h.row for h in plain if h.row != 1), 1]
    # a near-miss inside the candidates still ranks above the chunks outside them
    deep = adaptive_fusion(
        _hits([1, 2, 3, 4]),
        _hits([1, 3, 2, 4]),
        features,
        {},
        params,
        depth=3,
        weight=0.45,
        near_miss={1},
    )
    assert [h.row for h in deep][2:] == [1, 4] and {h.row for h in deep[:2]} == {2, 3}


QUERY = "ZX-4821 after firmware update"


def test_the_rule_decides_the_hybrids_order_end_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``Index.search``: both sensors put the ZX-4812 page first (BM25 for the
    words, the dense model for the words and the code's pieces); the hybrid answers with
    the page of the code the query names, and without the rule it did not."""
    import twokeys.retrievers.hybrid as hybrid

    encoder = ReadsCodesByPieces()
    path = hash_index(tmp_path, CODE_PAGES, encoder)
    with open_index(path, encoder=encoder) as index:
        assert index.search(QUERY, mode="bm25", k=1)[0].path == "zx-4812.md"
        assert index.search(QUERY, mode="dense", k=1)[0].path == "zx-4812.md"
        assert index.search(QUERY, mode="hybrid", k=1)[0].path == "zx-4821.md"
        assert index.search("ZX-4812 after firmware update", mode="hybrid", k=1)[0].path == (
            "zx-4812.md"
        )
    monkeypatch.setattr(hybrid, "near_miss_rows", lambda *args: frozenset())
    with open_index(path, encoder=encoder) as index:
        assert index.search(QUERY, mode="hybrid", k=1)[0].path == "zx-4812.md"


def test_the_rules_read_each_rows_text_and_heading_once_a_query(tmp_path: Path) -> None:
    """The verbatim, heading and near-miss rules read overlapping rows for a code beside
    words; the hybrid fetches each row's text and heading line once a query, in batches,
    and answers as before."""
    from twokeys import SearchRequest
    from twokeys.retrievers.hybrid import HybridRetriever

    encoder = ReadsCodesByPieces()
    path = hash_index(tmp_path, CODE_PAGES, encoder)
    with open_index(path, encoder=encoder) as index:
        retriever = index.retriever(SearchRequest(QUERY))
        assert isinstance(retriever, HybridRetriever)
        assert retriever.texts is not None and retriever.headings is not None
        fetched: dict[str, list[int]] = {"texts": [], "headings": []}
        texts, headings = retriever.texts, retriever.headings

        def read_texts(rows: Sequence[int]) -> Sequence[str]:
            fetched["texts"] += rows
            return texts(rows)

        def read_headings(rows: Sequence[int]) -> Sequence[tuple[str, str]]:
            fetched["headings"] += rows
            return headings(rows)

        retriever.texts, retriever.headings = read_texts, read_headings
        for _ in range(2):  # the memo lives for one query: the second reads again
            first = retriever.retrieve(QUERY, 1).run[0].row
            assert index.backend.chunks([first])[0].doc_id == "zx-4821.md"
        for name, rows in fetched.items():
            assert rows, name  # the rules did read
            once = rows[: len(rows) // 2]
            assert sorted(once) == sorted(set(once)) and rows == once + once, name
