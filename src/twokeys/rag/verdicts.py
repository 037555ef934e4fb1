"""A model's yes/no verdict that the passages answer a question, weighed by how reliable
that model was measured to be.

A "yes" is worth what the model is worth: a capable model says "no" mostly when the
passages lack the asked fact; a weak one says "yes" to nearly anything. So the verdict is
not a feature fitted once with the retrieval evidence (no model runs where the learned
confidence is fitted, and each model judges differently): each model is measured on
labelled questions (``twokeys calibrate-verdict``; :mod:`twokeys.evaluation.verdicts`),
counting its yeses and noes on questions that are good to answer (answerable, a gold
fact in the context ``ask`` packs) and on the others. What it then says adds the log
likelihood ratio of that reply to the learned confidence's log-odds (Bayes' rule, reading
the reply as independent of the retrieval evidence given the label). Add-one smoothing
keeps a few questions from giving a reply an extreme weight, and a model that says "yes"
as often to both kinds adds nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from twokeys.cachedir import cache_home
from twokeys.errors import ConfigError
from twokeys.rag.linear import read_object

MIN_EACH = 10  # questions of each kind (good to answer, not) a calibration needs
_COUNTS = ("good_yes", "good_no", "bad_yes", "bad_no", "unread")


@dataclass(frozen=True, slots=True)
class Reliability:
    """How one model's verdicts went on labelled questions: its yes and no replies to
    questions good to answer and to the others, and the replies that were neither
    (or not given), which count for nothing."""

    model: str
    good_yes: int
    good_no: int
    bad_yes: int
    bad_no: int
    unread: int = 0
    trained_on: str = ""

    def __post_init__(self) -> None:
        for name in _COUNTS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{name}: expected a count >= 0, got {value!r}")

    @classmethod
    def of(
        cls, model: str, replies: Iterable[tuple[bool, float]], trained_on: str = ""
    ) -> Reliability:
        """The counts of ``replies``: (good to answer, what the model said: 1.0 yes, 0.0
        no, anything else unread)."""
        counts = dict.fromkeys(_COUNTS, 0)
        for good, said in replies:
            if said in (0.0, 1.0):
                counts[f"{'good' if good else 'bad'}_{'yes' if said else 'no'}"] += 1
            else:
                counts["unread"] += 1
        return cls(model, **counts, trained_on=trained_on)

    @property
    def good(self) -> int:
        return self.good_yes + self.good_no

    @property
    def bad(self) -> int:
        return self.bad_yes + self.bad_no

    def log_ratio(self, said: float) -> float:
        """What a reply adds to the log-odds that the sources answer: for "yes" (1.0)
        ``ln(P(yes | good) / P(yes | not))``, for "no" (0.0) the same for "no", each share
        smoothed by one added to each reply; anything else (not asked, unread) 0."""
        if said == 1.0:
            return math.log(_share(self.good_yes, self.good) / _share(self.bad_yes, self.bad))
        if said == 0.0:
            return math.log(_share(self.good_no, self.good) / _share(self.bad_no, self.bad))
        return 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            **asdict(self),
            "log_ratio_yes": round(self.log_ratio(1.0), 6),
            "log_ratio_no": round(self.log_ratio(0.0), 6),
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Reliability:
        """The calibration stored at ``path``; one that can't be read or isn't one is a
        :class:`~twokeys.errors.ConfigError` naming the file (and the field)."""
        data = read_object(path)
        missing = [k for k in ("model", *_COUNTS[:4]) if k not in data]
        if missing:
            raise ConfigError(f"{path}: not a verdict calibration: no {', '.join(missing)}")
        try:
            return cls(
                str(data["model"]),
                good_yes=data["good_yes"],
                good_no=data["good_no"],
                bad_yes=data["bad_yes"],
                bad_no=data["bad_no"],
                unread=data.get("unread", 0),
                trained_on=str(data.get("trained_on", "")),
            )
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None


def _share(count: int, total: int) -> float:
    return (count + 1) / (total + 2)


def default_path(model: str) -> Path:
    """Where ``calibrate-verdict`` keeps a model's calibration and ``ask`` looks for it:
    ``<cache>/verdicts/<model name>.json`` (:func:`twokeys.cachedir.cache_home`)."""
    return cache_home() / "verdicts" / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', model)}.json"


def for_model(model: str, path: str | Path | None = None) -> Reliability:
    """The calibration of ``model``: the one at ``path``, else at :func:`default_path`; a
    model never calibrated is a :class:`~twokeys.errors.ConfigError` saying how to."""
    where = Path(path) if path else default_path(model)
    if not path and not where.is_file():
        raise ConfigError(
            f"verdict: {model} has no calibration ({where}); measure it first with "
            f"'twokeys calibrate-verdict QA.jsonl --index INDEX --llm {model}', or give "
            "--verdict-calibration FILE"
        )
    found = Reliability.load(where)
    if found.model != model:
        raise ConfigError(f"{where}: calibrates {found.model}, not {model}")
    return found
