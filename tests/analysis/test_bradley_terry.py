"""Bradley-Terry ratings (analysis.statistics.bradley_terry) against two
independent references on thousands of generated battles:

- FastChat's compute_bt and compute_bootstrap_bt (lm-sys/FastChat,
  fastchat/serve/monitor/rating_systems.py, Apache-2.0), transcribed below:
  the battles' unique (matchup, outcome) rows and their counts, the logistic
  loss with a tie as half a win, L-BFGS-B from zero at FastChat's tolerance,
  400 Elo points per factor of 10 around 1000; its bootstrap resamples those
  counts from a multinomial and fits each;
- crowd-kit's BradleyTerry (Hunter's MM algorithm), on battles without ties
  (it has none).

The intervals' coverage is the harness's (benchmarks/coverage/
rows_bradley_terry.py, tests/analysis/test_coverage_harness.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from analysis.statistics import bradley_terry as bt
from analysis.statistics.bootstrap import ClusterBootstrap

LOG10 = math.log(10.0)

# --- FastChat's compute_bt, transcribed -------------------------------------------------------


def fastchat_schedule(first, second, outcome):
    """preprocess_for_bt: unique (a, b, outcome) rows and how often each occurs."""
    schedule = np.column_stack([first, second, np.round(np.asarray(outcome) * 2)]).astype(np.int32)
    rows, weights = np.unique(schedule, return_counts=True, axis=0)
    return rows[:, :2], rows[:, 2].astype(float) / 2.0, weights.astype(float)


def fastchat_loss_and_grad(ratings, matchups, outcomes, weights, alpha):
    logits = alpha * (ratings[matchups[:, 0]] - ratings[matchups[:, 1]])
    probs = expit(logits)
    loss = -((np.log(probs) * outcomes + np.log(1.0 - probs) * (1.0 - outcomes)) * weights).sum()
    grads = -alpha * (outcomes - probs) * weights
    model_grad = np.zeros_like(ratings)
    np.add.at(model_grad, matchups[:, [0, 1]], grads[:, None] * np.array([1.0, -1.0]))
    return loss, model_grad


def fastchat_fit_bt(matchups, outcomes, weights, n_models, alpha=LOG10, tol=1e-6):
    result = minimize(
        fun=fastchat_loss_and_grad,
        x0=np.zeros(n_models),
        args=(matchups, outcomes, weights, alpha),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 100, "gtol": tol},  # FastChat also passes disp=False
    )
    return result["x"] * 400 + 1000  # scale_and_offset without an anchored baseline


def battles(seed: int, systems: int = 6, n: int = 4000, ties: float = 0.15, clusters: int = 30):
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 0.8, systems)
    first = rng.integers(0, systems, n)
    second = (first + rng.integers(1, systems, n)) % systems
    p = expit(strength[first] - strength[second])
    u = rng.random(n)
    outcome = np.where(u < ties, 0.5, np.where(rng.random(n) < p, 1.0, 0.0))
    return first, second, outcome, rng.integers(0, clusters, n)


@pytest.mark.parametrize("seed", range(6))
def test_ratings_equal_fastchats_compute_bt(seed):
    first, second, outcome, codes = battles(seed, systems=3 + seed)
    k = 3 + seed
    expected = fastchat_fit_bt(*fastchat_schedule(first, second, outcome), k)
    wins = bt.win_matrices(first, second, outcome, codes, k, 30).sum(axis=0)
    got = bt.elo(bt.fit(wins))
    # FastChat's L-BFGS-B stops at gtol 1e-6 on a loss summed over 4,000 battles
    assert np.abs(got - expected).max() < 1e-3, np.abs(got - expected).max()
    # and its answer is the one our Newton fit is the exact optimum of: the
    # reference's gradient at our ratings is zero
    _, gradient = fastchat_loss_and_grad(
        (got - 1000) / 400, *fastchat_schedule(first, second, outcome), math.log(10)
    )
    assert np.abs(gradient).max() < 1e-6


def test_bootstrap_fits_equal_fastchats_compute_bootstrap_bt():
    """FastChat's bootstrap reweights the unique outcomes by a multinomial draw
    (seed 0); the same weights as win matrices give the same fits, so the
    same 2.5th and 97.5th percentiles."""
    first, second, outcome, _ = battles(11, systems=5, n=3000)
    matchups, outcomes, weights = fastchat_schedule(first, second, outcome)
    rng = np.random.default_rng(seed=0)
    draws = rng.multinomial(n=len(first), pvals=weights / weights.sum(), size=200)
    boot_weights = draws.astype(float) / len(first)
    expected = np.array([fastchat_fit_bt(matchups, outcomes, w, 5) for w in boot_weights])
    # the same reweighted rows as one win matrix per resample, fitted at once
    rows = np.arange(len(matchups))
    wins = np.stack(
        [
            bt.win_matrices(matchups[:, 0], matchups[:, 1], outcomes, rows, 5, len(rows)).T @ w
            for w in boot_weights
        ]
    )
    wins = np.moveaxis(wins, 1, 2)  # (resamples, K, K): T above reversed the axes
    got = bt.elo(bt.fit(wins))
    assert np.abs(got - expected).max() < 1e-2
    low, high = np.percentile(got, [2.5, 97.5], axis=0)
    expected_low, expected_high = np.percentile(expected, [2.5, 97.5], axis=0)
    assert np.abs(low - expected_low).max() < 1e-2
    assert np.abs(high - expected_high).max() < 1e-2


def tie_free(seed: int):
    first, second, outcome, codes = battles(100 + seed, systems=5, n=3000, ties=0.0)
    winner = np.where(outcome == 1, first, second)
    loser = np.where(outcome == 1, second, first)
    return first, second, outcome, codes, winner, loser


@pytest.mark.parametrize("seed", range(4))
def test_strengths_equal_choix_without_ties(seed):
    choix = pytest.importorskip("choix", reason="choix is a dev dependency")
    first, second, outcome, codes, winner, loser = tie_free(seed)
    expected = choix.ilsr_pairwise(5, list(zip(winner, loser, strict=True)), alpha=0, tol=1e-12)
    got = bt.fit(bt.win_matrices(first, second, outcome, codes, 5, 30).sum(axis=0))
    assert np.abs(got - (expected - expected.mean())).max() < 1e-8


def hunter_mm(wins: np.ndarray, steps: int) -> np.ndarray:
    """Hunter's (2004) MM update, the one crowd-kit's BradleyTerry runs, from
    equal strengths: log-strengths summing to zero."""
    total = wins + wins.T
    p = np.ones(len(wins)) / len(wins)
    for _ in range(steps):
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(total > 0, total / (p[:, None] + p[None, :]), 0.0)
        p = wins.sum(axis=1) / z.sum(axis=0)
        p /= p.sum()
    return np.log(p) - np.log(p).mean()


@pytest.mark.parametrize("seed", range(4))
def test_crowd_kits_bradley_terry_is_two_of_the_mm_steps_that_reach_our_fit(seed):
    """crowd-kit 1.4.2's BradleyTerry keeps `p_old = p_new` (the same array),
    so its change reads 0 after the second step and it stops there whatever
    n_iter: its scores are two MM steps from equal strengths, exactly. The
    same update run to convergence is our maximum-likelihood fit."""
    crowdkit = pytest.importorskip("crowdkit.aggregation", reason="crowd-kit is a dev dependency")
    first, second, outcome, codes, winner, loser = tie_free(seed)
    names = np.array([f"system{i}" for i in range(5)])
    frame = pd.DataFrame(
        {"worker": "w", "left": names[first], "right": names[second], "label": names[winner]}
    )
    scores = crowdkit.BradleyTerry(n_iter=100_000, tol=1e-13).fit_predict(frame)
    theirs = np.log(scores.loc[names].to_numpy())
    wins = bt.win_matrices(first, second, outcome, codes, 5, 30).sum(axis=0)
    assert np.abs((theirs - theirs.mean()) - hunter_mm(wins, 2)).max() < 1e-12
    assert np.abs(hunter_mm(wins, 5000) - bt.fit(wins)).max() < 1e-8


def test_a_resamples_win_matrix_is_its_meetings_battles_refitted():
    """The resampled fits come from weighted sums of the meetings' matrices:
    the same as writing out each resample's battles (a meeting drawn twice,
    twice) and fitting them."""
    first, second, outcome, codes = battles(5, systems=4, n=600, clusters=12)
    boot = ClusterBootstrap(codes, 12, 5, seed=3)
    per_cluster = bt.win_matrices(first, second, outcome, codes, 4, 12)
    found = bt.fits(boot, per_cluster)
    for r, drawn in enumerate(boot.draws):
        rows = np.concatenate([np.flatnonzero(codes == c) for c in drawn])
        wins = bt.win_matrices(first[rows], second[rows], outcome[rows], codes[rows], 4, 12)
        np.testing.assert_allclose(found.resampled[r], bt.fit(wins.sum(axis=0)), atol=1e-9)
        # and less one copy of its first drawn meeting: the first block of rows
        kept = rows[(codes == drawn[0]).sum() :]
        wins = bt.win_matrices(first[kept], second[kept], outcome[kept], codes[kept], 4, 12)
        np.testing.assert_allclose(
            found.resampled_leave_one_out[r, drawn[0]], bt.fit(wins.sum(axis=0)), atol=1e-9
        )


def test_a_system_that_won_every_comparison_has_no_rating():
    first = np.array([0, 0, 1, 1, 2, 0])
    second = np.array([1, 2, 2, 0, 1, 1])
    outcome = np.array([1.0, 1.0, 1.0, 0.0, 0.5, 1.0])
    boot = ClusterBootstrap(np.arange(6) % 3, 3, 50)
    found = bt.bradley_terry(first, second, outcome, np.arange(6) % 3, ["A", "B", "C"], boot)
    assert found == {
        "computable": False,
        "reason": "no finite ratings: A won every comparison (no loss or tie)",
    }
    # one tie is enough for a finite rating
    outcome[0] = 0.5
    found = bt.bradley_terry(first, second, outcome, np.arange(6) % 3, ["A", "B", "C"], boot)
    assert [s["system"] for s in found["systems"]] == ["A", "B", "C"]
    assert "3, 3 more" in found["ci_note"]


def test_rank_sets_follow_the_simultaneous_differences():
    """Two systems far apart and two nearly tied: the far ones get a rank each,
    the tied ones share {2, 3}; every difference's interval holds the point."""
    rng = np.random.default_rng(7)
    strength = np.array([2.0, 0.05, 0.0, -2.0])
    n, clusters = 6000, 40
    first = rng.integers(0, 4, n)
    second = (first + rng.integers(1, 4, n)) % 4
    outcome = (rng.random(n) < expit(strength[first] - strength[second])).astype(float)
    codes = rng.integers(0, clusters, n)
    found = bt.bradley_terry(
        first, second, outcome, codes, ["A", "B", "C", "D"], ClusterBootstrap(codes, clusters, 300)
    )
    sets = {s["system"]: s["rank_set"] for s in found["systems"]}
    assert sets["A"] == [1, 1] and sets["D"] == [4, 4]
    assert sets["B"] == [2, 3] and sets["C"] == [2, 3]
    for d in found["differences"]:
        assert d["ci95"][0] < d["difference"] < d["ci95"][1]
    for s in found["systems"]:
        assert s["ci95"][0] < s["rating"] < s["ci95"][1]
        assert s["wins"] + s["ties"] + s["losses"] == s["battles"]


