"""The two learned linear models of the answer layer share one form
(:class:`twokeys.rag.linear.Linear`): the shipped weight files load unchanged, write back
byte for byte, and score as their formula says."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from twokeys.errors import ConfigError
from twokeys.rag import confidence, rerank_context
from twokeys.rag.linear import Linear

SHIPPED = [
    (confidence.Model, confidence.WEIGHTS, 2),
    (confidence.Model, confidence.LEXICAL_WEIGHTS, 2),
    (rerank_context.Model, rerank_context.WEIGHTS, 1),
]


@pytest.mark.parametrize(("cls", "path", "indent"), SHIPPED)
def test_shipped_files_round_trip_byte_for_byte(cls: type[Linear], path: Path, indent: int) -> None:
    text = path.read_text(encoding="utf-8")
    model = cls.from_dict(json.loads(text))
    assert json.dumps(model.to_dict(), indent=indent) + "\n" == text


@pytest.mark.parametrize(("cls", "path", "indent"), SHIPPED)
def test_shipped_scores_follow_the_formula(cls: type[Linear], path: Path, indent: int) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    model = cls.from_dict(data)
    rng = np.random.default_rng(7)
    rows = np.asarray(data["means"]) + rng.normal(size=(5, len(data["names"])))
    expected = [
        data["bias"]
        + sum(
            w * (x - m) / s
            for x, m, s, w in zip(row, data["means"], data["scales"], data["weights"], strict=True)
        )
        for row in rows
    ]
    assert list(model.scores(rows)) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    by_name = [model.score(dict(zip(data["names"], row, strict=True))) for row in rows]
    assert by_name == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_confidence_probability_is_the_logistic_of_the_linear_score() -> None:
    model = confidence.shipped()
    row = dict(zip(model.names, model.means, strict=True))
    assert model.probability(row) == pytest.approx(1 / (1 + math.exp(-model.bias)))
    assert model.to_dict()["threshold"] == model.threshold
    assert list(model.to_dict())[-2:] == ["threshold", "trained_on"]


def test_refusals_name_the_model() -> None:
    with pytest.raises(ConfigError, match="linear model: every scale must be positive"):
        Linear(("a",), (0.0,), (0.0,), (1.0,))
    with pytest.raises(ConfigError, match="confidence model: names, means, scales and weights"):
        confidence.Model(("a", "b"), (0.0,), (1.0,), (1.0,))
    with pytest.raises(ConfigError, match="src.json: not a linear model"):
        Linear.from_dict({"names": ["a"]}, "src.json")
    bare = Linear.from_dict({"names": ["a"], "means": [1], "scales": [2], "weights": [3]})
    assert bare.bias == 0.0 and bare.trained_on == ""
    assert bare.score({"a": 3.0}) == pytest.approx(3.0)


@pytest.mark.parametrize("field", ["means", "scales", "weights", "bias"])
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_weights_file_with_a_non_finite_number_is_refused_by_name(
    tmp_path: Path, field: str, value: float
) -> None:
    # json reads NaN and Infinity; a NaN weight would make every score NaN (the order
    # arbitrary, the clamped confidence certain)
    data = json.loads(confidence.WEIGHTS.read_text(encoding="utf-8"))
    data[field] = value if field == "bias" else [value, *data[field][1:]]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"w\.json: confidence model: .* must be (finite|positive)"
    ):
        confidence.load(path)


def test_a_refused_shape_names_the_file(tmp_path: Path) -> None:
    data = {"names": ["a", "b"], "means": [0], "scales": [1], "weights": [1]}
    with pytest.raises(ConfigError, match="src.json: linear model: names, means, scales"):
        Linear.from_dict(data, "src.json")
    with pytest.raises(ConfigError, match="src.json: linear model: every scale"):
        Linear.from_dict({**data, "names": ["a"], "scales": [0]}, "src.json")


@pytest.mark.parametrize("threshold", [math.nan, -0.1, 1.5])
def test_a_confidence_threshold_that_is_no_probability_is_refused(threshold: float) -> None:
    data = {**confidence.shipped().to_dict(), "threshold": threshold}
    with pytest.raises(ConfigError, match="w.json: confidence model: the threshold"):
        confidence.Model.from_dict(data, "w.json")
