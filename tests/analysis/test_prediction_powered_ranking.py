"""Prediction-powered rank-sets (analysis.statistics.prediction_powered_ranking)
against the authors' code, transcribed below: Chatzi et al. 2024,
github.com/Networks-Learning/prediction-powered-ranking (MIT licence),
src/estimate.py (sample_avg, estimate, lhat_opt) and src/ranksets.py
(find_ranksets), on thousands of generated battles.

Their code takes each battle's outcome as two columns, model_a's and
model_b's points; a tie is (0, 0) in their data reader, and (1/2, 1/2) here,
which their estimator takes as it takes any points. Concord's covariance is
theirs with each system's battles in place of all battles (the module's
docstring says why), so it equals theirs times n^2 / (c_m c_l) and the
G / (G - 1) cluster correction; with that scaling, the rank-sets are theirs.
The intervals' coverage is the harness's (benchmarks/coverage/rows_ppr.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from analysis.statistics import prediction_powered_ranking as ppr

# --- the authors' estimate.py and ranksets.py, transcribed -------------------------------------


def authors_sample_avg(k, dn, key="llm"):
    n = np.shape(dn["model_a_matrix"])[1]
    m1, m2 = dn["model_a_matrix"], dn["model_b_matrix"]
    w1, w2 = dn["winner1_predicted"], dn["winner2_predicted"]
    if key == "human":
        w1, w2 = dn["winner1_human"], dn["winner2_human"]
    a = np.ones((k, 1)) @ ((m1 + m2) @ np.ones((n, 1))).T * np.identity(k)
    for i in range(k):
        a[i][i] = 1 / a[i][i]
    a = a @ (m1 @ w1 + m2 @ w2)
    big_a = np.ones((k, 1)) @ (w1 - m1.T @ a).T * m1
    big_a += np.ones((k, 1)) @ (w2 - m2.T @ a).T * m2
    return a, big_a @ big_a.T / n**2


def authors_lhat_opt(k, dn, big_n):
    n = np.shape(dn["model_a_matrix"])[1]
    n_big = np.shape(big_n["model_a_matrix"])[1]
    cov_big = authors_sample_avg(k, big_n)[1] * n_big
    a1 = authors_sample_avg(k, dn)[0]
    a2 = authors_sample_avg(k, dn, key="human")[0]
    m1, m2 = dn["model_a_matrix"], dn["model_b_matrix"]
    w1, wf1 = dn["winner1_human"], dn["winner1_predicted"]
    w2, wf2 = dn["winner2_human"], dn["winner2_predicted"]
    a_1 = np.ones((k, 1)) @ (wf1 - m1.T @ a1).T * m1
    a_1 += np.ones((k, 1)) @ (wf2 - m2.T @ a1).T * m2
    a_2 = np.ones((k, 1)) @ (w1 - m1.T @ a2).T * m1
    a_2 += np.ones((k, 1)) @ (w2 - m2.T @ a2).T * m2
    cov_small = a_2 @ a_1.T / n
    lhat = np.trace(cov_small) / ((1 + n / n_big) * np.trace(cov_big))
    return min(max(lhat, 0), 1)


def authors_estimate(k, dn, big_n, lhat=1):
    n = np.shape(dn["model_a_matrix"])[1]
    n_big = np.shape(big_n["model_a_matrix"])[1]
    m1_big, m2_big = big_n["model_a_matrix"], big_n["model_b_matrix"]
    wf1_big, wf2_big = big_n["winner1_predicted"], big_n["winner2_predicted"]
    a = np.ones((k, 1)) @ ((m1_big + m2_big) @ np.ones((n_big, 1))).T * np.identity(k)
    for i in range(k):
        a[i][i] = 1 / a[i][i]
    a = a @ (m1_big @ wf1_big + m2_big @ wf2_big)
    m1n, m2n = dn["model_a_matrix"], dn["model_b_matrix"]
    w1n, wf1n = dn["winner1_human"], dn["winner1_predicted"]
    w2n, wf2n = dn["winner2_human"], dn["winner2_predicted"]
    b = np.ones((k, 1)) @ ((m1n + m2n) @ np.ones((n, 1))).T * np.identity(k)
    for i in range(k):
        b[i][i] = 1 / b[i][i]
    b = b @ (m1n @ (lhat * wf1n - w1n) + m2n @ (lhat * wf2n - w2n))
    big_a = np.ones((k, 1)) @ (wf1_big - m1_big.T @ a).T * m1_big
    big_a += np.ones((k, 1)) @ (wf2_big - m2_big.T @ a).T * m2_big
    big_b = np.ones((k, 1)) @ (lhat * wf1n - w1n - m1n.T @ b).T * m1n
    big_b += np.ones((k, 1)) @ (lhat * wf2n - w2n - m2n.T @ b).T * m2n
    thetahat = lhat * a - b
    sigma = lhat**2 * big_a @ big_a.T / n_big**2 + big_b @ big_b.T / n**2
    return thetahat, sigma


def authors_find_ranksets(k, thetahat, sigma, alpha):
    low = np.ones((k, 1))
    up = np.ones((k, 1)) * k
    for m1 in range(k):
        for m2 in range(k):
            if m1 == m2:
                continue
            d = abs(thetahat[m1] - thetahat[m2]) / np.sqrt(2) - np.sqrt(
                (sigma[m1][m1] + sigma[m2][m2] - 2 * sigma[m1][m2])
                * (stats.chi2.ppf(1 - alpha, k) / 2)
            )
            if d > 0 and thetahat[m1] < thetahat[m2]:
                low[m1] += 1
            elif d > 0 and thetahat[m1] > thetahat[m2]:
                up[m1] -= 1
    return [[int(low[m][0]), int(up[m][0])] for m in range(k)]


# --- generated battles ---------------------------------------------------------------------------


def summarised(k, first, second, judge, human=None):
    """The authors' summarize_dataset: one-hot (k, n) matrices and (n, 1) points."""
    n = len(first)
    m1, m2 = np.zeros((k, n)), np.zeros((k, n))
    m1[first, np.arange(n)] = 1
    m2[second, np.arange(n)] = 1
    out = {
        "model_a_matrix": m1,
        "model_b_matrix": m2,
        "winner1_predicted": judge[:, None],
        "winner2_predicted": 1 - judge[:, None],
    }
    if human is not None:
        out["winner1_human"] = human[:, None]
        out["winner2_human"] = 1 - human[:, None]
    return out


