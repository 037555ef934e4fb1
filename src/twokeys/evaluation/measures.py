"""The evaluation measures, computed by ir-measures: per-query values and their means.

The standard measures are ir-measures objects that print and parse back
(``nDCG@10``, ``R@10``, ``R@100``, ``RR@10``, ``AP@1000``); tables show the last three
under their usual names (Recall@10, Recall@100, MRR@10, MAP). Values come from
``ir_measures`` (pytrec_eval underneath), never from hand-written formulas, so they
match every other system evaluated the same way. nDCG uses trec_eval's linear gain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from twokeys.errors import ConfigError, MissingExtraError

Qrels = Mapping[str, Mapping[str, int]]  # query id -> doc id -> relevance
RunLike = Mapping[str, Mapping[str, float]]  # query id -> doc id -> score

#: ir-measures name -> the label tables show, in table order.
LABELS: dict[str, str] = {
    "nDCG@10": "nDCG@10",
    "R@10": "Recall@10",
    "R@100": "Recall@100",
    "RR@10": "MRR@10",
    "AP@1000": "MAP",
}
PRIMARY = "nDCG@10"  # the measure comparisons plot and disagreements rank by


def _ir_measures() -> ModuleType:
    try:
        import ir_measures
    except ImportError as exc:
        raise MissingExtraError(
            "evaluation needs ir-measures: pip install 'twokeys[eval]'"
        ) from exc
    return ir_measures


def parse_measures(names: Sequence[str]) -> list[Any]:
    """ir-measures objects for names such as ``"nDCG@10"`` or ``"RR@10"``."""
    irm = _ir_measures()
    parsed = []
    for name in names:
        try:
            parsed.append(irm.parse_measure(name))
        except (ValueError, NameError, SyntaxError, TypeError) as exc:
            raise ConfigError(f"measure: {name!r} is not an ir-measures measure") from exc
    return parsed


def standard_measures() -> list[Any]:
    """nDCG@10, R@10, R@100, RR@10 and AP@1000 as ir-measures objects."""
    return parse_measures(list(LABELS))


def label(measure: object) -> str:
    """The name a table shows for ``measure`` (an ir-measures object or its name)."""
    return LABELS.get(str(measure), str(measure))


@dataclass(frozen=True)
class Scores:
    """One run's values: per query and the mean over the judged queries.

    Keys are measure names as ir-measures prints them (``"RR@10"``, not ``"MRR@10"``).
    """

    per_query: dict[str, dict[str, float]]  # measure -> query id -> value
    means: dict[str, float]  # measure -> mean (ir-measures' own aggregator)


class Evaluator:
    """Takes the qrels once and scores many runs on the same measures.

    A judged query that a run has no results for scores zero on every measure, so
    every run is averaged over the same queries.
    """

    def __init__(self, qrels: Qrels, measures: Sequence[str] | None = None) -> None:
        if not qrels:
            raise ConfigError("qrels: no judged queries to evaluate")
        self.measures = parse_measures(measures) if measures is not None else standard_measures()
        self.names = [str(m) for m in self.measures]
        self.query_ids = list(qrels)
        self._evaluator = _ir_measures().evaluator(
            self.measures, {q: dict(docs) for q, docs in qrels.items()}
        )

    def score(self, run: RunLike) -> Scores:
        """Per-query values (``ir_measures`` ``iter_calc``) and their means."""
        full_run = {qid: dict(run.get(qid, {})) for qid in self.query_ids}
        aggregators = {m: m.aggregator() for m in self.measures}
        per_query: dict[str, dict[str, float]] = {name: {} for name in self.names}
        for metric in self._evaluator.iter_calc(full_run):
            aggregators[metric.measure].add(metric.value)
            per_query[str(metric.measure)][str(metric.query_id)] = float(metric.value)
        for measure, name in zip(self.measures, self.names, strict=True):
            values = per_query[name]
            for qid in self.query_ids:  # a judged query ir-measures skipped scores zero
                if qid not in values:
                    aggregators[measure].add(0.0)
            per_query[name] = {qid: values.get(qid, 0.0) for qid in self.query_ids}
        means = {str(m): float(agg.result()) for m, agg in aggregators.items()}
        return Scores(per_query=per_query, means=means)


def evaluate_run(qrels: Qrels, run: RunLike, measures: Sequence[str] | None = None) -> Scores:
    """Score one run (see :class:`Evaluator` to score several against the same qrels)."""
    return Evaluator(qrels, measures).score(run)
