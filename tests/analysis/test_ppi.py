"""PPI++ system scores against the ppi-python package itself (ppi_mean_ci,
ppi_mean_pointestimate, classical_mean_ci), and the parts Concord adds (the
meeting-clustered interval, rank intervals, the gold budget) against direct
loops."""

import math

import numpy as np
import pandas as pd
import pytest

ppi_py = pytest.importorskip(
    "ppi_py", reason="ppi-python is a dev dependency (pip install -e .[dev])"
)

from analysis.bootstrap import ClusterBootstrap  # noqa: E402
from analysis.ppi import (  # noqa: E402
    Z95,
    estimates_from_sums,
    gold_needed,
    ppi_columns,
    system_scores,
)
from analysis.ppi import ranks as rank_rows  # noqa: E402


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


@pytest.mark.parametrize(
    ("seed", "bias", "noise"), [(0, 0.8, 1.2), (1, -2.0, 0.5), (2, 0.0, 4.0), (3, 3.0, 1.0)]
)
def test_system_scores_match_ppi_python(seed, bias, noise):
    frame = study(seed, judge_bias=bias, judge_noise=noise)
    _, result = scores(frame)
    for s, name in enumerate(["A", "B", "C"]):
        point, (low, high), (glow, ghigh) = by_ppi_py(frame, s)
        entry = result["systems"][name]
        assert entry["ppi_mean"] == pytest.approx(float(np.squeeze(point)), abs=1e-10)
        assert entry["ppi_ci95"] == pytest.approx([float(low[0]), float(high[0])], abs=1e-10)
        assert entry["gold_ci95"] == pytest.approx([float(glow), float(ghigh)], abs=1e-10)
        rows = frame[frame["system"] == s]
        assert entry["judge_mean"] == pytest.approx(rows["judge"].mean())
        assert entry["n_labelled"] == rows["labelled"].sum()
        ratio = (high[0] - low[0]) / (ghigh - glow)
        assert entry["width_ratio"] == pytest.approx(ratio, rel=1e-9)
        assert entry["labels_saved"] == pytest.approx(max(0, 1 - ratio**2), rel=1e-9)


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
        assert [
            est["ppi_mean"][0] - Z95 * est["ppi_se"][0],
            est["ppi_mean"][0] + Z95 * est["ppi_se"][0],
        ] == pytest.approx([low[0], high[0]], abs=1e-9)
        assert 0 <= est["lambda"][0] <= 1


def test_clustered_interval_and_rank_intervals_match_a_direct_loop():
    frame = study(5)
    boot, result = scores(frame, resamples=150, seed=5)
    groups = {m: g for m, g in frame.groupby("meeting")}
    ppi_means, gold_means = [], []
    for draw in boot.draws:
        sample = pd.concat([groups[m] for m in draw], ignore_index=True)
        row_ppi, row_gold = [], []
        for s in range(3):
            rows = sample[sample["system"] == s]
            lab, unl = rows[rows["labelled"]], rows[~rows["labelled"]]
            row_ppi.append(
                float(
                    np.squeeze(
                        ppi_py.ppi_mean_pointestimate(
                            lab["gold"].to_numpy(), lab["judge"].to_numpy(), unl["judge"].to_numpy()
                        )
                    )
                )
            )
            row_gold.append(lab["gold"].mean())
        ppi_means.append(row_ppi)
        gold_means.append(row_gold)
    ppi_means, gold_means = np.array(ppi_means), np.array(gold_means)
    for s, name in enumerate(["A", "B", "C"]):
        expected = list(np.percentile(ppi_means[:, s], [2.5, 97.5]))
        assert result["systems"][name]["ppi_clustered_ci95"] == pytest.approx(expected, abs=1e-9)
    for key, means in (("ppi", ppi_means), ("gold_only", gold_means)):
        loop_ranks = np.array(
            [[sorted(row, reverse=True).index(v) + 1 for v in row] for row in means]
        )
        for entry in result["ranking"][key]:
            s = ["A", "B", "C"].index(entry["system"])
            low, high = np.percentile(loop_ranks[:, s], [2.5, 97.5])
            assert entry["rank_ci95"] == [math.floor(low), math.ceil(high)]
    assert [e["system"] for e in result["ranking"]["ppi"]] == ["A", "B", "C"]


def test_ranks_of_rows():
    means = np.array([[5.0, 7.0, 6.0], [1.0, np.nan, 2.0]])
    out = rank_rows(means)
    assert out[0].tolist() == [3.0, 1.0, 2.0]
    assert np.isnan(out[1]).all()


def test_gold_needed_against_a_direct_loop():
    frame = study(4)
    rows = frame[frame["system"] == 0]
    lab = rows[rows["labelled"]]
    y, h, everything = lab["gold"].to_numpy(), lab["judge"].to_numpy(), rows["judge"].to_numpy()
    for width in (0.6, 1.0, 1.5, 3.0):
        plan = gold_needed(y, h, everything, width)
        sd = np.std(y)
        assert plan["gold_only"] == max(2, math.ceil((Z95 * sd / (width / 2)) ** 2))
        # the loop: every n of the system's responses, the PPI++ width from the
        # variance formula of the PPI++ paper with ppi-python's lambda
        expected = None
        total = len(everything)
        cov = np.cov(y, h, ddof=0)[0, 1]
        for n in range(2, total + 1):
            rest = total - n
            lam = (
                0.0
                if rest == 0
                else min(1.0, max(0.0, cov / ((1 + n / rest) * np.var(everything, ddof=1))))
            )
            variance = np.var(y - lam * h) / n + (
                lam**2 * np.var(everything, ddof=1) / rest if rest else 0
            )
            if 2 * Z95 * math.sqrt(variance) <= width:
                expected = n
                break
        assert plan["ppi"] == expected
        assert plan["ceiling"] == math.ceil(plan["gold_only"] / 2)
