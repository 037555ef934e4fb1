"""Paired significance tests: hand-computed values, p-value bounds, degenerate cases."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from twokeys.errors import ConfigError
from twokeys.evaluation.significance import (
    WinTieLoss,
    compare,
    paired_t_test,
    randomisation_test,
    win_tie_loss,
)

A = [0.1, 0.2, 0.3, 0.4]
B = [0.2, 0.2, 0.5, 0.7]  # differences 0.1, 0.0, 0.2, 0.3


def test_t_statistic_matches_the_formula() -> None:
    d = [b - a for a, b in zip(A, B, strict=True)]
    n = len(d)
    mean = sum(d) / n  # 0.15
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))  # sqrt(0.05 / 3)
    t = mean / (sd / math.sqrt(n))
    assert t == pytest.approx(2.3237900077244502)
    p = 2 * stats.t.sf(abs(t), df=n - 1)
    assert paired_t_test(A, B) == (pytest.approx(t), pytest.approx(p))
    t_ba, p_ba = paired_t_test(B, A)
    assert t_ba == pytest.approx(-t) and p_ba == pytest.approx(p)


def test_randomisation_is_exact_when_all_sign_flips_fit() -> None:
    # 2**4 = 16 assignments; |mean| reaches the observed 0.15 only with 0.1, 0.2, 0.3 all
    # of one sign (the zero's sign is free): 4 of 16
    p, used = randomisation_test(A, B)
    assert used == 16
    assert p == pytest.approx(4 / 16)


def test_randomisation_p_value_bounds_and_determinism() -> None:
    a = [0.0] * 20
    b = [0.1] * 20  # exact p = 2 / 2**20; sampled, nothing beats it but itself
    p, used = randomisation_test(a, b, permutations=10_000)
    assert used == 10_000
    assert 1 / 10_001 <= p <= 5 / 10_001
    values_a = [0.1 * (i % 7) for i in range(40)]
    values_b = [0.1 * ((i * 3) % 7) for i in range(40)]
    p1, _ = randomisation_test(values_a, values_b, permutations=2_000, seed=7)
    p2, _ = randomisation_test(values_a, values_b, permutations=2_000, seed=7)
    assert p1 == p2 and 1 / 2_001 <= p1 <= 1.0


def test_sampled_randomisation_agrees_with_the_exact_one() -> None:
    a = [0.5, 0.1, 0.4, 0.3, 0.9, 0.2, 0.6, 0.0, 0.7, 0.3]
    b = [0.6, 0.3, 0.2, 0.5, 0.9, 0.6, 0.5, 0.2, 0.9, 0.1]
    exact, used = randomisation_test(a, b)
    assert used == 2**10
    sampled, used = randomisation_test(a, b, permutations=1_000)
    assert used == 1_000
    assert sampled == pytest.approx(exact, abs=0.05)
    t_p = paired_t_test(a, b)[1]
    assert exact == pytest.approx(t_p, abs=0.1)  # the two tests agree closely (Smucker 2007)


def test_identical_runs_give_p_one_and_all_ties() -> None:
    values = [0.3, 0.0, 1.0, 0.5]
    assert paired_t_test(values, values) == (0.0, 1.0)
    assert randomisation_test(values, values)[0] == 1.0
    many = [0.1 * (i % 9) for i in range(30)]
    assert randomisation_test(many, many, permutations=500)[0] == 1.0
    assert win_tie_loss(values, values) == WinTieLoss(wins=0, ties=4, losses=0)
    per_query = {f"q{i}": v for i, v in enumerate(values)}
    result = compare("x", per_query, "y", dict(per_query), measure="m")
    assert result.t_pvalue == 1.0 and result.randomisation_pvalue == 1.0
    assert result.record.ties == 4 and result.mean_delta == 0.0


def test_constant_difference_and_single_query() -> None:
    assert paired_t_test([0.0, 0.25, 0.5], [0.5, 0.75, 1.0]) == (math.inf, 0.0)
    assert paired_t_test([0.5, 0.75, 1.0], [0.0, 0.25, 0.5]) == (-math.inf, 0.0)
    assert paired_t_test([0.5], [0.5]) == (0.0, 1.0)
    t, p = paired_t_test([0.1], [0.3])
    assert math.isnan(t) and math.isnan(p)


def test_win_tie_loss_uses_the_tolerance() -> None:
    a = [0.5, 0.5, 0.5, 0.5]
    b = [0.505, 0.495, 0.6, 0.3]
    assert win_tie_loss(a, b, tolerance=0.01) == WinTieLoss(wins=1, ties=2, losses=1)
    assert win_tie_loss(a, b, tolerance=0.0) == WinTieLoss(wins=2, ties=0, losses=2)
    with pytest.raises(ConfigError, match="tolerance"):
        win_tie_loss(a, b, tolerance=-1)


def test_compare_pairs_queries_by_id() -> None:
    a = {"q1": 0.1, "q2": 0.2, "q3": 0.3, "q4": 0.4}
    b = {"q4": 0.7, "q3": 0.5, "q2": 0.2, "q1": 0.2}  # same values as B, other order
    result = compare("bm25", a, "hybrid", b, measure="nDCG@10")
    assert result.deltas == pytest.approx({"q1": 0.1, "q2": 0.0, "q3": 0.2, "q4": 0.3})
    assert result.mean_delta == pytest.approx(0.15)
    assert result.record == WinTieLoss(wins=3, ties=1, losses=0)
    assert result.t_statistic == pytest.approx(2.3237900077244502)
    assert result.randomisation_pvalue == pytest.approx(0.25) and result.permutations == 16
    with pytest.raises(ConfigError, match="not scored on the same queries"):
        compare("bm25", a, "hybrid", {"q1": 0.1}, measure="nDCG@10")
    with pytest.raises(ConfigError, match="no queries"):
        paired_t_test([], [])
