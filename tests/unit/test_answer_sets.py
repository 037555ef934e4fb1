"""The blind answer sets under benchmarks/answers: size, share of unanswerable
questions, and splits fixed by hash (see benchmarks/answers/README.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from benchmarks.answer_corpora import ANSWERS, COLLECTIONS, split_of

from twokeys.evaluation.answers import load_qa

FILES = sorted(ANSWERS.glob("*-qa*.jsonl"))


def test_four_collections_have_question_files() -> None:
    named = {f.name.split("-qa")[0] for f in FILES}
    assert named == set(COLLECTIONS)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_set_has_60_questions_a_quarter_unanswerable_and_its_hash_splits(path: Path) -> None:
    items = load_qa(path)
    assert len(items) >= 60
    assert sum(not i.answerable for i in items) / len(items) >= 0.25
    assert all(i.split == split_of(path.stem, i.id) for i in items)
    splits = Counter(i.split for i in items)
    assert set(splits) == {"train", "dev", "test"}
    assert splits["test"] >= 15


def test_split_of_is_fixed_by_file_and_id() -> None:
    assert split_of("rust-book-qa", "r01") == split_of("rust-book-qa", "r01")
    spread = Counter(split_of("x", f"q{i}") for i in range(1000))
    assert 450 < spread["train"] < 550 and 150 < spread["dev"] < 250
