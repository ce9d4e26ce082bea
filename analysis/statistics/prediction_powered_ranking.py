"""Prediction-powered rank-sets: a ranking of systems with rank-sets from a
few human comparisons and many judge comparisons (Chatzi, Straitouri,
Thejaswi & Gomez-Rodriguez 2024, "Prediction-powered ranking of large
language models", arXiv 2402.17826; the authors' code is
github.com/Networks-Learning/prediction-powered-ranking, src/estimate.py and
src/ranksets.py).

A battle is two systems' answers to one question, its outcome the first
system's points (win 1, tie 1/2, loss 0). A system's win rate theta_m is
its mean points over the battles it is in. Some battles have a human outcome
(the labelled ones) and all have the judge's. The prediction-powered
estimate is PPI's:

    theta_m = lambda * judge's win rate on the unlabelled battles
              + (human's - lambda * judge's win rate) on the labelled battles,

unbiased for the humans' win rate whatever the judge's bias, when the
labelled battles are a random sample; lambda in [0, 1] minimises the trace of
its covariance (0: the humans alone).

Rank-sets, as the authors': systems m and l are told apart when |theta_m -
theta_l| > sqrt(var(theta_m - theta_l) * chi2_k(1 - alpha)) (each pair's
projection of the k-dimensional confidence ellipsoid); a system's rank-set
runs from 1 + the systems told above it to k - those told below. Every
rank-set holds its system's true rank whenever the ellipsoid holds theta.

Where Concord departs from the authors' code, and why:
- **Each system's covariance is scaled by its own number of battles.** The
  authors' Sigma divides the battles' summed squared deviations by n^2, the
  number of all battles; a system's win rate is a mean over its own c_m
  battles, so its variance divides by c_m^2. With k systems in balanced
  battles c_m = 2n / k and their Sigma is k^2 / 4 times too small (36 times
  for 12 systems), which the chi2_k quantile only partly makes up. Concord's
  Sigma equals theirs times n^2 / (c_m c_l) (tests/analysis/
  test_prediction_powered_ranking.py, against their functions).
- **Clustered by meeting.** The battles of one meeting share its transcript,
  and the battles of one question share its answers: the covariance sums the
  influences per meeting first (the sandwich of cluster-robust regression,
  times G / (G - 1) for G meetings). With one battle per cluster it is the
  authors' form.
- **lambda from the same covariance**: the value in [0, 1] that minimises
  its trace, written per meeting (the labelled and unlabelled battles of a
  meeting are not independent). The authors' lhat_opt estimates the judge's
  variance on the unlabelled battles only; the two agree as the battles grow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.statistics.bradley_terry import clusters_needed

ALPHA = 0.05
# labelled battles each system needs for a rank-set: on MT-bench, where a question is
# one battle, rank-sets from 1 per system up covered 0.90, from 2 up 0.94, from 4 up 0.99
# (harness, 1,000 replays of 20-40 labelled questions)
MIN_LABELLED_BATTLES = 5
METHOD = (
    "prediction-powered rank-sets (Chatzi et al. 2024): PPI of each system's win rate "
    "(ties half) from the labelled battles' human outcomes and every battle's judge "
    "outcome, lambda minimising the variance; meeting-clustered covariance; a pair told "
    "apart when its difference exceeds the 95% chi-square(k) ellipsoid's projection"
)


@dataclass
class Estimate:
    """Win rates (k,), their covariance (k, k), lambda and the clusters counted."""

    theta: np.ndarray
    covariance: np.ndarray
    lam: float
    clusters: int


def points_by_system(
    first: np.ndarray, second: np.ndarray, outcome: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each system's summed points and battles: (k,), (k,)."""
    points = np.bincount(first, weights=outcome, minlength=k) + np.bincount(
        second, weights=1.0 - outcome, minlength=k
    )
    counts = np.bincount(first, minlength=k) + np.bincount(second, minlength=k)
    return points, counts.astype(float)


