"""The example knowledge base shows why both sensors are needed (real MiniLM encoder)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import SUPPORT_KB
from twokeys import IndexOptions, build_index, open_index
from twokeys.evaluation.runs import doc_rank

pytestmark = pytest.mark.slow

QUERIES = [
    json.loads(line)
    for line in (SUPPORT_KB / "queries.jsonl").read_text().splitlines()
    if line.strip()
]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], int | None]:
    index = tmp_path_factory.mktemp("kb") / "support.twokeys"
    report = build_index(SUPPORT_KB / "docs", index)
    assert report.documents >= 30 and not report.skipped
    out: dict[tuple[str, str], int | None] = {}
    with open_index(index) as kb:
        for q in QUERIES:
            for mode in ("bm25", "dense", "hybrid"):
                out[(q["id"], mode)] = doc_rank(
                    kb.search(q["query"], mode=mode, k=20), q["expected"]
                )
    return out


def _top1(ranks: dict[tuple[str, str], int | None], kind: str, mode: str) -> int:
    return sum(ranks[(q["id"], mode)] == 1 for q in QUERIES if q["kind"] == kind)


def test_query_set_shape() -> None:
    kinds = Counter(q["kind"] for q in QUERIES)
    assert len(QUERIES) >= 20 and kinds["identifier"] >= 10 and kinds["paraphrase"] >= 10
    for q in QUERIES:
        assert (SUPPORT_KB / "docs" / q["expected"]).is_file(), q


def test_bm25_wins_the_identifier_queries(ranks: dict[Any, int | None]) -> None:
    identifiers = [q for q in QUERIES if q["kind"] == "identifier"]
    assert all(ranks[(q["id"], "bm25")] == 1 for q in identifiers), [
        (q["query"], ranks[(q["id"], "bm25")]) for q in identifiers
    ]
    assert _top1(ranks, "identifier", "bm25") > _top1(ranks, "identifier", "dense")


def test_dense_wins_the_paraphrase_queries(ranks: dict[Any, int | None]) -> None:
    assert _top1(ranks, "paraphrase", "dense") > _top1(ranks, "paraphrase", "bm25") + 5


def test_hybrid_ranks_identifiers_first(ranks: dict[Any, int | None]) -> None:
    identifiers = [q for q in QUERIES if q["kind"] == "identifier"]
    assert [
        (q["query"], ranks[(q["id"], "hybrid")])
        for q in identifiers
        if ranks[(q["id"], "hybrid")] != 1
    ] == []


def test_hybrid_has_the_expected_document_in_its_top_3(ranks: dict[Any, int | None]) -> None:
    misses = [
        (q["id"], q["query"], ranks[(q["id"], "hybrid")])
        for q in QUERIES
        if not (ranks[(q["id"], "hybrid")] or 99) <= 3
    ]
    assert misses == []


def test_identifier_code_never_returns_its_twin(tmp_path: Path) -> None:
    index = tmp_path / "lex.twokeys"
    build_index(SUPPORT_KB / "docs", index, IndexOptions(encoder=None))
    with open_index(index) as kb:
        docs = {h.doc_id for h in kb.search("ZX-4821", mode="bm25", k=50)}
    assert "errors/zx-4821.md" in docs
    assert "errors/zx-4812.md" not in docs


def _error_pages() -> dict[str, tuple[str, str]]:
    """Each error page of the KB: its code and its title's words (``# Error CODE: words``)."""
    out = {}
    for page in sorted((SUPPORT_KB / "docs" / "errors").glob("*.md")):
        code, words = page.read_text().splitlines()[0].removeprefix("# Error ").split(": ", 1)
        out[f"errors/{page.name}"] = (code, words.lower())
    return out


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("kb-codes") / "support.twokeys"
    build_index(SUPPORT_KB / "docs", index)
    return index


def test_a_code_beside_words_finds_its_page_not_its_near_miss(kb_path: Path) -> None:
    """The issue's own example, and a code asked with the words of a near-miss code's page
    (``ZX-4821 firmware signature check failed``): both sensors rank the near-miss page
    first (the words; a code read as pieces), the hybrid ranks the page of the code the
    query names above every page of a near-miss code (:mod:`twokeys.fusion.nearmiss`)."""
    pages = _error_pages()
    queries = [("ZX-4821 after firmware update", "errors/zx-4821.md")] + [
        (f"{code} {pages[other][1]}", page)
        for page, (code, _) in pages.items()
        for other, (near, _) in pages.items()
        if other != page and near.split("-")[0] == code.split("-")[0]
    ]
    assert len(queries) >= 10
    with open_index(kb_path) as kb:
        first = {mode: 0 for mode in ("bm25", "dense", "hybrid")}
        for query, page in queries:
            page_code = pages[page][0]
            for mode in first:
                first[mode] += doc_rank(kb.search(query, mode=mode, k=20), page) == 1
            hits = [h.doc_id for h in kb.search(query, mode="hybrid", k=20)]
            near_misses = [
                d for d in hits if d in pages and d != page and pages[d][0][:2] == page_code[:2]
            ]
            assert page in hits, query
            assert not near_misses or hits.index(page) < hits.index(near_misses[0]), query
        assert doc_rank(kb.search(queries[0][0], mode="hybrid", k=5), queries[0][1]) == 1
    assert first["hybrid"] > max(first["bm25"], first["dense"]) + len(queries) // 2, first
