"""Prediction-powered system scores: a few gold ratings plus a judge's scores
on every response give a system mean on the gold scale with a valid interval.

PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered
Inference"; for LLM evaluation, Boyeau et al., ICML 2025, "AutoEval Done
Right"): with n gold-rated responses (gold Y, judge Yhat) and N responses the
judge alone scored (Yhat_u),

    theta = lambda * mean(Yhat_u) + mean(Y - lambda * Yhat)

is unbiased for the gold mean whatever the judge's bias, and lambda (the
power tuning, clipped to [0, 1]) is chosen to minimise its variance: 0 gives
the gold-only mean, 1 plain PPI. The interval is the normal one with
se^2 = var(lambda * Yhat_u) / N + var(Y - lambda * Yhat) / n.

The estimator is written here from sums (counts, sums, squares and products)
so that the meeting-clustered bootstrap (analysis.bootstrap) gets every
resample from one matrix product. It is the estimator of the `ppi-python`
package (`ppi_py.ppi_mean_ci`, `ppi_mean_pointestimate`, `classical_mean_ci`,
with their population standard deviations and normal quantiles); the tests
compare it with that package, which is not imported here because it loads
numba and statsmodels (1.4 s) for twenty lines of arithmetic.

The gold sample must be a random sample of the responses (the planner's
"stratified at random" selection gives one): PPI corrects the judge's bias
on average over such samples, not on items chosen for being hard.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from analysis.bootstrap import ClusterBootstrap, percentile_interval, too_few_clusters

Z95 = float(special.ndtri(0.975))
# Column order of the sums a PPI estimate needs.
SUM_COLUMNS = ("n", "y", "yhat", "yy", "yhat2", "yyhat", "N", "yhat_u", "yhat_u2")


def ppi_columns(
    gold: np.ndarray, judge: np.ndarray, labelled: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """Per response, the terms whose sums SUM_COLUMNS are (zero outside `rows`):
    labelled responses add to n, y, yhat, ...; unlabelled ones to N, yhat_u, ..."""
    lab = (labelled & rows).astype(float)
    unl = (~labelled & rows).astype(float)
    y = np.where(labelled, gold, 0.0)
    return np.column_stack(
        [lab, lab * y, lab * judge, lab * y * y, lab * judge**2, lab * y * judge]
        + [unl, unl * judge, unl * judge**2]
    )


def estimates_from_sums(sums: np.ndarray, alpha: float = 0.05) -> dict[str, np.ndarray]:
    """Gold-only and PPI++ means, standard errors and lambda, for each row of
    `sums` (columns SUM_COLUMNS). Vectorised over rows (the full data and
    every resample)."""
    n, sy, sh, syy, shh, syh, big_n, su, suu = sums.T
    with np.errstate(divide="ignore", invalid="ignore"):
        y_mean, h_mean = sy / n, sh / n
        var_y = syy / n - y_mean**2  # population variances, as ppi-python's .std()
        var_h = shh / n - h_mean**2
        cov = syh / n - y_mean * h_mean
        u_mean = su / big_n
        var_u = suu / big_n - u_mean**2
        total = n + big_n
        var_all = (shh + suu - (sh + su) ** 2 / total) / (total - 1)  # np.cov: ddof 1
        lam = np.clip(cov / ((1 + n / big_n) * var_all), 0, 1)
        # a judge with one score everywhere (or no unlabelled responses) cannot help
        lam = np.where(np.isfinite(lam) & (var_all > 0) & (big_n > 0), lam, 0.0)
        u_term = np.where(big_n > 0, lam * u_mean, 0.0)
        theta = u_term + y_mean - lam * h_mean
        imputed = np.where(big_n > 0, lam**2 * np.maximum(var_u, 0) / big_n, 0.0)
        rectifier = np.maximum(var_y - 2 * lam * cov + lam**2 * var_h, 0) / n
        se_ppi = np.sqrt(imputed + rectifier)
        se_gold = np.sqrt(np.maximum(var_y, 0) / n)
    z = float(special.ndtri(1 - alpha / 2))
    return {
        "gold_mean": y_mean,
        "gold_se": se_gold,
        "ppi_mean": theta,
        "ppi_se": se_ppi,
        "lambda": lam,
        "z": np.full(len(n), z),
    }


def _interval(mean: float, se: float, z: float) -> list[float]:
    return [float(mean - z * se), float(mean + z * se)]


def ranks(means: np.ndarray) -> np.ndarray:
    """Rank of each column within its row, 1 = highest mean (NaN rows stay NaN)."""
    order = np.argsort(-means, axis=1, kind="stable")
    out = np.empty_like(means)
    np.put_along_axis(out, order, np.arange(1, means.shape[1] + 1, dtype=float)[None, :], axis=1)
    out[np.isnan(means).any(axis=1)] = np.nan
    return out


def rank_intervals(resampled: np.ndarray, point: np.ndarray, names: list[str]) -> list[dict]:
    """Systems in the order of the point estimate, each with its rank and the
    95% percentile interval of its rank over the resamples."""
    sampled = ranks(resampled)
    complete = sampled[~np.isnan(sampled).any(axis=1)]
    point_ranks = ranks(point[None, :])[0]
    out = []
    for j in np.argsort(point_ranks):
        if len(complete):
            low, high = np.percentile(complete[:, j], [2.5, 97.5])
            interval = [int(math.floor(low)), int(math.ceil(high))]
        else:
            interval = None
        out.append({"system": names[j], "rank": int(point_ranks[j]), "rank_ci95": interval})
    return out


def rankings(
    per_system: dict,
    names: list[str],
    resampled_ppi: np.ndarray,
    resampled_gold: np.ndarray,
    resamples: int,
) -> dict:
    """The systems ranked by their PPI and their labels-only means, with rank
    intervals over the resamples (the last row of each array: the full data),
    among the systems whose means could be computed."""
    ranked = [i for i, n in enumerate(names) if "ppi_mean" in per_system[n]]
    if len(ranked) < 2:
        return {"computable": False, "reason": "fewer than 2 systems with gold ratings"}
    sub = [names[i] for i in ranked]
    return {
        "ppi": rank_intervals(resampled_ppi[:-1, ranked], resampled_ppi[-1, ranked], sub),
        "gold_only": rank_intervals(resampled_gold[:-1, ranked], resampled_gold[-1, ranked], sub),
        "resamples": resamples,
    }


def system_scores(
    boot: ClusterBootstrap,
    gold: np.ndarray,
    judge: np.ndarray,
    labelled: np.ndarray,
    systems: np.ndarray,
    names: list[str],
    *,
    hidden_gold: np.ndarray | None = None,
) -> dict:
    """Per system: the gold-only mean on the labelled responses with its CI, the
    judge-only mean on all, and the PPI++ mean with its CI (normal, as
    ppi-python) and its meeting-clustered bootstrap interval; the ratio of CI
    widths and the labelled sample it is worth. Rankings by both means with
    rank intervals from the same resamples.

    `gold` is NaN where unknown, `judge` NaN where the judge gave no score;
    `labelled` marks the gold ratings used.
    `hidden_gold` (when the labelled set is a sample of an all-gold selection)
    gives the gold mean over all responses for comparison."""
    judge, gold = np.asarray(judge, float), np.asarray(gold, float)
    judged = np.isfinite(judge)
    labelled = np.asarray(labelled, bool) & judged & np.isfinite(gold)
    judge, gold = np.where(judged, judge, 0.0), np.where(labelled, gold, 0.0)
    per_system = {}
    resampled_ppi = np.full((boot.resamples + 1, len(names)), np.nan)
    resampled_gold = np.full((boot.resamples + 1, len(names)), np.nan)
    for s, name in enumerate(names):
        rows = (systems == s) & judged
        n_lab = int((labelled & rows).sum())
        n_unl = int((~labelled & rows).sum())
        if n_lab < 2:
            per_system[name] = {
                "computable": False,
                "reason": f"{n_lab} gold-rated response(s) of this system; at least 2 are needed",
            }
            continue
        sums = boot.sums(ppi_columns(gold, judge, labelled, rows))
        est = estimates_from_sums(sums)
        resampled_ppi[:, s] = est["ppi_mean"]
        resampled_gold[:, s] = est["gold_mean"]
        z = est["z"][-1]
        gold_ci = _interval(est["gold_mean"][-1], est["gold_se"][-1], z)
        ppi_ci = _interval(est["ppi_mean"][-1], est["ppi_se"][-1], z)
        width_gold, width_ppi = gold_ci[1] - gold_ci[0], ppi_ci[1] - ppi_ci[0]
        ratio = width_ppi / width_gold if width_gold > 0 else None
        clustered, undefined = (
            ([None, None], 0)
            if too_few_clusters(boot)
            else percentile_interval(est["ppi_mean"][:-1])
        )
        entry = {
            "n_labelled": n_lab,
            "n_unlabelled": n_unl,
            "gold_mean": float(est["gold_mean"][-1]),
            "gold_ci95": gold_ci,
            "judge_mean": float(np.mean(judge[rows])),
            "ppi_mean": float(est["ppi_mean"][-1]),
            "ppi_ci95": ppi_ci,
            "ppi_clustered_ci95": clustered,
            "lambda": float(est["lambda"][-1]),
            "width_ratio": None if ratio is None else float(ratio),
            "effective_labelled": None if not ratio else float(n_lab / ratio**2),
            "labels_saved": None if ratio is None else float(max(0.0, 1 - ratio**2)),
        }
        if hidden_gold is not None:
            everything = float(np.mean(hidden_gold[rows]))
            entry["all_gold_mean"] = everything
            entry["ppi_covers_all_gold"] = bool(ppi_ci[0] <= everything <= ppi_ci[1])
            entry["gold_covers_all_gold"] = bool(gold_ci[0] <= everything <= gold_ci[1])
        per_system[name] = entry
    return {
        "systems": per_system,
        "ranking": rankings(per_system, names, resampled_ppi, resampled_gold, boot.resamples),
    }


# --- A labelled set with known inclusion probabilities ------------------------------------------


def weighted_estimate(
    gold: np.ndarray, judge: np.ndarray, weight: np.ndarray
) -> tuple[float, float, float, float, float]:
    """The active-inference estimate of a mean (Zrnic & Candes, ICML 2024,
    "Active Statistical Inference", their mean estimator with power tuning):
    over the N responses, z_i = lambda * f_i + (Y_i - lambda * f_i) * w_i with
    w_i = xi_i / pi_i (0 for a response not labelled), theta = mean(z), and
    se = sd(z) / sqrt(N). Writing z = A + lambda * B with A = Y * w and
    B = f * (1 - w), lambda = -cov(A, B) / var(B) minimises var(z); clipped
    to [0, 1] as PPI++ is. lambda = 0 gives the Horvitz-Thompson mean of the
    labels alone. Returns (theta, se, lambda, theta_0, se_0)."""
    a = np.where(weight > 0, gold, 0.0) * weight
    b = judge * (1 - weight)
    n = len(a)
    var_b = float(np.var(b, ddof=1)) if n > 1 else 0.0
    cov = float(np.cov(a, b, ddof=1)[0, 1]) if n > 1 else 0.0
    lam = float(np.clip(-cov / var_b, 0, 1)) if var_b > 0 else 0.0
    z = a + lam * b
    se = float(np.std(z, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    se_0 = float(np.std(a, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return float(z.mean()), se, lam, float(a.mean()), se_0


def weighted_system_scores(
    boot: ClusterBootstrap,
    gold: np.ndarray,
    judge: np.ndarray,
    labelled: np.ndarray,
    probability: np.ndarray,
    systems: np.ndarray,
    names: list[str],
) -> dict:
    """Per system, the labels' inverse-probability (Horvitz-Thompson) mean and
    the judge-assisted active-inference mean (weighted_estimate) with normal
    95% intervals and the meeting-clustered interval of the latter (lambda
    fixed at its full-data value); rankings as system_scores gives them.

    `probability[i]` is response i's inclusion probability (> 0 for every
    judged response: the caller checks), `labelled` marks the picked
    responses that carry a label. The intervals treat the picks as
    independent draws (Poisson sampling, as in the paper); the planner draws
    a fixed number systematically, whose variance is usually no larger."""
    judge, gold = np.asarray(judge, float), np.asarray(gold, float)
    judged = np.isfinite(judge)
    labelled = np.asarray(labelled, bool) & judged & np.isfinite(gold)
    weight = np.where(labelled, 1.0 / np.where(probability > 0, probability, 1.0), 0.0)
    per_system: dict = {}
    resampled_ppi = np.full((boot.resamples + 1, len(names)), np.nan)
    resampled_gold = np.full((boot.resamples + 1, len(names)), np.nan)
    z = float(special.ndtri(0.975))
    for s, name in enumerate(names):
        rows = (systems == s) & judged
        n_lab = int((labelled & rows).sum())
        if n_lab < 2:
            per_system[name] = {
                "computable": False,
                "reason": f"{n_lab} labelled response(s) of this system; at least 2 are needed",
            }
            continue
        f, y, w = judge[rows], np.where(labelled[rows], gold[rows], 0.0), weight[rows]
        theta, se, lam, theta_0, se_0 = weighted_estimate(y, f, w)
        a = np.zeros(len(judge))
        b = np.zeros(len(judge))
        a[rows] = y * w
        b[rows] = f * (1 - w)
        sums = boot.sums(np.column_stack([rows.astype(float), a, b]))
        with np.errstate(divide="ignore", invalid="ignore"):
            resampled = (sums[:, 1] + lam * sums[:, 2]) / sums[:, 0]
            resampled_0 = sums[:, 1] / sums[:, 0]
        resampled_ppi[:, s] = resampled
        resampled_gold[:, s] = resampled_0
        gold_ci = _interval(theta_0, se_0, z)
        ppi_ci = _interval(theta, se, z)
        width_gold, width_ppi = gold_ci[1] - gold_ci[0], ppi_ci[1] - ppi_ci[0]
        ratio = width_ppi / width_gold if width_gold > 0 else None
        clustered, _ = (
            ([None, None], 0) if too_few_clusters(boot) else percentile_interval(resampled[:-1])
        )
        per_system[name] = {
            "n_labelled": n_lab,
            "n_unlabelled": int(rows.sum()) - n_lab,
            "gold_mean": theta_0,
            "gold_ci95": gold_ci,
            "judge_mean": float(np.mean(f)),
            "ppi_mean": theta,
            "ppi_ci95": ppi_ci,
            "ppi_clustered_ci95": clustered,
            "lambda": lam,
            "width_ratio": None if ratio is None else float(ratio),
            "effective_labelled": None if not ratio else float(n_lab / ratio**2),
            "labels_saved": None if ratio is None else float(max(0.0, 1 - ratio**2)),
        }
    return {
        "systems": per_system,
        "ranking": rankings(per_system, names, resampled_ppi, resampled_gold, boot.resamples),
    }


# --- How many gold ratings? -------------------------------------------------------------------


def gold_needed(
    gold: np.ndarray, judge_labelled: np.ndarray, judge_all: np.ndarray, width: float
) -> dict:
    """Gold ratings one system needs for a 95% CI of the given full width on
    its mean: without a judge (n = (2 z sd / width)^2) and with PPI++ using the
    judge's scores on the system's other responses (the smallest n of the
    system's T responses whose PPI++ interval is narrow enough, with the
    variances and the covariance estimated on the gold ratings at hand).

    Dorner, Nastl & Hardt (ICLR 2025, "Limits to scalable evaluation at the
    frontier: LLM as judge won't beat twice the data") show that a judge no
    more accurate than the evaluated model saves at most half the labels:
    `ceiling` is that bound, n_gold / 2."""
    total = len(judge_all)
    y = np.asarray(gold, float)
    h = np.asarray(judge_labelled, float)
    var_y = float(np.var(y))
    cov = float(np.mean((y - y.mean()) * (h - h.mean())))
    var_h = float(np.var(h))
    var_all = float(np.var(judge_all, ddof=1)) if total > 1 else 0.0
    half = width / 2
    n_gold = max(2, math.ceil((Z95 / half) ** 2 * var_y)) if var_y > 0 else 2
    candidates = np.arange(2, total + 1, dtype=float)
    rest = total - candidates
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(
            (rest > 0) & (var_all > 0),
            np.clip(cov / ((1 + candidates / rest) * var_all), 0, 1),
            0.0,
        )
        se2 = (var_y - 2 * lam * cov + lam**2 * var_h) / candidates + np.where(
            rest > 0, lam**2 * var_all / rest, 0.0
        )
    reachable = np.flatnonzero(Z95 * np.sqrt(np.maximum(se2, 0)) <= half)
    n_ppi = int(candidates[reachable[0]]) if len(reachable) else None
    return {
        "responses": total,
        "gold_only": n_gold,
        "gold_only_reachable": n_gold <= total,
        "ppi": n_ppi,
        "ceiling": math.ceil(n_gold / 2),
        "beyond_ceiling": n_ppi is not None and n_ppi < math.ceil(n_gold / 2),
    }
