"""The PDF page benchmark's query splits: ``native --splits train`` searches no test query."""

from __future__ import annotations

from pathlib import Path

import pytest
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


def test_paired_differences_count_the_queries_that_differ() -> None:
    from benchmarks.pdf_pages import paired_differences

    a = {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 1.0, "only-a": 1.0}
    b = {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 0.0, "only-b": 0.0}
    found = paired_differences(a, b)
    assert found["queries"] == 4 and found["differ"] == 3
    assert (found["a_above"], found["a_below"]) == (1, 2)
    assert found["mean_difference"] == 0.0
    assert found["sign_test_p"] == 1.0 and found["permutation_p"] == 1.0
    same = paired_differences({"q": 0.5}, {"q": 0.5})
    assert same["differ"] == 0 and same["permutation_p"] == 1.0
    one_sided = paired_differences(
        {f"q{i}": 1.0 for i in range(10)}, {f"q{i}": 0.0 for i in range(10)}
    )
    assert one_sided["sign_test_p"] < 0.01 and one_sided["permutation_p"] < 0.01


def test_last_keeps_the_last_lines_of_the_file_in_their_splits() -> None:
    both = written()
    assert written(last=0) == both
    assert written(last=10) == both[-10:]
    assert written(last=len(both) + 5) == both  # more than the file holds: all of it
    with pytest.raises(ValueError, match="last"):
        written(last=-10)  # not the lines after the first ten
    lines = (Path(__file__).parents[2] / "benchmarks" / "pdf_pages" / "written.tsv").read_text()
    tail = [line.split("\t") for line in lines.splitlines()[-10:]]
    assert written(("train",), last=10) == [
        row for row in tail if split_of(f"{row[0]}#p{row[1]}") == "train"
    ]
