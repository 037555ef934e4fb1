"""The blind answer sets under benchmarks/answers: size, share of unanswerable
questions, and splits fixed by hash (see benchmarks/answers/README.md)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from benchmarks.answer_corpora import ANSWERS, COLLECTIONS, READER_TRAIN, split_of

from twokeys.evaluation.answers import load_qa

FILES = sorted(ANSWERS.glob("*-qa*.jsonl"))
READER_FILES = sorted((ANSWERS / "reader").glob("*-qa*.jsonl"))


def test_every_collection_has_question_files() -> None:
    named = {f.name.split("-qa")[0] for f in FILES}
    assert named == set(COLLECTIONS) - set(READER_TRAIN)
    assert {f.name.split("-qa")[0] for f in READER_FILES} == set(READER_TRAIN)


@pytest.mark.parametrize("path", READER_FILES, ids=lambda p: p.name)
def test_a_reader_training_set_is_half_unanswerable_with_hash_splits(path: Path) -> None:
    items = load_qa(path)
    assert len(items) >= 60
    assert 0.35 <= sum(not i.answerable for i in items) / len(items) <= 0.65
    assert all(i.split == split_of(path.stem, i.id) for i in items)


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


def test_held_out_collections_are_left_out_of_every_fit(tmp_path: Path) -> None:
    from benchmarks.answer_corpora import HELD_OUT
    from benchmarks.answers_context import collections

    for name in COLLECTIONS:
        (tmp_path / name / "pages").mkdir(parents=True)
    (tmp_path / "no-questions" / "pages").mkdir(parents=True)
    fitted = collections(tmp_path)
    held = collections(tmp_path, held_out=True)
    assert set(held) == set(HELD_OUT) and HELD_OUT
    assert not set(fitted) & set(held)
    assert set(fitted) | set(held) == set(COLLECTIONS) - set(READER_TRAIN)
