"""The page features of the answer evidence (twokeys.rag.evidence): how much of the
fused top the first hit's page holds, and the score gap to the best other page."""

from __future__ import annotations

import pytest

from twokeys.rag.evidence import PAGE_TOP, _pages
from twokeys.types import Chunk, Hit


def _hit(rank: int, doc: str, score: float) -> Hit:
    chunk = Chunk(doc, rank, f"text {rank}", 0, 6)
    return Hit(rank, score, chunk, doc, doc)


def _run(*pages: tuple[str, float]) -> list[Hit]:
    return [_hit(n, doc, score) for n, (doc, score) in enumerate(pages)]


def test_share_and_margin_are_read_against_the_first_hits_page() -> None:
    hits = _run(("a", 1.0), ("a", 0.9), ("b", 0.6), ("a", 0.5), ("c", 0.4))
    share, margin = _pages(hits)
    assert share == pytest.approx(3 / 5)
    assert margin == pytest.approx((1.0 - 0.6) / 1.0)  # b's best, not a's second chunk


def test_share_reads_the_first_ten_hits_only() -> None:
    hits = _run(*([("a", 1.0)] + [("b", 0.5)] * (PAGE_TOP - 1) + [("a", 0.4)] * 5))
    assert _pages(hits)[0] == pytest.approx(1 / PAGE_TOP)


def test_one_page_gives_a_full_share_and_margin() -> None:
    assert _pages(_run(("a", 2.0), ("a", 1.0))) == (1.0, 1.0)
    assert _pages(_run(("a", 2.0))) == (1.0, 1.0)


def test_no_hits_or_no_positive_score_give_no_margin() -> None:
    assert _pages([]) == (0.0, 0.0)
    assert _pages(_run(("a", 0.0), ("b", 0.0))) == (0.5, 0.0)
