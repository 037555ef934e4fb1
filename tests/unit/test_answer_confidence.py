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


def test_row_weights_act_as_repeated_rows() -> None:
    rng = random.Random(3)
    rows = [{"a": rng.gauss(0, 1), "b": rng.gauss(0, 1)} for _ in range(60)]
    labels = [r["a"] + 0.5 * rng.gauss(0, 1) > 0 for r in rows]
    weights = [float(1 + i % 3) for i in range(len(rows))]
    repeated = [
        (r, y) for r, y, w in zip(rows, labels, weights, strict=True) for _ in range(int(w))
    ]
    by_weight = confidence.fit(rows, labels, ("a", "b"), weights=weights)
    by_copies = confidence.fit([r for r, _ in repeated], [y for _, y in repeated], ("a", "b"))
    assert by_weight.weights == pytest.approx(by_copies.weights, rel=1e-6)
    assert by_weight.means == pytest.approx(by_copies.means)
    assert by_weight.scales == pytest.approx(by_copies.scales)
    assert by_weight.bias == pytest.approx(by_copies.bias, rel=1e-6)
    unweighted = confidence.fit(rows, labels, ("a", "b"))
    assert unweighted.weights != pytest.approx(by_weight.weights, rel=1e-3)
    with pytest.raises(ConfigError, match="one non-negative weight per row"):
        confidence.fit(rows, labels, ("a", "b"), weights=[1.0])


def test_the_shipped_models_read_the_evidence_features() -> None:
    # the page features lift the BM25-only model in cross-validation and not the hybrid
    # one, which does not read them (benchmarks.train_confidence --compare)
    pages = {"page_share", "page_margin"}
    model = confidence.shipped()
    assert model.names == tuple(n for n in NAMES if n not in pages)
    assert 0.0 < model.threshold < 1.0
    assert "train" in model.trained_on
    lexical = confidence.shipped(lexical=True)
    dense = {"dense_peak", "dense_height", "agreement", "cosine_sentence"}
    assert lexical.names == tuple(n for n in NAMES if n not in dense)
    assert 0.0 < lexical.threshold < 1.0 and "BM25-only" in lexical.trained_on


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
