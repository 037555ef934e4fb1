"""The PDF page benchmark's query splits: ``native --splits train`` searches no test query."""

from __future__ import annotations

from benchmarks.pdf_pages import split_of, written


def test_written_keeps_only_the_splits_asked_for() -> None:
    train, test, both = written(("train",)), written(("test",)), written()
    assert train and test
    assert all(split_of(f"{name}#p{page}") == "train" for name, page, _, _ in train)
    assert all(split_of(f"{name}#p{page}") == "test" for name, page, _, _ in test)
    assert len(train) + len(test) == len(both) == 436
    assert {tuple(q) for q in train} | {tuple(q) for q in test} == {tuple(q) for q in both}


def test_both_queries_of_a_page_fall_in_one_split() -> None:
    pages = {(name, page) for name, page, _, _ in written(("train",))}
    assert pages.isdisjoint((name, page) for name, page, _, _ in written(("test",)))
