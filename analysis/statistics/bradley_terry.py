"""Bradley-Terry ratings with meeting-clustered intervals, and rank-sets.

The model: system i beats system j with probability 1 / (1 + exp(t_j - t_i)).
Its maximum-likelihood strengths t depend on the battles only through the
win matrix W (W[i, j]: i's wins over j; a tie is half a win for each side, as
FastChat's compute_bt counts it, `fastchat/serve/monitor/rating_systems.py`).
W is a sum over meetings, so the cluster bootstrap of
analysis.statistics.bootstrap applies: a resample's win matrix is its
meetings' matrices weighted by how often each was drawn, and one batched
Newton fit (`fit`) solves every resample, and every resample less one of its
meetings, at once.

Ratings are on FastChat's Elo scale: 400 points per factor of 10 in the odds,
the systems' mean at 1000 (strengths sum to zero). A strength has no finite
maximum-likelihood value when its system's wins cannot be balanced against
its losses (it won, or lost, every comparison with the rest, counted through
chains of systems): the fit says so (NaN) and no rating is given.

Intervals, each a studentized bootstrap as Pearson r's (analysis.statistics.
bootstrap.studentized_interval: the estimate plus or minus q times its
meeting-jackknife standard error, q from the resamples' own |t*|, never below
Student's t on meetings - 1 degrees of freedom):
- every system's rating, and every difference between two systems, each set
  simultaneously (95% for all of them at once): q is the 95th percentile
  over resamples of the largest |t*| in the set (the max-t method; Romano &
  Wolf 2005), tighter than Bonferroni and valid for the whole set, which
  Holm's step-down p-values are too but without intervals (one rating at a
  time, the harness found 0.93 on some datasets);
- each system's rank-set (Klein, Wright & Wieczorek 2020): from the
  simultaneous differences, the ranks the system can take: 1 plus the number
  of systems surely above it, to the number of systems less those surely
  below. All rank-sets hold together whenever the differences do.
The coverage harness (benchmarks/coverage/rows_bradley_terry.py) replays them
on every dataset.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
from scipy import stats

from analysis.statistics.bootstrap import LARGE_T, ClusterBootstrap
from analysis.statistics.bt_fits import DIVERGED, Fits

ELO_PER_UNIT = 400 / math.log(10)  # Elo points per unit of log-odds
ELO_MEAN = 1000.0
NEWTON_STEPS = 60
MAX_STEP = 4.0  # log-odds per step: a strength that runs away does so visibly
GRADIENT_TOLERANCE = 1e-10  # per comparison


def win_matrices(
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    codes: np.ndarray,
    systems: int,
    clusters: int,
) -> np.ndarray:
    """Per cluster, the win matrix of its battles: (clusters, systems, systems).
    `outcome` is the first system's: 1 a win, 0.5 a tie, 0 a loss."""
    first, second = np.asarray(first, int), np.asarray(second, int)
    outcome, codes = np.asarray(outcome, float), np.asarray(codes, int)
    wins = np.zeros(clusters * systems * systems)
    at = (codes * systems + first) * systems + second
    back = (codes * systems + second) * systems + first
    np.add.at(wins, at, outcome)
    np.add.at(wins, back, 1.0 - outcome)
    return wins.reshape(clusters, systems, systems)


def finite_mle(wins: np.ndarray) -> np.ndarray:
    """Whether each win matrix (..., K, K) has finite maximum-likelihood
    strengths (Zermelo 1929; Hunter 2004, condition A): every system reaches
    every other through a chain of wins (a tie is a win each way), that is the
    directed graph of wins is strongly connected. Boolean reachability by
    repeated squaring."""
    wins = np.asarray(wins, float)
    k = wins.shape[-1]
    # float32 products (0/1 entries, at most k per sum: exact) run far faster than
    # integer ones
    # a win is an entry above rounding: a resample less one meeting can leave
    # 1e-15 where no battle is
    floor = 1e-9 * wins.sum(axis=(-2, -1), keepdims=True)
    reach = ((wins > floor) | np.eye(k, dtype=bool)).astype(np.float32)
    for _ in range(max(1, math.ceil(math.log2(max(k - 1, 1))))):
        reach = ((reach @ reach) > 0).astype(np.float32)
    return np.asarray((reach > 0).all(axis=(-2, -1)))


