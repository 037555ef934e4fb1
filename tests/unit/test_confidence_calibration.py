"""The calibration experiment of benchmarks/train_confidence --calibrated
(benchmarks/confidence_calibration.py): questions made from a collection's own passages
and headings, and the levels read from their features."""

from __future__ import annotations

from pathlib import Path

from benchmarks.confidence_calibration import (
    CALIBRATED,
    Calibration,
    Level,
    from_features,
    heading_questions,
    mixed_questions,
    pseudo_questions,
)

from twokeys import IndexOptions, build_index, open_index

PAGE = """# Backups

## Scheduling nightly backups

The backup daemon copies every volume to the archive bucket at two in the morning.
Failed copies are retried three times before the operator is paged by email.

## Restoring a single volume

A volume is restored from the newest archive unless an older snapshot id is given.
Restores run in the foreground and print their progress every ten seconds.
"""


def test_a_level_reads_mixed_as_0_and_answered_as_1() -> None:
    level = Level("lexical", answered=1.0, mixed=0.6)
    assert level.read(1.0) == 1.0 and level.read(0.6) == 0.0
    assert abs(level.read(0.8) - 0.5) < 1e-9
    assert Level("margin", 0.3, 0.3).read(0.5) == 0.5 - 0.3  # no span: a difference


def test_levels_are_the_medians_and_survive_a_round_trip() -> None:
    answered = [dict.fromkeys(CALIBRATED, v) for v in (0.9, 1.0, 0.8)]
    mixed = [dict.fromkeys(CALIBRATED, v) for v in (0.2, 0.6, 0.4)]
    calibration = from_features(answered, mixed)
    assert all(x.answered == 0.9 and x.mixed == 0.4 for x in calibration.levels)
    assert Calibration.from_dict(calibration.to_dict()) == calibration
    assert Calibration.from_dict({**calibration.to_dict(), "version": 0}) is None
    relative = calibration.relative({**dict.fromkeys(CALIBRATED, 0.9), "unseen": 0.25})
    assert relative["unseen"] == 0.25 and abs(relative["lexical"] - 1.0) < 1e-9


def test_a_mixed_question_joins_halves_of_two_others() -> None:
    mixed = mixed_questions(["a b c d", "e f g h"])
    assert mixed == ["a b g h", "e f c d"]


def test_questions_come_from_the_index_own_sentences_and_headings(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "backups.md").write_text(PAGE, encoding="utf-8")
    build_index(docs, tmp_path / "idx", IndexOptions(encoder=None))
    with open_index(tmp_path / "idx") as index:
        questions = pseudo_questions(index, samples=2)
        headings = heading_questions(index, samples=2)
    assert questions and all(6 <= len(q.split()) <= 10 for q in questions)
    words = set(PAGE.split())
    assert all(set(q.split()) <= words for q in questions)  # its own words, a third left out
    assert set(headings) <= {"Scheduling nightly backups", "Restoring a single volume"}
    assert headings
