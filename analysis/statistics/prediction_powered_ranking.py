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

Rank-sets: systems m and l are told apart when |theta_m - theta_l| > q *
sd(theta_m - theta_l); a system's rank-set runs from 1 + the systems told
above it to k - those told below. Every rank-set holds its system's true rank
whenever every pair's interval holds its difference. The authors take q =
sqrt(chi2_k(1 - alpha)), each pair's projection of the k-dimensional
confidence ellipsoid (which holds every contrast at once, not only the
pairs'); Concord takes the max-t multiplier: the 1 - alpha quantile of the
largest standardized pairwise difference of a multivariate t with the
estimated covariance and meetings - 1 degrees of freedom (`max_t_multiplier`,
Tukey's studentized range when the systems are independent with equal
variances), which holds every pairwise difference at once and nothing more.
For 16 systems it is 3.5 against the ellipsoid's 5.1.

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
# the max-t multiplier's simulation: seeded, so that a report is reproducible
MAX_T_DRAWS = 20_000
MAX_T_SEED = 20240226
METHOD = (
    "prediction-powered rank-sets (Chatzi et al. 2024): PPI of each system's win rate "
    "(ties half) from the labelled battles' human outcomes and every battle's judge "
    "outcome, lambda minimising the variance; meeting-clustered covariance; a pair told "
    "apart when its difference exceeds the 95% max-t multiplier over all pairs (Student's "
    "t on meetings - 1 degrees of freedom) times its standard error"
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


def difference_variances(covariance: np.ndarray) -> np.ndarray:
    """(k, k): the variance of theta_m - theta_l."""
    variance = np.diag(covariance)
    return np.maximum(variance[:, None] + variance[None, :] - 2 * covariance, 0.0)


def max_t_multiplier(
    covariance: np.ndarray, clusters: int, alpha: float = ALPHA, draws: int = MAX_T_DRAWS
) -> float:
    """The 1 - alpha quantile of max over pairs |T_m - T_l| / sd(m - l), T
    multivariate t with the covariance and clusters - 1 degrees of freedom
    (the cluster-robust variance's), by a seeded simulation; never below
    Student's t for one pair (as Bradley-Terry's max-t)."""
    k = len(covariance)
    floor = float(stats.t.ppf(1 - alpha / 2, clusters - 1))
    first, second = np.triu_indices(k, 1)
    sd = np.sqrt(difference_variances(covariance)[first, second])
    kept = sd > 0
    if kept.sum() < 2:  # one difference: Student's t exactly
        return floor
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    # each standardized difference of T = Z root^T / s is Z (root^T w_p) / s: one product
    contrasts = np.zeros((k, int(kept.sum())))
    columns = np.arange(contrasts.shape[1])
    contrasts[first[kept], columns] = 1.0 / sd[kept]
    contrasts[second[kept], columns] = -1.0 / sd[kept]
    rng = np.random.default_rng(MAX_T_SEED)
    normal = rng.standard_normal((draws, k))
    scale = np.sqrt(rng.chisquare(clusters - 1, draws) / (clusters - 1))
    largest = np.abs(normal @ (root.T @ contrasts)).max(axis=1) / scale
    return max(float(np.quantile(largest, 1 - alpha)), floor)


def separated(
    theta: np.ndarray, covariance: np.ndarray, alpha: float = ALPHA, multiplier: float | None = None
) -> np.ndarray:
    """(k, k) bool: [m, l] when m is told above l: its difference exceeds the
    multiplier times its standard error; by default the authors' multiplier,
    sqrt(chi2_k(1 - alpha)) (the ellipsoid's projection)."""
    k = len(theta)
    if multiplier is None:
        multiplier = float(np.sqrt(stats.chi2.ppf(1 - alpha, k)))
    gap = theta[:, None] - theta[None, :]
    return gap > multiplier * np.sqrt(difference_variances(covariance))


def rank_sets(
    theta: np.ndarray, covariance: np.ndarray, alpha: float = ALPHA, multiplier: float | None = None
) -> np.ndarray:
    """Each system's rank-set, (k, 2) as (best, worst), 1 the highest win rate."""
    above = separated(theta, covariance, alpha, multiplier)
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
        sets = (
            None
            if note
            else rank_sets(
                found.theta,
                found.covariance,
                alpha,
                max_t_multiplier(found.covariance, found.clusters, alpha),
            )
        )
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
