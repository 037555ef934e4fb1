"""The learned answer confidence (twokeys.rag.confidence): fit, probability, the
shipped weights, the risk-coverage curve."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from twokeys.errors import ConfigError
from twokeys.rag import confidence
from twokeys.rag.evidence import NAMES


def test_fit_separates_what_the_evidence_separates() -> None:
    rng = random.Random(7)
    rows, labels = [], []
    for _ in range(200):
        good = rng.random() < 0.5
        rows.append({"a": rng.gauss(1.0 if good else -1.0, 0.7), "b": rng.gauss(0, 1)})
        labels.append(good)
    model = confidence.fit(rows, labels, ("a", "b"))
    assert model.weights[0] > 1.0 > abs(model.weights[1])
    assert (
        model.probability({"a": 2.0, "b": 0.0}) > 0.9 > 0.1 > model.probability({"a": -2.0, "b": 0})
    )


def test_the_shipped_model_reads_every_evidence_feature() -> None:
    model = confidence.shipped()
    assert model.names == NAMES
    assert 0.0 < model.threshold < 1.0
    assert "train" in model.trained_on


def test_a_broken_weights_file_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"names": ["a"], "means": [0], "scales": [1]}))
    with pytest.raises(ConfigError, match="w.json: not a confidence model"):
        confidence.load(path)
    with pytest.raises(ConfigError, match="features missing: b"):
        confidence.Model(("a", "b"), (0, 0), (1, 1), (1, 1), 0).probability({"a": 1.0})


def test_risk_coverage_runs_from_the_most_confident_down() -> None:
    curve = confidence.risk_coverage([0.9, 0.8, 0.8, 0.1], [True, True, False, False])
    assert [(p.coverage, round(p.risk, 3)) for p in curve] == [
        (0.25, 0.0),
        (0.75, 0.333),
        (1.0, 0.5),
    ]
