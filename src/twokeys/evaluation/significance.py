"""Paired comparison of two retrievers over the same queries.

Both tests take per-query values of one measure for systems A and B and test whether
the mean of the per-query differences ``B - A`` is zero:

- the paired (dependent samples) Student's t-test, ``t = mean(d) / (sd(d) / sqrt(n))``
  with ``n - 1`` degrees of freedom (``scipy.stats.ttest_rel``);
- the paired two-sided randomisation test: under the null hypothesis the labels A and B
  of each query are exchangeable, so each difference's sign is flipped at random and
  the p-value is the share of sign assignments whose ``|mean|`` reaches the observed
  one. Smucker, Allan & Carterette, "A Comparison of Statistical Significance Tests for
  Information Retrieval Evaluation", CIKM 2007, recommend it (with the t-test, which
  agrees with it closely) over the sign and Wilcoxon tests. With at most
  ``permutations`` possible assignments (``2**n``) the test is exact; otherwise it
  samples ``permutations`` of them with a fixed seed and reports ``(c + 1) / (N + 1)``
  (Phipson & Smyth, "Permutation p-values should never be zero", 2010).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats  # type: ignore[import-untyped, unused-ignore]  # no stubs yet

from twokeys.errors import ConfigError

PERMUTATIONS = 10_000
SEED = 0
TIE_TOLERANCE = 1e-9
_BATCH = 1_000  # sign vectors drawn at once (bounds memory on large query sets)


@dataclass(frozen=True)
class WinTieLoss:
    """How many queries B scores higher than A on, the same (within tolerance), lower."""

    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class PairedComparison:
    """B against the baseline A on one measure, over the same queries."""

    a: str
    b: str
    measure: str
    queries: int
    mean_a: float
    mean_b: float
    deltas: dict[str, float]  # query id -> B - A
    record: WinTieLoss
    t_statistic: float
    t_pvalue: float
    randomisation_pvalue: float
    permutations: int  # sign assignments used (all 2**n when that is fewer)
    seed: int

    @property
    def mean_delta(self) -> float:
        return self.mean_b - self.mean_a


def _differences(a: Sequence[float], b: Sequence[float]) -> npt.NDArray[np.float64]:
    if len(a) != len(b):
        raise ConfigError(f"paired test: {len(a)} values for A but {len(b)} for B")
    if not a:
        raise ConfigError("paired test: no queries")
    return np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Paired two-sided t-test of ``mean(b - a) == 0``: ``(t statistic, p-value)``.

    When every difference is the same the variance is zero: equal runs give
    ``(0.0, 1.0)``, a constant non-zero difference over two or more queries
    ``(+-inf, 0.0)``; a single non-zero difference ``(nan, nan)``.
    """
    d = _differences(a, b)
    if np.all(d == 0.0):
        return 0.0, 1.0
    if len(d) < 2:
        return math.nan, math.nan
    if np.all(d == d[0]):
        return math.copysign(math.inf, float(d[0])), 0.0
    with warnings.catch_warnings():  # near-constant differences: scipy warns, t is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_rel(np.asarray(b, np.float64), np.asarray(a, np.float64))
    return float(result.statistic), float(result.pvalue)


def randomisation_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> tuple[float, int]:
    """Paired two-sided sign-flip randomisation test: ``(p-value, assignments used)``.

    Exact (every one of the ``2**n`` sign assignments) when ``2**n <= permutations``,
    else ``permutations`` random ones drawn from ``numpy.random.default_rng(seed)``.
    """
    if permutations < 1:
        raise ConfigError(f"permutations: must be >= 1, got {permutations}")
    d = _differences(a, b)
    n = len(d)
    observed = abs(float(d.mean()))
    threshold = observed - 1e-12 * max(1.0, observed)  # equal means count as extreme
    if n < 63 and 2**n <= permutations:
        codes = np.arange(2**n, dtype=np.int64)[:, None]
        signs = 1.0 - 2.0 * ((codes >> np.arange(n, dtype=np.int64)) & 1)
        extreme = int(np.count_nonzero(np.abs(signs @ d) / n >= threshold))
        return extreme / 2**n, 2**n
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, permutations, _BATCH):
        size = min(_BATCH, permutations - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
        extreme += int(np.count_nonzero(np.abs(signs @ d) / n >= threshold))
    return (extreme + 1) / (permutations + 1), permutations


def win_tie_loss(
    a: Sequence[float], b: Sequence[float], *, tolerance: float = TIE_TOLERANCE
) -> WinTieLoss:
    """Count queries where B beats A by more than ``tolerance``, ties, and loses."""
    if tolerance < 0:
        raise ConfigError(f"tolerance: must be >= 0, got {tolerance}")
    d = _differences(a, b)
    wins = int(np.count_nonzero(d > tolerance))
    losses = int(np.count_nonzero(d < -tolerance))
    return WinTieLoss(wins=wins, ties=len(d) - wins - losses, losses=losses)


def compare(
    a: str,
    values_a: Mapping[str, float],
    b: str,
    values_b: Mapping[str, float],
    *,
    measure: str,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
    tolerance: float = TIE_TOLERANCE,
) -> PairedComparison:
    """Compare B with the baseline A on per-query values keyed by the same query ids."""
    if set(values_a) != set(values_b):
        missing = sorted(set(values_a) ^ set(values_b))
        raise ConfigError(
            f"paired test: {a} and {b} were not scored on the same queries "
            f"(e.g. {', '.join(missing[:3])})"
        )
    qids = list(values_a)
    xs = [values_a[q] for q in qids]
    ys = [values_b[q] for q in qids]
    t_stat, t_p = paired_t_test(xs, ys)
    rand_p, used = randomisation_test(xs, ys, permutations=permutations, seed=seed)
    return PairedComparison(
        a=a,
        b=b,
        measure=measure,
        queries=len(qids),
        mean_a=float(np.mean(xs)),
        mean_b=float(np.mean(ys)),
        deltas={q: y - x for q, x, y in zip(qids, xs, ys, strict=True)},
        record=win_tie_loss(xs, ys, tolerance=tolerance),
        t_statistic=t_stat,
        t_pvalue=t_p,
        randomisation_pvalue=rand_p,
        permutations=used,
        seed=seed,
    )