def battles(rng, k, n, ties=True):
    """n battles of k systems: skills, a judge that agrees with the humans
    most of the time, ties in both."""
    first = rng.integers(0, k, n)
    second = (first + rng.integers(1, k, n)) % k
    skill = rng.normal(0, 1, k)
    p = 1 / (1 + np.exp(-(skill[first] - skill[second])))
    draw = rng.random(n)
    human = np.where(draw < p, 1.0, 0.0)
    if ties:
        human[np.abs(draw - p) < 0.1] = 0.5
    judge = np.where(rng.random(n) < 0.75, human, rng.choice([0.0, 0.5, 1.0], n))
    if not ties:
        judge[judge == 0.5] = 1.0
    return first, second, human, judge


def per_system_scale(k, first, second, n):
    counts = np.bincount(first, minlength=k) + np.bincount(second, minlength=k)
    return n**2 / np.outer(counts, counts)


@pytest.mark.parametrize("seed", range(40))
def test_equals_the_authors_estimate_on_generated_battles(seed):
    """theta, lambda and Sigma (scaled as the docstring says) equal the
    authors' on 40 x (300-3,000) battles of 3-12 systems, with ties, each
    battle its own cluster, the labelled battles a random 10-40%."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 13))
    n_all = int(rng.integers(300, 3000))
    first, second, human, judge = battles(rng, k, n_all)
    labelled = rng.random(n_all) < rng.uniform(0.1, 0.4)
    lab, unl = labelled, ~labelled
    dn = summarised(k, first[lab], second[lab], judge[lab], human[lab])
    big_n = summarised(k, first[unl], second[unl], judge[unl])
    lhat = authors_lhat_opt(k, dn, big_n)
    theta_ref, sigma_ref = authors_estimate(k, dn, big_n, lhat=lhat)

    found = ppr.estimate(first, second, human, judge, labelled, np.arange(n_all), k, lam=lhat)
    assert np.max(np.abs(found.theta - theta_ref.ravel())) < 1e-12
    n_lab, n_unl = int(lab.sum()), int(unl.sum())
    human_only = ppr.estimate(first, second, human, judge, labelled, np.arange(n_all), k, lam=0.0)
    _, sigma_human = authors_sample_avg(k, dn, key="human")
    scale_lab = per_system_scale(k, first[lab], second[lab], n_lab)
    correction = n_all / (n_all - 1)
    assert np.allclose(human_only.covariance, sigma_human * scale_lab * correction, rtol=1e-10)

    # the full covariance: the labelled rectifier's part and the unlabelled judge's part
    _, sigma_judge = authors_sample_avg(k, big_n)
    rectifier = summarised(k, first[lab], second[lab], judge[lab], human[lab])
    rectifier["winner1_predicted"] = human[lab][:, None] - lhat * judge[lab][:, None]
    rectifier["winner2_predicted"] = (1 - human[lab][:, None]) - lhat * (1 - judge[lab][:, None])
    _, sigma_rectifier = authors_sample_avg(k, rectifier)
    assert np.allclose(sigma_ref, lhat**2 * sigma_judge + sigma_rectifier, rtol=1e-10)
    scale_unl = per_system_scale(k, first[unl], second[unl], n_unl)
    ours = (lhat**2 * sigma_judge * scale_unl + sigma_rectifier * scale_lab) * correction
    assert np.allclose(found.covariance, ours, rtol=1e-10, atol=1e-16)


@pytest.mark.parametrize("seed", range(40))
def test_rank_sets_equal_the_authors_find_ranksets(seed):
    """Given the same theta and Sigma, the rank-sets are the authors' (their
    double loop against the vectorised rule), at alpha 0.05 and 0.1."""
    rng = np.random.default_rng(1000 + seed)
    k = int(rng.integers(2, 15))
    first, second, human, judge = battles(rng, k, int(rng.integers(200, 4000)))
    labelled = rng.random(len(first)) < 0.3
    found = ppr.estimate(first, second, human, judge, labelled, np.arange(len(first)), k)
    for alpha in (0.05, 0.1):
        ours = ppr.rank_sets(found.theta, found.covariance, alpha)
        theirs = authors_find_ranksets(k, found.theta, found.covariance, alpha)
        assert ours.tolist() == theirs


def test_lambda_minimises_the_trace_and_approaches_the_authors():
    """lambda is the minimiser of the covariance's trace over [0, 1] (a grid
    search), and with many battles the authors' lhat_opt comes close to it."""
    rng = np.random.default_rng(7)
    k = 6
    first, second, human, judge = battles(rng, k, 60_000)
    labelled = rng.random(len(first)) < 0.2
    cluster = np.arange(len(first))
    found = ppr.estimate(first, second, human, judge, labelled, cluster, k)
    grid = np.linspace(0, 1, 201)
    traces = [
        np.trace(ppr.estimate(first, second, human, judge, labelled, cluster, k, lam=v).covariance)
        for v in grid
    ]
    assert abs(found.lam - grid[int(np.argmin(traces))]) <= 0.005 + 1e-12
    assert 0.3 < found.lam < 1.0
    lab, unl = labelled, ~labelled
    theirs = authors_lhat_opt(
        k,
        summarised(k, first[lab], second[lab], judge[lab], human[lab]),
        summarised(k, first[unl], second[unl], judge[unl]),
    )
    assert abs(found.lam - theirs) < 0.02


