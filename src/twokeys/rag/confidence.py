"""A learned confidence that the sources answer a question: logistic regression over
retrieval evidence.

The evidence (:class:`~twokeys.rag.evidence.Evidence`) is a handful of numbers any
collection gives: how much of the question the best passage and the best sentence
hold, how far the dense model's best match stands above the collection, whether the
two sensors agree, how much of the question's weight the collection never uses.
:class:`Model` turns them into a probability
with a logistic regression fitted here (:func:`fit`, plain numpy: standardised inputs,
L2 penalty, Newton steps), whose weights ship in ``confidence_weights.json`` beside this
module, and a second one without the dense features for indexes built without a dense
model (``confidence_weights_lexical.json``). ``python -m benchmarks.train_confidence OUT``
refits them on the train splits of the blind answer sets and of the example support KB
(two kinds of collection, weighted equally) and picks the operating point (the
probability under which an answer abstains) on their dev splits; it writes the files
this module reads (``--lexical`` for the second). A model's own verdict, when one is
asked, moves the log-odds by what that model's replies were measured to be worth
(:mod:`twokeys.rag.verdicts`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError
from twokeys.rag.linear import Linear

WEIGHTS = Path(__file__).with_name("confidence_weights.json")
LEXICAL_WEIGHTS = Path(__file__).with_name("confidence_weights_lexical.json")


@dataclass(frozen=True)
class Model(Linear):
    """A fitted logistic regression (its linear score, :class:`~twokeys.rag.linear.Linear`,
    is the log-odds) and its operating point."""

    threshold: float = 0.5  # below this probability an answer abstains
    kind: ClassVar[str] = "confidence model"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.threshold <= 1.0:  # NaN included: it would abstain on everything
            raise ConfigError(f"{self.kind}: the threshold must be a probability (0 to 1)")

    def probability(self, features: Mapping[str, float], log_ratio: float = 0.0) -> float:
        """The probability that the sources answer; ``log_ratio``: evidence beyond the
        features, added to the log-odds (a model's verdict, :mod:`twokeys.rag.verdicts`)."""
        z = self.score(features) + log_ratio
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_dict(self) -> dict[str, object]:
        data = super().to_dict()
        trained_on = data.pop("trained_on")
        return {**data, "threshold": self.threshold, "trained_on": trained_on}

    @classmethod
    def _fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        return {**super()._fields(data), "threshold": float(data.get("threshold", 0.5))}


def load(path: str | Path = WEIGHTS) -> Model:
    """The model stored at ``path`` (default: the shipped weights)."""
    return Model.load(path)


@cache
def shipped(lexical: bool = False) -> Model:
    """The shipped model (read once): the hybrid one, or with ``lexical`` the one fitted
    on BM25-only indexes (whose dense features read 0, far outside what the hybrid model
    was fitted on)."""
    return load(LEXICAL_WEIGHTS if lexical else WEIGHTS)


def fit(
    rows: Sequence[Mapping[str, float]],
    labels: Sequence[bool],
    names: Sequence[str],
    *,
    l2: float = 1.0,
    steps: int = 50,
    weights: Sequence[float] | None = None,
) -> Model:
    """Fit a logistic regression of ``labels`` on the ``names`` features of ``rows``
    (inputs standardised; ``l2`` penalises the weights, not the bias; Newton steps);
    ``weights`` weigh the rows (default: all 1), in the fit and in the standardisation."""
    if len(rows) != len(labels) or not rows:
        raise ConfigError("confidence: need as many labels as rows, and at least one")
    if weights is not None and (len(weights) != len(rows) or min(weights) < 0):
        raise ConfigError("confidence: need one non-negative weight per row")
    x = np.array([[float(r[n]) for n in names] for r in rows], dtype=np.float64)
    y = np.array([1.0 if v else 0.0 for v in labels])
    w = np.ones(len(rows)) if weights is None else np.asarray(weights, dtype=np.float64)
    if not w.sum() > 0:
        raise ConfigError("confidence: the weights sum to 0")
    means = np.average(x, axis=0, weights=w)
    scales = np.sqrt(np.average((x - means) ** 2, axis=0, weights=w))
    scales[scales == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - means) / scales])
    beta = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(steps):
        p = _sigmoid(z @ beta)
        gradient = z.T @ (w * (p - y)) + penalty * beta
        hessian = (z.T * (w * p * (1 - p))) @ z + np.diag(penalty) + 1e-9 * np.eye(z.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.abs(step).max()) < 1e-8:
            break
    return Model(
        tuple(names),
        tuple(float(v) for v in means),
        tuple(float(v) for v in scales),
        tuple(float(v) for v in beta[1:]),
        float(beta[0]),
    )


def _sigmoid(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))


@dataclass(frozen=True, slots=True)
class RiskPoint:
    """One point of a risk-coverage curve."""

    threshold: float
    coverage: float  # share of questions answered
    risk: float  # share of the answered whose answer lacks its gold passage


def risk_coverage(scores: Sequence[float], good: Sequence[bool]) -> list[RiskPoint]:
    """The risk-coverage curve: answering the questions whose score is at least each
    distinct score, from the most confident down."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    points: list[RiskPoint] = []
    bad = 0
    for answered, i in enumerate(order, 1):
        bad += not good[i]
        if answered < len(order) and scores[order[answered]] == scores[i]:
            continue
        points.append(RiskPoint(scores[i], answered / len(order), bad / answered))
    return points
