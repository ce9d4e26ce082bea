"""PPI++ system scores: the estimate and lambda against the ppi-python package
itself (ppi_mean_pointestimate, ppi_mean_ci from the same sums), and the parts
Concord adds (the small-sample interval, rank intervals, the gold budget, the
refusals) against the formulas written out. Their coverage is the harness's
(benchmarks/coverage, tests/analysis/test_coverage_harness.py)."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ppi_py = pytest.importorskip(
    "ppi_py", reason="ppi-python is a dev dependency (pip install -e .[dev])"
)

from analysis.statistics.bootstrap import ClusterBootstrap  # noqa: E402
from analysis.statistics.ppi import (  # noqa: E402
    Z95,
    estimates_from_sums,
    gold_needed,
    ppi_columns,
    system_scores,
)
from analysis.statistics.ppi import ranks as rank_rows  # noqa: E402


def study(seed=0, n_meetings=8, judge_bias=0.8, judge_noise=1.2):
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_meetings):
        for _ in range(rng.integers(10, 20)):
            for s, system in enumerate(("A", "B", "C")):
                quality = 7 - 1.5 * s + rng.normal(0, 2)
                rows.append(
                    {
                        "meeting": m,
                        "system": s,
                        "name": system,
                        "gold": float(np.clip(round(quality), 1, 10)),
                        "judge": float(
                            np.clip(round(quality + judge_bias + rng.normal(0, judge_noise)), 1, 10)
                        ),
                    }
                )
    frame = pd.DataFrame(rows)
    frame["labelled"] = rng.random(len(frame)) < 0.3
    return frame


def by_ppi_py(frame, system):
    rows = frame[frame["system"] == system]
    lab, unl = rows[rows["labelled"]], rows[~rows["labelled"]]
    y, yhat, yhat_u = lab["gold"].to_numpy(), lab["judge"].to_numpy(), unl["judge"].to_numpy()
    return (
        ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u),
        ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05),
        ppi_py.classical_mean_ci(y, alpha=0.05),
    )


def scores(frame, resamples=200, seed=0):
    boot = ClusterBootstrap(
        frame["meeting"].to_numpy(), frame["meeting"].nunique(), resamples, seed
    )
    result = system_scores(
        boot,
        frame["gold"].to_numpy(),
        frame["judge"].to_numpy(),
        frame["labelled"].to_numpy(),
        frame["system"].to_numpy(),
        ["A", "B", "C"],
    )
    return boot, result


def reported_interval(y, yhat, yhat_u, scale=(1.0, 10.0), pseudo=1):
    """The reported PPI++ interval written out directly: ppi-python's lambda and
    estimate, Student's t on n - 1 degrees of freedom, the rectifier's sample
    variance with `pseudo` pseudo-labels at each end of the scale, cut to it."""
    n, big_n = len(y), len(yhat_u)
    lam = float(
        np.clip(
            np.cov(y, yhat, ddof=0)[0, 1] / ((1 + n / big_n) * np.var(np.r_[yhat, yhat_u], ddof=1)),
            0,
            1,
        )
    )
    theta = lam * yhat_u.mean() + (y - lam * yhat).mean()
    ends = [scale[0] - lam * yhat.mean(), scale[1] - lam * yhat.mean()]
    padded = np.r_[y - lam * yhat, np.repeat(ends, pseudo)]
    se = math.sqrt(lam**2 * np.var(yhat_u, ddof=1) / big_n + np.var(padded, ddof=1) / n)
    q = stats.t.ppf(0.975, n - 1)
    gold_se = math.sqrt(np.var(np.r_[y, np.repeat(scale, pseudo)], ddof=1) / n)
    return theta, [max(theta - q * se, scale[0]), min(theta + q * se, scale[1])], se, gold_se, lam


@pytest.mark.parametrize(
    ("seed", "bias", "noise"), [(0, 0.8, 1.2), (1, -2.0, 0.5), (2, 0.0, 4.0), (3, 3.0, 1.0)]
)
def test_system_scores_are_ppi_pythons_estimate_with_the_small_sample_interval(seed, bias, noise):
    frame = study(seed, judge_bias=bias, judge_noise=noise)
    _, result = scores(frame)
    for s, name in enumerate(["A", "B", "C"]):
        point, _, _ = by_ppi_py(frame, s)
        entry = result["systems"][name]
        assert entry["ppi_mean"] == pytest.approx(float(np.squeeze(point)), abs=1e-10)
        rows = frame[frame["system"] == s]
        lab, unl = rows[rows["labelled"]], rows[~rows["labelled"]]
        theta, interval, se, gold_se, lam = reported_interval(
            lab["gold"].to_numpy(), lab["judge"].to_numpy(), unl["judge"].to_numpy()
        )
        assert entry["ppi_mean"] == pytest.approx(theta, abs=1e-10)
        assert entry["lambda"] == pytest.approx(lam, abs=1e-10)
        assert entry["ppi_ci95"] == pytest.approx(interval, abs=1e-10)
        q = stats.t.ppf(0.975, len(lab) - 1)
        gold_mean = lab["gold"].mean()
        assert entry["gold_ci95"] == pytest.approx(
            [max(gold_mean - q * gold_se, 1), min(gold_mean + q * gold_se, 10)], abs=1e-10
        )
        assert entry["judge_mean"] == pytest.approx(rows["judge"].mean())
        assert entry["n_labelled"] == rows["labelled"].sum()
        assert entry["width_ratio"] == pytest.approx(se / gold_se, rel=1e-9)
        assert entry["labels_saved"] == pytest.approx(max(0, 1 - (se / gold_se) ** 2), rel=1e-9)


def test_lambda_is_ppi_pythons_power_tuning_and_clipped():
    rng = np.random.default_rng(9)
    for _ in range(50):
        n, big_n = rng.integers(5, 60), rng.integers(5, 400)
        y = rng.normal(5, 2, n)
        direction = rng.choice([-1, 0.3, 1, 4])
        yhat = direction * y + rng.normal(0, rng.uniform(0.1, 3), n)
        yhat_u = direction * rng.normal(5, 2, big_n) + rng.normal(0, 1, big_n)
        labelled = np.r_[np.ones(n, bool), np.zeros(big_n, bool)]
        gold = np.r_[y, np.full(big_n, np.nan)]
        judge = np.r_[yhat, yhat_u]
        sums = ppi_columns(gold, judge, labelled, np.ones(n + big_n, bool)).sum(axis=0)
        est = estimates_from_sums(sums[None, :])
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
        point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)))
        assert est["ppi_mean"][0] == pytest.approx(point, abs=1e-9)
        # ppi-python's own (normal) interval, from the same sums
        assert [
            est["ppi_mean"][0] - Z95 * est["ppi_se"][0],
            est["ppi_mean"][0] + Z95 * est["ppi_se"][0],
        ] == pytest.approx([low[0], high[0]], abs=1e-9)
        assert 0 <= est["lambda"][0] <= 1


def test_rank_intervals_are_read_from_simultaneous_intervals():
    """Each system's rank interval runs from 1 + the systems whose whole
    Bonferroni interval (t at 1 - 0.05 / 3) lies above its own to 3 - those
    whose interval lies below: checked against the intervals written out."""
    frame = study(5)
    _, result = scores(frame)
    bounds = {}
    for s, name in enumerate(["A", "B", "C"]):
        rows = frame[frame["system"] == s]
        lab, unl = rows[rows["labelled"]], rows[~rows["labelled"]]
        theta, _, se, _, _ = reported_interval(
            lab["gold"].to_numpy(), lab["judge"].to_numpy(), unl["judge"].to_numpy()
        )
        q = stats.t.ppf(1 - 0.05 / 6, len(lab) - 1)
        bounds[name] = (theta - q * se, theta + q * se)
    for entry in result["ranking"]["ppi"]:
        low, high = bounds[entry["system"]]
        above = sum(other[0] > high for other in bounds.values())
        below = sum(other[1] < low for other in bounds.values())
        assert entry["rank_ci95"] == [1 + above, 3 - below]
    assert [e["system"] for e in result["ranking"]["ppi"]] == ["A", "B", "C"]
    assert result["ranking"]["ppi"][0]["rank_ci95"][0] == 1


def labelled_frame(gold, judge, labelled_count, systems=1):
    n = len(gold)
    labelled = np.zeros(n, bool)
    labelled[:labelled_count] = True
    return gold, judge, labelled, np.zeros(n, int)


def test_fewer_than_ten_labels_give_no_interval_and_say_how_many_more():
    rng = np.random.default_rng(3)
    gold = rng.integers(1, 11, 100).astype(float)
    judge = np.clip(gold + rng.normal(0, 1, 100), 1, 10)
    for count in (2, 9):
        labelled = np.arange(100) < count
        boot = ClusterBootstrap(np.zeros(100, int), 1, 0)
        entry = system_scores(boot, gold, judge, labelled, np.zeros(100, int), ["A"])["systems"][
            "A"
        ]
        assert entry == {
            "computable": False,
            "reason": f"not enough labels for an interval: {count} gold-rated responses of this "
            f"system, {10 - count} more (an interval needs 10; below that the coverage harness "
            "finds none that holds)",
        }
    labelled = np.arange(100) < 10
    entry = system_scores(
        ClusterBootstrap(np.zeros(100, int), 1, 0), gold, judge, labelled, np.zeros(100, int), ["A"]
    )["systems"]["A"]
    assert entry["n_labelled"] == 10 and entry["ppi_ci95"][0] < entry["ppi_mean"]


def test_labels_at_the_scale_end_give_an_interval_that_is_not_zero_wide():
    """Forty labels of 10 (a system the raters all gave full marks): the mean
    may still be below 10 (a rare low score not drawn), so the interval is not
    [10, 10] and PPI claims no labels saved (before: zero width, "1.0")."""
    rng = np.random.default_rng(4)
    gold = np.full(200, 10.0)
    gold[rng.choice(200, 4, replace=False)] = 2.0  # 2% low scores in the population
    judge = np.clip(rng.normal(8, 1, 200), 1, 10)
    labelled = np.zeros(200, bool)
    labelled[np.flatnonzero(gold == 10)[:40]] = True
    entry = system_scores(
        ClusterBootstrap(np.zeros(200, int), 1, 0), gold, judge, labelled, np.zeros(200, int), ["A"]
    )["systems"]["A"]
    assert entry["gold_mean"] == 10.0 and entry["lambda"] == pytest.approx(0.0, abs=1e-9)
    assert entry["gold_ci95"][0] <= gold.mean() < entry["gold_ci95"][1] == 10.0
    assert entry["ppi_ci95"][0] <= gold.mean() and entry["ppi_ci95"][1] == 10.0
    assert entry["labels_saved"] == pytest.approx(0.0, abs=1e-9)


def test_ranks_of_rows():
    means = np.array([[5.0, 7.0, 6.0], [1.0, np.nan, 2.0]])
    out = rank_rows(means)
    assert out[0].tolist() == [3.0, 1.0, 2.0]
    assert np.isnan(out[1]).all()


def like(values: np.ndarray, n: int) -> np.ndarray:
    """n numbers with exactly the mean and sample variance of `values`."""
    z = np.random.default_rng(n).normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)
    return values.mean() + values.std(ddof=1) * z


def test_gold_needed_against_a_direct_loop():
    """The budget is the fewest labels whose reported interval (t, a pseudo-label
    at each end of the scale) is narrow enough, for labels like those at hand."""
    frame = study(4)
    rows = frame[frame["system"] == 0]
    lab = rows[rows["labelled"]]
    y, h, everything = lab["gold"].to_numpy(), lab["judge"].to_numpy(), rows["judge"].to_numpy()
    for width in (1.0, 1.5, 3.0):
        plan = gold_needed(y, h, everything, width)
        gold_only = next(
            n
            for n in range(10, 100_000)
            if stats.t.ppf(0.975, n - 1)
            * math.sqrt(np.var(np.r_[like(y, n), 1.0, 10.0], ddof=1) / n)
            <= width / 2
        )
        assert plan["gold_only"] == gold_only
        expected = None
        total = len(everything)
        cov = np.cov(y, h, ddof=0)[0, 1]
        for n in range(10, total + 1):
            rest = total - n
            lam = (
                0.0
                if rest == 0
                else min(1.0, max(0.0, cov / ((1 + n / rest) * np.var(everything, ddof=1))))
            )
            ends = [1 - lam * h.mean(), 10 - lam * h.mean()]
            padded = np.var(np.r_[like(y - lam * h, n), ends], ddof=1)
            variance = padded / n + (lam**2 * np.var(everything, ddof=1) / rest if rest else 0)
            if stats.t.ppf(0.975, n - 1) * math.sqrt(variance) <= width / 2:
                expected = n
                break
        assert plan["ppi"] == expected
        assert plan["ceiling"] == math.ceil(plan["gold_only"] / 2)