def test_the_authors_sigma_is_too_small_by_k_squared_over_four():
    """Why the covariance departs from the authors': over 2,000 replays of
    balanced battles of 6 systems, the win rates' variance is about 9 times
    their Sigma's diagonal, and equals Concord's."""
    rng = np.random.default_rng(3)
    k, n = 6, 600
    skill = np.linspace(-0.6, 0.6, k)
    rates, theirs, ours = [], [], []
    for _ in range(2000):
        first = rng.integers(0, k, n)
        second = (first + rng.integers(1, k, n)) % k
        outcome = (rng.random(n) < 1 / (1 + np.exp(-(skill[first] - skill[second])))).astype(float)
        rates.append(ppr.win_rates(first, second, outcome, k))
        theirs.append(np.diag(authors_sample_avg(k, summarised(k, first, second, outcome))[1]))
        found = ppr.estimate(
            first, second, outcome, outcome, np.ones(n, bool), np.arange(n), k, lam=0.0
        )
        ours.append(np.diag(found.covariance))
    empirical = np.var(rates, axis=0)
    assert np.all(np.abs(empirical / np.mean(theirs, axis=0) / (k**2 / 4) - 1) < 0.15)
    assert np.all(np.abs(empirical / np.mean(ours, axis=0) - 1) < 0.15)


