"""benchmarks.train_confidence.cross_validated and confidence_candidates.gap: the
measurements the confidence's features were chosen by."""

from __future__ import annotations

import random

import pytest
from benchmarks import train_confidence as tc
from benchmarks.confidence_candidates import gap

from twokeys.evaluation.answers import GoldFact, QAItem
from twokeys.rag.evidence import NAMES, Evidence


def _rows(signal: float) -> list[tc.Row]:
    """Train, dev and test rows of both kinds; ``lexical`` separates the good ones by
    ``signal`` standard deviations, every other feature is noise."""
    rng = random.Random(11)
    rows = []
    for n in range(240):
        collection = tc.KB if n % 2 else "docs"
        split = ("train", "train", "dev", "test")[n % 4]
        answerable = n % 3 != 0
        good = answerable and n % 5 != 0
        gold = (GoldFact("a.md", "fact"),) if answerable else ()
        item = QAItem(f"q{n}", "question", "fact", split, gold)
        values = {name: rng.gauss(0, 1) for name in NAMES}
        values["lexical"] += signal if good else 0.0
        rows.append(tc.Row(collection, item, Evidence(**values), 1.0 if good else 0.0, True))
    return rows


def test_a_separating_feature_is_seen_and_noise_is_not() -> None:
    rows = _rows(3.0)
    signal = tc.cross_validated(rows, ["lexical"], repeats=2)
    noise = tc.cross_validated(rows, ["unseen"], repeats=2)
    assert len(signal) == len(tc.CV_COLUMNS)
    assert signal[0] > 0.9 and signal[2] > 0.9
    assert 0.3 < noise[0] < 0.7
    assert tc.cross_validated(rows, ["lexical"], repeats=2) == signal  # seeded


def test_the_test_split_is_not_read() -> None:
    rows = _rows(3.0)
    spoiled = [
        r if r.item.split != "test" else tc.Row(r.collection, r.item, r.evidence, 0.0, True)
        for r in rows
    ]
    assert tc.cross_validated(spoiled, ["lexical"], repeats=1) == tc.cross_validated(
        rows, ["lexical"], repeats=1
    )


def test_gap_is_to_the_best_of_another_page() -> None:
    assert gap([0.9, 0.8, 0.5], ["a", "a", "b"]) == pytest.approx(0.4)
    assert gap([0.5, 0.9], ["b", "a"]) == pytest.approx(0.4)
    assert gap([0.9, 0.7], ["a", "a"]) == pytest.approx(0.2)  # one page: to the lowest
    assert gap([], []) == 0.0