def win_rates(first: np.ndarray, second: np.ndarray, outcome: np.ndarray, k: int) -> np.ndarray:
    """Each system's mean points over its battles (NaN for a system without one)."""
    points, counts = points_by_system(first, second, outcome, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return points / counts


def cluster_influence(
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    cluster: np.ndarray,
    clusters: int,
    k: int,
) -> np.ndarray:
    """The win rates' influence summed per cluster, (clusters, k): for system
    m, the cluster's sum over m's battles of (m's points - m's win rate) /
    m's battles. Their outer products sum to the win rates' covariance."""
    theta = win_rates(first, second, outcome, k)
    _, counts = points_by_system(first, second, outcome, k)
    scale = np.divide(1.0, counts, out=np.zeros(k), where=counts > 0)
    out = np.zeros((clusters, k))
    for side, points in ((first, outcome), (second, 1.0 - outcome)):
        np.add.at(out, (cluster, side), (points - theta[side]) * scale[side])
    return out


def estimate(
    first: np.ndarray,
    second: np.ndarray,
    human: np.ndarray,
    judge: np.ndarray,
    labelled: np.ndarray,
    cluster: np.ndarray,
    k: int,
    lam: float | None = None,
) -> Estimate:
    """The prediction-powered win rates of k systems from battles (first,
    second: system codes; human: the labelled battles' human outcome, any
    value elsewhere; judge: every battle's judge outcome; labelled: bool;
    cluster: integer codes). `lam` None: the variance-minimising lambda; a
    system without unlabelled battles leaves lambda at 0 (the humans alone)."""
    first, second = np.asarray(first, int), np.asarray(second, int)
    human, judge = np.asarray(human, float), np.asarray(judge, float)
    labelled = np.asarray(labelled, bool)
    _, cluster = np.unique(np.asarray(cluster), return_inverse=True)
    clusters = int(cluster.max()) + 1 if len(cluster) else 0
    lab, unl = labelled, ~labelled
    human_rate = win_rates(first[lab], second[lab], human[lab], k)
    judge_rate_labelled = win_rates(first[lab], second[lab], judge[lab], k)
    human_part = cluster_influence(first[lab], second[lab], human[lab], cluster[lab], clusters, k)
    judge_labelled = cluster_influence(
        first[lab], second[lab], judge[lab], cluster[lab], clusters, k
    )
    _, unlabelled_counts = points_by_system(first[unl], second[unl], judge[unl], k)
    if (unlabelled_counts == 0).any():
        judge_rate_unlabelled = np.zeros(k)
        judge_unlabelled = np.zeros((clusters, k))
        if lam is None:
            lam = 0.0
    else:
        judge_rate_unlabelled = win_rates(first[unl], second[unl], judge[unl], k)
        judge_unlabelled = cluster_influence(
            first[unl], second[unl], judge[unl], cluster[unl], clusters, k
        )
    # the influence per cluster is human_part + lam * judge_difference
    judge_difference = judge_unlabelled - judge_labelled
    if lam is None:
        denominator = float((judge_difference**2).sum())
        lam = (
            float(np.clip(-(human_part * judge_difference).sum() / denominator, 0.0, 1.0))
            if denominator > 0
            else 0.0
        )
    theta = human_rate + lam * (judge_rate_unlabelled - judge_rate_labelled)
    influence = human_part + lam * judge_difference
    if clusters < 2:  # one meeting: no spread between meetings to estimate
        return Estimate(theta, np.full((k, k), np.nan), float(lam), clusters)
    return Estimate(
        theta, clusters / (clusters - 1) * influence.T @ influence, float(lam), clusters
    )


def separated(theta: np.ndarray, covariance: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """(k, k) bool: [m, l] when m is told above l (the authors' rule)."""
    k = len(theta)
    variance = np.diag(covariance)
    spread = variance[:, None] + variance[None, :] - 2 * covariance
    quantile = stats.chi2.ppf(1 - alpha, k)
    gap = theta[:, None] - theta[None, :]
    return gap > np.sqrt(np.maximum(spread, 0.0) * quantile)


def rank_sets(theta: np.ndarray, covariance: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Each system's rank-set, (k, 2) as (best, worst), 1 the highest win rate."""
    above = separated(theta, covariance, alpha)
    k = len(theta)
    return np.stack([1 + above.sum(axis=0), k - above.sum(axis=1)], axis=1)


def point_ranks(theta: np.ndarray) -> np.ndarray:
    """1 + the systems with a higher win rate (ties share the best rank)."""
    return 1 + (theta[None, :] > theta[:, None]).sum(axis=1)


def ranking(
    first: np.ndarray,
    second: np.ndarray,
    human: np.ndarray,
    judge: np.ndarray,
    labelled: np.ndarray,
    cluster: np.ndarray,
    names: list[str],
    alpha: float = ALPHA,
) -> dict:
    """The report's prediction-powered ranking of the systems `names` (codes
    into it in first, second), beside the humans-alone ranking of the same
    labelled battles: win rates with standard errors and rank-sets."""
    k = len(names)
    labelled = np.asarray(labelled, bool)
    _, lab_counts = points_by_system(first[labelled], second[labelled], human[labelled], k)
    missing = [names[s] for s in range(k) if lab_counts[s] == 0]
    if missing:
        return {
            "computable": False,
            "reason": f"no labelled battle for {', '.join(missing)}",
        }
    labelled_meetings = len(np.unique(np.asarray(cluster)[labelled]))
    # labelled meetings as Bradley-Terry's intervals need meetings (the harness rows)
    needed = clusters_needed(k)
    powered = estimate(first, second, human, judge, labelled, cluster, k)
    alone = estimate(first, second, human, judge, labelled, cluster, k, lam=0.0)
    note = None
    fewest = int(lab_counts.min())
    if labelled_meetings < needed:
        note = (
            f"not enough labelled meetings for rank-sets: {needed - labelled_meetings} more "
            f"({needed} for {k} systems)"
        )
    elif fewest < MIN_LABELLED_BATTLES:
        short = [names[s] for s in range(k) if lab_counts[s] < MIN_LABELLED_BATTLES]
        note = (
            f"not enough labelled battles for rank-sets: {MIN_LABELLED_BATTLES - fewest} more "
            f"({MIN_LABELLED_BATTLES} per system; short: {', '.join(short[:5])}"
            f"{'...' if len(short) > 5 else ''})"
        )

    def side(found: Estimate) -> dict:
        sets = None if note else rank_sets(found.theta, found.covariance, alpha)
        ranks = point_ranks(found.theta)
        se = np.sqrt(np.maximum(np.diag(found.covariance), 0.0))
        return {
            "systems": [
                {
                    "system": names[s],
                    "win_rate": float(found.theta[s]),
                    "se": None if note else float(se[s]),
                    "rank": int(ranks[s]),
                    "rank_set": None if sets is None else [int(v) for v in sets[s]],
                }
                for s in np.argsort(-found.theta, kind="stable")
            ],
            "mean_rank_set_size": None
            if sets is None
            else float(np.mean(sets[:, 1] - sets[:, 0] + 1)),
        }

    out = {
        "prediction_powered": side(powered) | {"lambda": powered.lam},
        "humans_alone": side(alone),
        "battles": {"labelled": int(labelled.sum()), "unlabelled": int((~labelled).sum())},
        "labelled_meetings": labelled_meetings,
        "meetings": powered.clusters,
        "method": METHOD,
    }
    if note:
        out["ci_note"] = note
    return out