def test_clusters_sum_before_the_square():
    """Battles of one meeting count together: duplicating every battle within
    its meeting leaves theta and doubles no variance away (the covariance
    equals the one of the battles taken once, where one-per-cluster would
    halve it)."""
    rng = np.random.default_rng(11)
    k = 4
    first, second, human, judge = battles(rng, k, 800)
    labelled = rng.random(800) < 0.5
    meeting = np.arange(800)
    once = ppr.estimate(first, second, human, judge, labelled, meeting, k)
    twice = ppr.estimate(
        np.tile(first, 2),
        np.tile(second, 2),
        np.tile(human, 2),
        np.tile(judge, 2),
        np.tile(labelled, 2),
        np.tile(meeting, 2),
        k,
    )
    assert np.allclose(once.theta, twice.theta)
    assert once.lam == pytest.approx(twice.lam)
    assert np.allclose(once.covariance, twice.covariance, rtol=1e-10)
    apart = ppr.estimate(
        np.tile(first, 2),
        np.tile(second, 2),
        np.tile(human, 2),
        np.tile(judge, 2),
        np.tile(labelled, 2),
        np.arange(1600),
        k,
        lam=once.lam,
    )
    assert np.allclose(apart.covariance * 2, once.covariance, rtol=0.01)


def test_report_ranking_refuses_without_enough_labelled_meetings():
    rng = np.random.default_rng(5)
    k = 3
    first, second, human, judge = battles(rng, k, 300)
    meeting = rng.integers(0, 40, 300)
    labelled = meeting < 4  # 4 labelled meetings, 6 needed
    found = ppr.ranking(first, second, human, judge, labelled, meeting, ["a", "b", "c"])
    assert found["ci_note"].startswith("not enough labelled meetings for rank-sets: 2 more")
    assert all(s["rank_set"] is None for s in found["prediction_powered"]["systems"])
    labelled = meeting < 20
    found = ppr.ranking(first, second, human, judge, labelled, meeting, ["a", "b", "c"])
    assert "ci_note" not in found
    sets = [s["rank_set"] for s in found["prediction_powered"]["systems"]]
    assert all(1 <= lo <= hi <= 3 for lo, hi in sets)
    alone = found["humans_alone"]["mean_rank_set_size"]
    assert found["prediction_powered"]["mean_rank_set_size"] <= alone
    missing = ppr.ranking(
        first, second, human, judge, (first != 0) & (second != 0), meeting, ["a", "b", "c"]
    )
    assert missing == {"computable": False, "reason": "no labelled battle for a"}


@pytest.mark.parametrize(("k", "clusters"), [(2, 8), (3, 8), (6, 20), (16, 100)])
def test_the_max_t_multiplier_is_the_studentized_range_for_independent_systems(k, clusters):
    """With Sigma = s^2 I the largest standardized difference is the range of k
    independent t's over sqrt(2): scipy's studentized range (Tukey's HSD);
    for two systems it is Student's t, exactly. Within the simulation's error
    (20,000 draws: about 1% of the quantile)."""
    covariance = 0.003 * np.eye(k)
    got = ppr.max_t_multiplier(covariance, clusters)
    expected = stats.studentized_range.ppf(0.95, k, clusters - 1) / np.sqrt(2)
    assert got == pytest.approx(expected, rel=0.02)
    if k == 2:
        assert got == pytest.approx(stats.t.ppf(0.975, clusters - 1), rel=1e-12)
        assert expected == pytest.approx(got, rel=1e-6)


def test_the_max_t_multiplier_covers_every_difference_at_once_under_correlation():
    """A correlated Sigma of 8 systems, drawn again with another seed: all 28
    standardized differences stay within the multiplier in 95% of draws, and
    the multiplier is below the authors' chi-square projection."""
    rng = np.random.default_rng(11)
    k, clusters = 8, 30
    mixing = rng.normal(size=(k, k)) * rng.uniform(0.2, 1.5, size=k)
    covariance = mixing @ mixing.T / 100
    multiplier = ppr.max_t_multiplier(covariance, clusters)
    draws = 200_000
    root = np.linalg.cholesky(covariance)
    t = rng.standard_normal((draws, k)) @ root.T
    t /= np.sqrt(rng.chisquare(clusters - 1, draws) / (clusters - 1))[:, None]
    first, second = np.triu_indices(k, 1)
    sd = np.sqrt(ppr.difference_variances(covariance)[first, second])
    inside = (np.abs(t[:, first] - t[:, second]) / sd).max(axis=1) <= multiplier
    assert inside.mean() == pytest.approx(0.95, abs=0.003)
    assert multiplier < np.sqrt(stats.chi2.ppf(0.95, k))
    # the rank-sets with the smaller multiplier are nested in the authors'
    theta = rng.normal(0.5, 0.05, size=k)
    tight = ppr.rank_sets(theta, covariance, multiplier=multiplier)
    wide = ppr.rank_sets(theta, covariance)
    assert ((tight[:, 0] >= wide[:, 0]) & (tight[:, 1] <= wide[:, 1])).all()
