"""benchmarks.rerank_context's fit over two kinds of collection: each kind weighs the
same whatever its number of questions, and the weights move the fitted model."""

from __future__ import annotations

import numpy as np
import pytest
from benchmarks import rerank_context as rc

from twokeys.evaluation.answers import QAItem
from twokeys.rag.rerank_context import NAMES


def _runs(name: str, count: int, feature: int, seed: int) -> list[rc.Run]:
    """``count`` questions of 10 hits whose one relevant hit stands out on ``feature``."""
    rng = np.random.default_rng(seed)
    runs = []
    for n in range(count):
        x = rng.normal(size=(10, len(NAMES)))
        y = np.zeros(10)
        y[n % 10] = 1.0
        x[n % 10, feature] += 3.0
        item = QAItem(f"{name}{n}", "q", "fact", "train", ())
        runs.append(rc.Run(name, item, [], x, y, 0.0))
    return runs


def test_each_kind_weighs_the_same() -> None:
    runs = _runs("git-docs", 30, 0, 1) + _runs(rc.KB, 90, 1, 2)
    weights = rc.kind_weights(runs)
    assert weights[:30].sum() == pytest.approx(weights[30:].sum())
    assert weights.mean() == pytest.approx(1.0)
    assert list(rc.kind_weights(runs[:30])) == [1.0] * 30


@pytest.mark.parametrize("loss", rc.LOSSES)
def test_the_weights_move_the_model(loss: str) -> None:
    runs = _runs("git-docs", 30, 0, 1) + _runs(rc.KB, 90, 1, 2)
    plain = rc.fit(runs, loss, 0.1)
    assert rc.fit(runs, loss, 0.1, weights=np.ones(len(runs))).weights == plain.weights
    balanced = rc.fit(runs, loss, 0.1, weights=rc.kind_weights(runs))
    # the documentation's 30 questions count as much as the KB's 90: its feature gains
    assert balanced.weights[0] > plain.weights[0]
    assert balanced.weights[1] < plain.weights[1]