def test_the_linear_jackknife_of_many_meetings_gives_the_exact_ones_intervals(monkeypatch):
    """Beyond EXACT_JACKKNIFE_CLUSTERS meetings each resample's leave-one-out
    fits are one linearised step: at 80 meetings the intervals are the exact
    fits' within 2% of their width."""
    first, second, outcome, codes = battles(21, systems=5, n=8000, clusters=80)
    names = [f"s{i}" for i in range(5)]
    boot = ClusterBootstrap(codes, 80, 300, seed=5)
    linear = bt.bradley_terry(first, second, outcome, codes, names, boot)
    monkeypatch.setattr(bt, "EXACT_JACKKNIFE_CLUSTERS", 10**6)
    exact = bt.bradley_terry(first, second, outcome, codes, names, boot)
    for a, b in zip(linear["systems"], exact["systems"], strict=True):
        width = b["ci95"][1] - b["ci95"][0]
        assert abs(a["ci95"][0] - b["ci95"][0]) < 0.02 * width
        assert abs(a["ci95"][1] - b["ci95"][1]) < 0.02 * width
    for a, b in zip(linear["differences"], exact["differences"], strict=True):
        width = b["ci95"][1] - b["ci95"][0]
        assert abs(a["ci95"][0] - b["ci95"][0]) < 0.02 * width
