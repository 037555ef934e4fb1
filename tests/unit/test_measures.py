"""Measures: hand-computed values on a tiny qrels / run pair, and parity with ir-measures."""

from __future__ import annotations

import math

import ir_measures
import pytest

from twokeys.errors import ConfigError
from twokeys.evaluation.measures import (
    LABELS,
    Evaluator,
    evaluate_run,
    label,
    parse_measures,
    standard_measures,
)
from twokeys.evaluation.runs import evaluate

QRELS = {
    "q1": {"d1": 1, "d2": 2, "d3": 0},
    "q2": {"d4": 1},
    "q3": {"d9": 1},  # judged, but the run has nothing for it: scores zero
}
RUN = {
    "q1": {"d3": 4.0, "d1": 3.0, "d5": 2.0, "d2": 1.0},  # relevant at ranks 2 and 4
    "q2": {"d6": 4.0, "d7": 3.0, "d8": 2.0, "d4": 1.0},  # relevant at rank 4
    "other": {"d1": 1.0},  # not judged: ignored
}

# trec_eval's nDCG: linear gain rel / log2(rank + 1), ideal from all judged documents
NDCG_Q1 = (1 / math.log2(3) + 2 / math.log2(5)) / (2 / math.log2(2) + 1 / math.log2(3))
NDCG_Q2 = (1 / math.log2(5)) / 1.0
HAND = {
    "nDCG@10": {"q1": NDCG_Q1, "q2": NDCG_Q2, "q3": 0.0},
    "R@10": {"q1": 1.0, "q2": 1.0, "q3": 0.0},
    "R@100": {"q1": 1.0, "q2": 1.0, "q3": 0.0},
    "RR@10": {"q1": 1 / 2, "q2": 1 / 4, "q3": 0.0},
    "AP@1000": {"q1": (1 / 2 + 2 / 4) / 2, "q2": 1 / 4, "q3": 0.0},
}


def test_standard_measures_are_ir_measures_objects_with_labels() -> None:
    measures = standard_measures()
    assert [str(m) for m in measures] == ["nDCG@10", "R@10", "R@100", "RR@10", "AP@1000"]
    assert measures[3] == ir_measures.RR @ 10 and measures[4] == ir_measures.AP @ 1000
    assert [label(m) for m in measures] == [
        "nDCG@10",
        "Recall@10",
        "Recall@100",
        "MRR@10",
        "MAP",
    ]
    assert list(LABELS) == [str(m) for m in measures]
    assert label("P@5") == "P@5"


def test_per_query_values_and_means_match_hand_computation() -> None:
    scores = evaluate_run(QRELS, RUN)
    assert set(scores.per_query) == set(HAND)
    for measure, values in HAND.items():
        assert list(scores.per_query[measure]) == ["q1", "q2", "q3"]
        for qid, value in values.items():
            assert scores.per_query[measure][qid] == pytest.approx(value), (measure, qid)
        assert scores.means[measure] == pytest.approx(sum(values.values()) / 3), measure


def test_values_equal_ir_measures_own() -> None:
    measures = standard_measures()
    full_run = {qid: RUN.get(qid, {}) for qid in QRELS}
    expected_means = ir_measures.calc_aggregate(measures, QRELS, full_run)
    expected_per_query = {
        (str(m.measure), m.query_id): m.value
        for m in ir_measures.iter_calc(measures, QRELS, full_run)
    }
    scores = Evaluator(QRELS).score(RUN)
    for m in measures:
        assert scores.means[str(m)] == expected_means[m]
        for qid in QRELS:
            assert scores.per_query[str(m)][qid] == expected_per_query[(str(m), qid)]


def test_runs_evaluate_is_built_on_the_evaluator() -> None:
    means = evaluate(QRELS, RUN, ["nDCG@10", "RR@10"])
    assert means == {"nDCG@10": pytest.approx((NDCG_Q1 + NDCG_Q2) / 3), "RR@10": 0.25}


def test_one_evaluator_scores_many_runs() -> None:
    evaluator = Evaluator(QRELS, ["RR@10"])
    assert evaluator.score(RUN).means["RR@10"] == pytest.approx(0.25)
    assert evaluator.score({"q3": {"d9": 1.0}}).means["RR@10"] == pytest.approx(1 / 3)


def test_bad_measure_and_empty_qrels_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="'nDCG@@10' is not an ir-measures measure"):
        parse_measures(["nDCG@@10"])
    with pytest.raises(ConfigError, match="no judged queries"):
        Evaluator({})
