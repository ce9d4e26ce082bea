"""The ceiling on savings (analysis.statistics.savings) against independent
references: numpy's correlation of the responses' deviations from their
system's means, and ppi-python's PPI++ interval, whose squared width ratio
to the labels-only interval tends to 1 - r^2 as judged responses grow. The
interval's coverage is the harness's (benchmarks/coverage/rows_savings.py)."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.statistics import savings
from analysis.statistics.bootstrap import ClusterBootstrap

ppi_py = pytest.importorskip(
    "ppi_py", reason="ppi-python is a dev dependency (pip install -e .[dev])"
)


def population(rng, n=600, k=4, rho=0.7, clusters=20):
    system = rng.integers(0, k, n)
    level = rng.normal(0, 2, k)[system]  # systems differ: a pooled r would be inflated
    truth = rng.normal(0, 1, n)
    y = level + truth
    x = 0.5 * level + rho * truth + np.sqrt(1 - rho**2) * rng.normal(0, 1, n)
    return system, x, y, rng.integers(0, clusters, n)


def residual_r(x, y, system):
    both = np.isfinite(x) & np.isfinite(y)
    x, y, system = x[both], y[both], system[both]
    dx = x - np.array([x[system == s].mean() for s in system])
    dy = y - np.array([y[system == s].mean() for s in system])
    return np.corrcoef(dx, dy)[0, 1]


@pytest.mark.parametrize("seed", range(20))
def test_within_r_equals_the_residual_correlation(seed):
    """On 20 populations with unknown scores here and there, and on the sum
    of a subset of meetings (what a resample's sums are), within_r is
    numpy's correlation of the deviations from each system's means."""
    rng = np.random.default_rng(seed)
    system, x, y, meeting = population(rng, k=int(rng.integers(1, 7)))
    x[rng.random(len(x)) < 0.05] = np.nan
    columns = savings.within_columns(x, y, system, int(system.max()) + 1)
    assert savings.within_r(columns.sum(axis=0)) == pytest.approx(
        residual_r(x, y, system), abs=1e-12
    )
    kept = meeting < 12
    assert savings.within_r(columns[kept].sum(axis=0)) == pytest.approx(
        residual_r(x[kept], y[kept], system[kept]), abs=1e-12
    )


def test_the_share_is_what_ppi_plus_plus_saves_with_many_judged_responses():
    """One system, 4,000 labels and 400,000 judged responses: ppi-python's
    PPI++ interval against the classical one, squared, is 1 - r^2 to 0.01."""
    rng = np.random.default_rng(3)
    n, big = 4_000, 400_000
    truth = rng.normal(0, 1, n + big)
    judge = 0.8 * truth + 0.6 * rng.normal(0, 1, n + big)
    y = truth[:n]
    ppi_low, ppi_high = ppi_py.ppi_mean_ci(y, judge[:n], judge[n:], alpha=0.05)
    classical_low, classical_high = ppi_py.classical_mean_ci(y, alpha=0.05)
    ratio = float(np.ravel(ppi_high - ppi_low)[0] / (classical_high - classical_low))
    columns = savings.within_columns(judge[:n], y, np.zeros(n, int), 1)
    share = savings.share_saved(float(savings.within_r(columns.sum(axis=0))))
    assert 1 - ratio**2 == pytest.approx(share, abs=0.01)
    assert share == pytest.approx(0.64, abs=0.03)


def test_the_ceiling_with_its_interval_and_refusals():
    rng = np.random.default_rng(5)
    system, x, y, meeting = population(rng, rho=0.6)
    boot = ClusterBootstrap(meeting, 20, 400, 7)
    found = savings.savings_ceiling(boot, system, 4, x, y)
    r = found["within_system_r"]
    assert r == pytest.approx(residual_r(x, y, system), abs=1e-12)
    low, high = found["r_ci95"]
    assert low < r < high
    assert found["share_saved"] == pytest.approx(r**2)
    assert found["share_saved_ci95"] == [pytest.approx(max(low, 0) ** 2), pytest.approx(high**2)]
    assert found["labels_worth"] == pytest.approx(1 / (1 - r**2))
    assert found["labels_worth_ci95"][0] <= found["labels_worth"] <= found["labels_worth_ci95"][1]
    assert "ci_note" not in found
    # a judge that disagrees saves nothing, interval and all
    against = savings.savings_ceiling(boot, system, 4, -x, y)
    assert against["share_saved"] == 0.0 and against["share_saved_ci95"] == [0.0, 0.0]
    assert against["labels_worth"] == 1.0
    # five meetings: the estimate without an interval, and why
    few = ClusterBootstrap(meeting % 5, 5, 400, 7)
    found = savings.savings_ceiling(few, system, 4, x, y)
    assert found["r_ci95"] == [None, None] and found["share_saved_ci95"] == [None, None]
    assert found["ci_note"].startswith("not enough meetings for an interval")
    constant = savings.savings_ceiling(boot, system, 4, np.full(len(x), 7.0), y)
    assert constant["computable"] is False
    perfect = savings.savings_ceiling(boot, system, 4, y, y)
    assert perfect["share_saved"] == pytest.approx(1.0) and perfect["labels_worth"] is None