def fit(wins: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """The maximum-likelihood strengths (natural log-odds, summing to zero) of
    each win matrix in `wins` (..., K, K): (..., K). NaN where a system was
    never compared or its strength has no finite MLE.

    Newton's method on the sum-zero plane (the Hessian plus the all-ones
    matrix is invertible when the comparison graph is connected), steps
    clipped to MAX_STEP so that a strength without a finite MLE runs off
    past DIVERGED instead of oscillating. `start` (..., K): where to begin
    (a nearby fit's strengths; NaN entries start at zero), which saves steps,
    not accuracy."""
    wins = np.asarray(wins, float)
    shape = wins.shape
    k = shape[-1]
    flat = wins.reshape(-1, k, k)
    total = flat + np.swapaxes(flat, 1, 2)  # comparisons of each pair
    won = flat.sum(axis=2)
    theta = np.zeros(flat.shape[:2])
    if start is not None:
        begin = np.broadcast_to(np.asarray(start, float), shape[:-1]).reshape(-1, k)
        theta = np.where(np.isfinite(begin).all(axis=1, keepdims=True), begin, 0.0)
        theta = theta - theta.mean(axis=1, keepdims=True)
    ones = np.ones((k, k))
    comparisons = np.maximum(total.sum(axis=(1, 2)) / 2, 1.0)
    connected = finite_mle(flat)
    active = connected.copy()
    for _ in range(NEWTON_STEPS):
        if not active.any():
            break
        t, n = theta[active], total[active]
        p = 1.0 / (1.0 + np.exp(t[:, None, :] - t[:, :, None]))  # p[i, j]: i beats j
        gradient = won[active] - (n * p).sum(axis=2)
        curvature = n * p * (1 - p)
        hessian = curvature - np.eye(k)[None] * curvature.sum(axis=2)[:, :, None]
        step = _solve(ones[None] - hessian, gradient)
        biggest = np.abs(step).max(axis=1, keepdims=True)
        step *= np.minimum(1.0, MAX_STEP / np.maximum(biggest, 1e-300))
        theta[active] = t + step
        theta[active] -= theta[active].mean(axis=1, keepdims=True)
        done = np.abs(gradient).max(axis=1) <= GRADIENT_TOLERANCE * comparisons[active]
        runaway = np.abs(theta[active]).max(axis=1) > DIVERGED
        active[np.flatnonzero(active)[done | runaway | ~np.isfinite(step).all(axis=1)]] = False
    bad = ~np.isfinite(theta).all(axis=1) | (np.abs(theta).max(axis=1) > DIVERGED)
    bad |= ~connected | active  # still active: not converged in NEWTON_STEPS
    theta[bad] = np.nan
    return theta.reshape(shape[:-1])


def _solve(matrices: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Each matrix's solution for its vector; NaN for a (numerically) singular
    one instead of failing the whole batch."""
    try:
        return np.linalg.solve(matrices, vectors[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(vectors.shape, np.nan)
        for i, (matrix, vector) in enumerate(zip(matrices, vectors, strict=True)):
            with contextlib.suppress(np.linalg.LinAlgError):
                out[i] = np.linalg.solve(matrix, vector)
        return out


def elo(theta: np.ndarray) -> np.ndarray:
    """Strengths (log-odds, summing to zero) on FastChat's Elo scale."""
    return ELO_MEAN + ELO_PER_UNIT * np.asarray(theta)


# Up to this many meetings each resample's leave-one-out fits are exact fits;
# beyond, one linearised step each (linear_leave_one_out), whose error is of
# order 1 / meetings^2 against a standard error of order 1 / meetings^(1/2)
EXACT_JACKKNIFE_CLUSTERS = 60


def linear_leave_one_out(
    resampled_wins: np.ndarray, resampled: np.ndarray, per_cluster: np.ndarray
) -> np.ndarray:
    """Each resample's strengths less one of its meetings, by one Newton step
    from the resample's own fit: theta - H^-1 g_c, where g_c is the gradient
    of meeting c's battles at theta (the resample's gradient there is zero)
    and H the resample's Hessian (the linear, or infinitesimal, jackknife).
    (R, C, K); NaN where the resample has no finite fit."""
    k = per_cluster.shape[-1]
    theta = np.nan_to_num(resampled)
    p = 1.0 / (1.0 + np.exp(theta[:, None, :] - theta[:, :, None]))  # (R, K, K)
    total = resampled_wins + np.swapaxes(resampled_wins, 1, 2)
    curvature = total * p * (1 - p)
    hessian = curvature - np.eye(k)[None] * curvature.sum(axis=2)[:, :, None]
    inverse = np.linalg.pinv(np.ones((k, k))[None] - hessian)  # (R, K, K), on the sum-zero plane
    cluster_total = per_cluster + np.swapaxes(per_cluster, 1, 2)  # (C, K, K)
    won = per_cluster.sum(axis=2)  # (C, K)
    # g[r, c, i] = won[c, i] - sum_j n_c[i, j] p_r[i, j]
    expected = np.stack([p[:, i, :] @ cluster_total[:, i, :].T for i in range(k)], axis=2)
    gradient = won[None] - expected  # (R, C, K)
    step = gradient @ np.swapaxes(inverse, 1, 2)  # each row: inverse @ g
    out = resampled[:, None, :] - step
    return out - out.mean(axis=2, keepdims=True)


def fits(boot: ClusterBootstrap, per_cluster: np.ndarray, block: int = 200_000) -> Fits:
    """Every fit the studentized intervals need, from the meetings' win
    matrices (C, K, K), in blocks of about `block` matrix entries. Up to
    EXACT_JACKKNIFE_CLUSTERS meetings, every leave-one-out fit is exact."""
    clusters, k, _ = per_cluster.shape
    counts = boot.weights[:-1]
    total = per_cluster.sum(axis=0)
    resampled_wins = np.einsum("rc,cij->rij", counts, per_cluster)
    data = fit(total)
    resampled = fit(resampled_wins, data)
    linear = clusters > EXACT_JACKKNIFE_CLUSTERS
    # the linear step holds (R, C, K) arrays, the exact fits (R, C, K, K)
    rows = max(1, (block * k if linear else block) // (clusters * k * k))
    inner = []
    for i in range(0, len(counts), rows):
        if linear:
            part = slice(i, i + rows)
            inner.append(linear_leave_one_out(resampled_wins[part], resampled[part], per_cluster))
            continue
        less = resampled_wins[i : i + rows, None] - per_cluster[None]
        # a meeting not drawn has no copy to leave out: no fit (and none of a
        # matrix with negative wins)
        drawn = counts[i : i + rows] > 0
        start = np.broadcast_to(resampled[i : i + rows, None, :], less.shape[:-1])
        inner.append(fit(np.where(drawn[:, :, None, None], less, 0.0), start))
    return Fits(
        data=data,
        leave_one_out=fit(total[None] - per_cluster, data),
        resampled=resampled,
        resampled_leave_one_out=np.concatenate(inner) if inner else np.zeros((0, clusters, k)),
        counts=counts,
    )


def contrast_t(found: Fits, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For contrasts of the strengths (weights: (M, K), e.g. a system's
    strength or a difference of two): the estimate (M,), its meeting-jackknife
    standard error (M,), and each resample's |t*| (R, M): NaN where the
    resample's fit, or one of its leave-one-out fits, has no finite MLE;
    LARGE_T where its jackknife has no spread (one meeting drawn every time)."""
    estimate = weights @ found.data
    data_variance = np.einsum("mi,ij,mj->m", weights, found.data_covariance, weights)
    se = np.sqrt(np.maximum(data_variance, 0.0))
    star = found.resampled @ weights.T  # (R, M)
    variance = np.einsum("mi,rij,mj->rm", weights, found.resampled_covariance, weights)
    se_star = np.sqrt(np.maximum(variance, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(star - estimate) / se_star
    t = np.nan_to_num(t, nan=0.0, posinf=LARGE_T)  # 0 / 0: a resample equal to the data
    t[found.undefined] = np.nan
    return estimate, se, t


def multipliers(t: np.ndarray, clusters: int, simultaneous: bool) -> np.ndarray:
    """q per contrast (M,): the 95th percentile of its |t*| over the resamples
    where it is defined, or, simultaneously, of the largest |t*| over all
    contrasts (resamples where all are defined); never below Student's t on
    clusters - 1 degrees of freedom. NaN where no resample is defined."""
    floor = float(stats.t.ppf(0.975, clusters - 1))
    if simultaneous:
        rows = np.isfinite(t).all(axis=1)
        if not rows.any():
            return np.full(t.shape[1], np.nan)
        return np.full(t.shape[1], max(float(np.percentile(t[rows].max(axis=1), 95)), floor))
    out = np.full(t.shape[1], np.nan)
    for m in range(t.shape[1]):
        column = t[:, m][np.isfinite(t[:, m])]
        if len(column):
            out[m] = max(float(np.percentile(column, 95)), floor)
    return out


def pairs(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j of k systems and the weights of t_i - t_j: (P,), (P,), (P, k)."""
    first, second = np.triu_indices(k, k=1)
    weights = np.zeros((len(first), k))
    weights[np.arange(len(first)), first] = 1.0
    weights[np.arange(len(first)), second] = -1.0
    return first, second, weights


def rank_sets(
    first: np.ndarray, second: np.ndarray, low: np.ndarray, high: np.ndarray, k: int
) -> list[tuple[int, int]]:
    """Each system's rank-set (best, worst) from simultaneous intervals of
    t_first - t_second: the systems surely above it push its best rank down,
    those surely below push its worst rank up."""
    above = np.zeros(k, int)
    below = np.zeros(k, int)
    for i, j, lo, hi in zip(first, second, low, high, strict=True):
        if lo > 0:  # i surely above j
            above[j] += 1
            below[i] += 1
        elif hi < 0:
            above[i] += 1
            below[j] += 1
    return [(1 + int(above[s]), k - int(below[s])) for s in range(k)]


# Below this many meetings, and two per ranked system, no interval is given: the
# harness's rows at 5 meetings and fewer, and SummEval's 16 systems at 6-20
# articles (the simultaneous differences covered 0.002-0.81 there)
MIN_CLUSTERS_RANKING = 6
CLUSTERS_PER_SYSTEM = 2


def clusters_needed(systems: int) -> int:
    return max(MIN_CLUSTERS_RANKING, CLUSTERS_PER_SYSTEM * systems)


# Battles an interval needs: 5 per pair of systems on average. MT-bench's six systems
# meet once per question, about 3.8 times per pair in a study of 20 of its 42
# questions' clusters, and the differences covered 0.89 there (82 of 5,000 studies
# with finite ratings; harness, seed 2)
BATTLES_PER_PAIR = 5


# A style-controlled ranking estimates the features' weights as well, and its
# intervals fell short on few meetings in the coverage harness: 0.935-0.939 on the
# paper's 8 meetings (1,000 replays; the plain ones 0.97). From 10 meetings on they
# hold with the widening below (harness family bt-length, docs/benchmarks.md).
MIN_CLUSTERS_CONTROLLED = 10


def controlled_widening(clusters: int) -> float:
    """The factor a style-controlled multiplier is widened by: Student's t on
    clusters - 1 degrees of freedom over the normal's 97.5% point (1.068 at 20
    meetings, 1.12 at 12). Without it, the studentized max-t intervals of the
    controlled ratings covered 0.927-0.938 of 1,000 replays on the heavy-tailed
    and biased-judge populations at 20 meetings: there the study's own
    |t| ran past its resamples' |t*| (the studies' 95th percentile 2.87-3.06,
    the multipliers' mean 2.82-2.92), the bootstrap's small-sample error that the studentization
    leaves (its resamples draw from the study's meetings alone). The factor
    is the widening Student's t gives a normal interval on as many meetings,
    and the harness's bt-length rows are what show it enough."""
    return float(stats.t.ppf(0.975, clusters - 1) / stats.norm.ppf(0.975))


# The harness replays the length's control only (its datasets have no texts to count
# markdown in): with more features than the length, the ratings and weights are given
# without an interval.
STYLE_BEYOND_LENGTH_NOTE = (
    "no interval for style control beyond the length: the coverage harness replays "
    "length control only; the ratings and the weights are estimates"
)


def battles_needed(systems: int) -> int:
    return BATTLES_PER_PAIR * systems * (systems - 1) // 2


METHOD = (
    "Bradley-Terry MLE (ties half a win each, FastChat's compute_bt); studentized "
    "meeting-clustered bootstrap: ratings, differences and rank-sets each 95% for all "
    "systems at once (max-t)"
)


METHOD_CONTROLLED = (
    "Bradley-Terry MLE with style control (FastChat's contextual Bradley-Terry: the "
    "battle's standardised style features in the logit, ties half a win); studentized "
    "meeting-clustered bootstrap with the infinitesimal jackknife, its multipliers widened "
    "by Student's t on meetings - 1 over the normal: ratings, differences and rank-sets "
    "each 95% for all systems at once (max-t); each feature's weight 95%"
)


def no_finite_rating(wins: np.ndarray, names: list[str]) -> str:
    """Why the data have no finite ratings: the systems that won or lost every
    comparison they had (or, failing that, the graph's chains)."""
    won = wins.sum(axis=1)
    lost = wins.sum(axis=0)
    never = [names[i] for i in range(len(names)) if won[i] + lost[i] == 0]
    if never:
        return f"no finite ratings: {', '.join(never)} never compared"
    perfect = [names[i] for i in range(len(names)) if lost[i] == 0]
    hopeless = [names[i] for i in range(len(names)) if won[i] == 0]
    if perfect:
        return f"no finite ratings: {', '.join(perfect)} won every comparison (no loss or tie)"
    if hopeless:
        return f"no finite ratings: {', '.join(hopeless)} lost every comparison (no win or tie)"
    return "no finite ratings: one group of systems won every comparison with the rest"


def bradley_terry(
    first: np.ndarray,
    second: np.ndarray,
    outcome: np.ndarray,
    codes: np.ndarray,
    names: list[str],
    boot: ClusterBootstrap,
    clusters_are: str = "meetings",
    features: np.ndarray | None = None,
    feature_names: list[str] | None = None,
) -> dict:
    """Ratings, simultaneous differences and rank-sets of the battles
    (first[b] against second[b], `outcome` the first's: 1, 0.5 or 0) in the
    meetings `codes` (as `boot` resamples them; `clusters_are`: what the
    clusters are, in the notes). With `features` (battles x p, named by
    `feature_names`), the style-controlled ratings of
    analysis.statistics.style_control, and each feature's weight."""
    k = len(names)
    if len(first) == 0 or k < 2:
        return {"computable": False, "reason": f"{len(first)} comparisons of {k} systems"}
    per_cluster = win_matrices(first, second, outcome, codes, k, boot.clusters)
    total = per_cluster.sum(axis=0)
    theta = fit(total)
    if not np.isfinite(theta).all():
        return {"computable": False, "reason": no_finite_rating(total, names)}
    covariates = 0
    if features is not None:
        from analysis.statistics import style_control  # it builds on this module

        features = np.asarray(features, float).reshape(len(first), -1)
        covariates = features.shape[1]
        controlled = style_control.fit(first, second, outcome, features, k)
        if not np.isfinite(controlled).all():
            return {
                "computable": False,
                "reason": "no finite style-controlled ratings (the fit runs away)",
            }
        theta, feature_weights = controlled[:k], controlled[k:]
    first_of, second_of, weights = pairs(k)
    weights = np.hstack([weights, np.zeros((len(weights), covariates))])
    unit = np.hstack([np.eye(k), np.zeros((k, covariates))])
    note = None
    needed = clusters_needed(k)
    if covariates > 1:
        note = STYLE_BEYOND_LENGTH_NOTE
    elif features is not None and boot.clusters < MIN_CLUSTERS_CONTROLLED:
        note = (
            f"not enough {clusters_are} for a style-controlled interval: {boot.clusters}, "
            f"{MIN_CLUSTERS_CONTROLLED - boot.clusters} more (below "
            f"{MIN_CLUSTERS_CONTROLLED}, the coverage harness finds the intervals short: "
            "0.935-0.939 on the paper's 8 meetings)"
        )
    elif boot.clusters < needed:
        note = (
            f"not enough {clusters_are} for an interval: {boot.clusters}, "
            f"{needed - boot.clusters} more (below {needed}, {MIN_CLUSTERS_RANKING} and two per "
            "system, the coverage harness finds no interval that holds)"
        )
    elif len(first) < battles_needed(k):
        note = (
            f"not enough battles for an interval: {len(first)}, "
            f"{battles_needed(k) - len(first)} more ({BATTLES_PER_PAIR} per pair of systems on "
            "average; below, the coverage harness finds no interval that holds)"
        )
    rating_ci = np.full((k, 2), np.nan)
    diff_ci = np.full((len(first_of), 2), np.nan)
    undefined = 0
    feature_ci = np.full((covariates, 2), np.nan)
    if note is None:
        widening = 1.0
        if features is None:
            found = fits(boot, per_cluster)
        else:
            found = style_control.fits(boot, first, second, outcome, features, codes, k)
            f, f_se, f_t = contrast_t(found, np.eye(k + covariates)[k:])
            widening = controlled_widening(boot.clusters)
            f_q = widening * multipliers(f_t, boot.clusters, simultaneous=False)
            feature_ci = np.column_stack([f - f_q * f_se, f + f_q * f_se])
        estimate, se, t = contrast_t(found, unit)
        # all systems at once: one at a time, the harness found 0.93 on some datasets
        q = widening * multipliers(t, boot.clusters, simultaneous=True)
        rating_ci = np.column_stack([estimate - q * se, estimate + q * se])
        undefined = int(np.isnan(t).any(axis=1).sum())
        d, d_se, d_t = contrast_t(found, weights)
        d_q = widening * multipliers(d_t, boot.clusters, simultaneous=True)
        diff_ci = np.column_stack([d - d_q * d_se, d + d_q * d_se])
        if not np.isfinite(rating_ci).all() or not np.isfinite(diff_ci).all():
            note = (
                f"leaving out one of the {clusters_are} leaves no finite ratings, so no "
                "interval is given"
            )
            rating_ci[:] = np.nan
            diff_ci[:] = np.nan
    sets = (
        rank_sets(first_of, second_of, diff_ci[:, 0], diff_ci[:, 1], k)
        if note is None
        else [(None, None)] * k
    )
    order = np.argsort(-theta, kind="stable")
    point_rank = np.empty(k, int)
    point_rank[order] = np.arange(1, k + 1)
    first, second = np.asarray(first, int), np.asarray(second, int)
    outcome = np.asarray(outcome, float)
    tallies = []
    for s in range(k):
        mine = np.concatenate([outcome[first == s], 1 - outcome[second == s]])
        tallies.append(
            {
                "battles": int(len(mine)),
                "wins": int((mine == 1).sum()),
                "ties": int((mine == 0.5).sum()),
                "losses": int((mine == 0).sum()),
            }
        )
    out: dict = {
        "systems": [
            {
                "system": names[s],
                "rating": float(elo(theta[s])),
                "ci95": [None, None] if note else [float(v) for v in elo(rating_ci[s])],
                "rank": int(point_rank[s]),
                "rank_set": list(sets[s]),
                **tallies[s],
            }
            for s in order
        ],
        "differences": [
            {
                "system": names[i],
                "other": names[j],
                "difference": float(ELO_PER_UNIT * (theta[i] - theta[j])),
                "ci95": [None, None] if note else [float(ELO_PER_UNIT * v) for v in diff_ci[p]],
            }
            for p, (i, j) in enumerate(zip(first_of, second_of, strict=True))
        ],
        "battles": int(len(first)),
        "clusters": boot.clusters,
        "resamples": boot.resamples,
        "undefined_resamples": undefined,
        "method": METHOD,
    }
    if features is not None:
        out["method"] = METHOD_CONTROLLED
        out["covariates"] = [
            {
                "name": (feature_names or [f"feature {c + 1}" for c in range(covariates)])[c],
                "weight": float(feature_weights[c]),
                "ci95": [None, None] if note else [float(v) for v in feature_ci[c]],
            }
            for c in range(covariates)
        ]
    if note:
        out["ci_note"] = note
    return out


def battles_from_scores(
    system: np.ndarray, question: np.ndarray, cluster: np.ndarray, score: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Scored answers as battles: on each question, every two systems that
    answered it meet once, the higher score winning (equal scores: a tie).
    A system's score on a question is the mean of its scores there (raters,
    seeds). Returns (first, second, outcome of the first, cluster) per battle,
    first < second; `system`, `question` and `cluster` are integer codes (a
    question lies in one cluster: its first answer's is taken)."""
    system = np.asarray(system, int)
    score = np.asarray(score, float)
    known = np.isfinite(score)
    system, score = system[known], score[known]
    question, cluster = np.asarray(question)[known], np.asarray(cluster, int)[known]
    if not len(score):
        empty = np.zeros(0, int)
        return empty, empty, np.zeros(0), empty
    _, venue = np.unique(question, return_inverse=True)
    venues, k = int(venue.max()) + 1, int(system.max()) + 1
    # per question and system: the sum and number of scores (a dense venues x k table)
    cell = venue * k + system
    sums = np.bincount(cell, weights=score, minlength=venues * k).reshape(venues, k)
    counts = np.bincount(cell, minlength=venues * k).reshape(venues, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    home = np.zeros(venues, int)
    home[venue[::-1]] = cluster[::-1]  # each question's first answer's cluster
    firsts, seconds, outcomes, clusters = [], [], [], []
    for a, b in zip(*np.triu_indices(k, k=1), strict=True):
        met = np.flatnonzero((counts[:, a] > 0) & (counts[:, b] > 0))
        difference = means[met, a] - means[met, b]
        firsts.append(np.full(len(met), a))
        seconds.append(np.full(len(met), b))
        outcomes.append(np.where(difference > 0, 1.0, np.where(difference < 0, 0.0, 0.5)))
        clusters.append(home[met])
    if not firsts:
        empty = np.zeros(0, int)
        return empty, empty, np.zeros(0), empty
    return (
        np.concatenate(firsts),
        np.concatenate(seconds),
        np.concatenate(outcomes),
        np.concatenate(clusters),
    )
