"""A linear score over standardised features, stored as plain JSON.

Both learned parts of the answer layer (the context order, :mod:`twokeys.rag.rerank_context`,
and the answer confidence, :mod:`twokeys.rag.confidence`) score a row of named numbers the
same way: each feature is standardised by the mean and scale it had on the training rows,
and the score is ``bias + sum(weight * (x - mean) / scale)``. :class:`Linear` holds those
numbers, scores a matrix of rows or one row given by name, and reads (:meth:`Linear.load`)
and writes the JSON object the shipped weight files hold (``names``, ``means``,
``scales``, ``weights``, ``bias``, ``trained_on``; a subclass adds its own fields by
overriding :meth:`_fields` and :meth:`to_dict`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from twokeys.errors import ConfigError


@dataclass(frozen=True)
class Linear:
    """``bias + sum(w * (x - mean) / scale)`` over the features :attr:`names`."""

    names: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float = 0.0
    trained_on: str = ""

    #: how errors name this kind of model
    kind: ClassVar[str] = "linear model"

    def __post_init__(self) -> None:
        if not len(self.names) == len(self.means) == len(self.scales) == len(self.weights):
            raise ConfigError(f"{self.kind}: names, means, scales and weights differ in length")
        if any(not s > 0 for s in self.scales):
            raise ConfigError(f"{self.kind}: every scale must be positive")
        numbers = (*self.means, *self.scales, *self.weights, self.bias)
        if not all(math.isfinite(x) for x in numbers):
            # NaN scores every row NaN: an order by them is arbitrary, and a clamped
            # NaN log-odds reads as certainty
            raise ConfigError(f"{self.kind}: means, scales, weights and bias must be finite")

    def scores(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The score of each row of ``rows`` (features in :attr:`names` order)."""
        means = np.asarray(self.means)
        scales = np.asarray(self.scales)
        return np.asarray(self.bias + ((rows - means) / scales) @ np.asarray(self.weights))

    def score(self, features: Mapping[str, float]) -> float:
        """The score of one row given by feature name (every name must be there)."""
        missing = [n for n in self.names if n not in features]
        if missing:
            raise ConfigError(f"{self.kind}: features missing: {', '.join(missing)}")
        return self.bias + sum(
            w * (features[n] - m) / s
            for n, m, s, w in zip(self.names, self.means, self.scales, self.weights, strict=True)
        )

    def to_dict(self) -> dict[str, object]:
        """The JSON object :meth:`from_dict` reads."""
        return {
            "names": list(self.names),
            "means": list(self.means),
            "scales": list(self.scales),
            "weights": list(self.weights),
            "bias": self.bias,
            "trained_on": self.trained_on,
        }

    @classmethod
    def _fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor's arguments read from ``data`` (raises KeyError, TypeError or
        ValueError on a bad object). ``bias`` and ``trained_on`` may be absent."""
        return {
            "names": tuple(str(n) for n in data["names"]),
            **{key: tuple(float(x) for x in data[key]) for key in ("means", "scales", "weights")},
            "bias": float(data.get("bias", 0.0)),
            "trained_on": str(data.get("trained_on", "")),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object], where: str = "") -> Self:
        """The model stored in ``data`` (a JSON object :meth:`to_dict` wrote); ``where``
        names its source in errors."""
        try:
            fields = cls._fields(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{where or cls.kind}: not a {cls.kind}: {exc}") from None
        try:
            return cls(**fields)
        except ConfigError as exc:
            if not where:
                raise
            raise ConfigError(f"{where}: {exc}") from None

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """The model stored in the JSON file at ``path``; a file that can't be read or
        isn't such a model is a :class:`~twokeys.errors.ConfigError` naming it."""
        return cls.from_dict(read_object(path), str(path))


def read_object(path: str | Path) -> dict[str, Any]:
    """The JSON object stored at ``path``; a file that can't be read or doesn't hold one
    is a :class:`~twokeys.errors.ConfigError` naming it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return data
