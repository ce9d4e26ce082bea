"""Prediction-powered system scores: a few gold ratings plus a judge's scores
on every response give a system mean on the gold scale with a valid interval.

PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered
Inference"; for LLM evaluation, Boyeau et al., ICML 2025, "AutoEval Done
Right"): with n gold-rated responses (gold Y, judge Yhat) and N responses the
judge alone scored (Yhat_u),

    theta = lambda * mean(Yhat_u) + mean(Y - lambda * Yhat)

is unbiased for the gold mean whatever the judge's bias, and lambda (the
power tuning, clipped to [0, 1]) is chosen to minimise its variance: 0 gives
the gold-only mean, 1 plain PPI. ppi-python's interval is the normal one with
se^2 = var(lambda * Yhat_u) / N + var(Y - lambda * Yhat) / n; the report's is
made to hold at the sizes people label (system_scores: Student's t, a
pseudo-label at each end of the scale, none below MIN_LABELS), because the
normal one covered 0.68-0.80 at 5-10 labels per system in the coverage harness.

The estimator is written here from sums (counts, sums, squares and products).
It is the estimator of the `ppi-python`
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
from collections.abc import Callable

import numpy as np
from scipy import special

from analysis.statistics.bootstrap import ClusterBootstrap

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


# --- The reported intervals: small samples, bounded scores -------------------------------------

MIN_LABELS = 10  # per system: below it no interval is given (the harness's smallest row that holds)
# Pseudo-labels at each end of the scale, in the variance only (the estimate is
# untouched): Agresti & Coull's "add successes and failures" read for a bounded
# score. A sample of labels that all sit at one end (a system every rater gives
# 5 of 5) otherwise has no variance and a zero-width interval that misses the
# rare low score it did not draw; the coverage harness's SummEval rows fell to
# 0.08-0.89 without them (docs/benchmarks.md, "Coverage").
PSEUDO_LABELS = 1  # PPI++ on a random sample of the labels
PSEUDO_LABELS_WEIGHTED = 2  # inverse-probability weights add their own skew
SCALE = (1.0, 10.0)


def padded_variance(values: np.ndarray, pseudo: tuple[float, float], copies: float) -> float:
    """The sample variance (ddof 1) of `values` with `copies` more values at
    each of the two `pseudo` values (fractional copies weigh as such)."""
    values = np.asarray(values, float)
    weights = np.r_[np.ones(len(values)), copies, copies]
    points = np.r_[values, pseudo]
    total = weights.sum()
    mean = float(weights @ points) / total
    return float(weights @ (points - mean) ** 2) / (total - 1)


def t_quantile(labels: int, alpha: float = 0.05) -> float:
    """Student's t quantile on labels - 1 degrees of freedom."""
    return float(special.stdtrit(max(labels - 1, 1), 1 - alpha / 2))


def interval_on_scale(
    mean: float, se: float, q: float, scale: tuple[float, float]
) -> tuple[float, list[float]]:
    """The estimate and its interval, both cut to the scale (a mean of scores
    on 1-10 is on 1-10, whatever the estimator's arithmetic gives)."""
    low, high = scale
    centre = float(np.clip(mean, low, high))
    return centre, [float(max(mean - q * se, low)), float(min(mean + q * se, high))]


def too_few_labels(count: int, what: str = "gold-rated responses") -> dict | None:
    """Why no interval is given below MIN_LABELS (None: one is)."""
    if count >= MIN_LABELS:
        return None
    return {
        "computable": False,
        "reason": f"not enough labels for an interval: {count} {what} of this system, "
        f"{MIN_LABELS - count} more (an interval needs {MIN_LABELS}; below that the "
        "coverage harness finds none that holds)",
    }


def ranks(means: np.ndarray) -> np.ndarray:
    """Rank of each column within its row, 1 = highest mean (NaN rows stay NaN)."""
    order = np.argsort(-means, axis=1, kind="stable")
    out = np.empty_like(means)
    np.put_along_axis(out, order, np.arange(1, means.shape[1] + 1, dtype=float)[None, :], axis=1)
    out[np.isnan(means).any(axis=1)] = np.nan
    return out


def rank_intervals_from(
    names: list[str], means: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> list[dict]:
    """Ranks (1 = highest mean) with the ranks each system's intervals allow:
    from 1 + the systems whose whole interval lies above its interval, to the
    count of systems less those whose whole interval lies below. With
    simultaneous intervals (Bonferroni: each at 1 - alpha / systems) every
    true rank lies in its interval at once with probability 1 - alpha."""
    point = ranks(means[None, :])[0]
    out = []
    for j in np.argsort(point, kind="stable"):
        above = int(np.sum(lower > upper[j]))
        below = int(np.sum(upper < lower[j]))
        out.append(
            {
                "system": names[j],
                "rank": int(point[j]),
                "rank_ci95": [1 + above, len(names) - below],
            }
        )
    return out


def rankings(per_system: dict, names: list[str], joint: dict[str, dict]) -> dict:
    """The systems ranked by their PPI and their labels-only means, with rank
    intervals read from simultaneous intervals (`joint[name]`: each system's
    "ppi" and "gold" interval at 1 - 0.05 / systems), among the systems whose
    means could be given."""
    ranked = [n for n in names if n in joint]
    if len(ranked) < 2:
        return {
            "computable": False,
            "reason": f"fewer than 2 systems with an interval (each needs {MIN_LABELS} labels)",
        }
    out: dict[str, object] = {}
    for key, mean_key in (("ppi", "ppi_mean"), ("gold_only", "gold_mean")):
        means = np.array([per_system[n][mean_key] for n in ranked])
        lower = np.array([joint[n][key][0] for n in ranked])
        upper = np.array([joint[n][key][1] for n in ranked])
        out[key] = rank_intervals_from(ranked, means, lower, upper)
    return out


def system_scores(
    boot: ClusterBootstrap,
    gold: np.ndarray,
    judge: np.ndarray,
    labelled: np.ndarray,
    systems: np.ndarray,
    names: list[str],
    *,
    hidden_gold: np.ndarray | None = None,
    scale: tuple[float, float] = SCALE,
) -> dict:
    """Per system: the gold-only mean on the labelled responses with its CI, the
    judge-only mean on all, and the PPI++ mean with its CI; the ratio of CI
    widths and the labelled sample it is worth. Rankings by both means with
    rank intervals.

    The estimates are ppi-python's (estimates_from_sums). The reported
    intervals are for the small samples people label: Student's t on n - 1
    degrees of freedom, the rectifier's variance (ddof 1) with PSEUDO_LABELS
    pseudo-labels at each end of the scale, cut to the scale; none below
    MIN_LABELS labels. (ppi-python's normal interval covered 0.68-0.80 at 5-10
    labels per system and 0.08-0.54 where the labels pile up at the scale's end:
    docs/benchmarks.md, "Coverage".)

    `gold` is NaN where unknown, `judge` NaN where the judge gave no score;
    `labelled` marks the gold ratings used. `boot` gives the responses'
    meetings (its resamples are not read: a meeting-clustered interval of a
    random sample's mean did not hold in the harness). `hidden_gold` (when the
    labelled set is a sample of an all-gold selection) gives the gold mean
    over all responses for comparison."""
    del boot  # the clustered interval is not reported (see above)
    judge, gold = np.asarray(judge, float), np.asarray(gold, float)
    judged = np.isfinite(judge)
    labelled = np.asarray(labelled, bool) & judged & np.isfinite(gold)
    judge, gold = np.where(judged, judge, 0.0), np.where(labelled, gold, 0.0)
    low, high = scale
    per_system: dict = {}
    joint: dict[str, dict] = {}
    for s, name in enumerate(names):
        rows = (systems == s) & judged
        n_lab = int((labelled & rows).sum())
        n_unl = int((~labelled & rows).sum())
        refused = too_few_labels(n_lab)
        if refused:
            per_system[name] = refused
            continue
        est = estimates_from_sums(ppi_columns(gold, judge, labelled, rows).sum(axis=0)[None, :])
        lam = float(est["lambda"][0])
        y, f = gold[labelled & rows], judge[labelled & rows]
        f_u = judge[~labelled & rows]
        f_bar = float(f.mean())
        imputed = lam**2 * float(np.var(f_u, ddof=1)) / n_unl if n_unl > 1 else 0.0
        rectifier = padded_variance(
            y - lam * f, (low - lam * f_bar, high - lam * f_bar), PSEUDO_LABELS
        )
        se_ppi = math.sqrt(imputed + rectifier / n_lab)
        se_gold = math.sqrt(padded_variance(y, scale, PSEUDO_LABELS) / n_lab)
        q = t_quantile(n_lab)
        gold_mean, gold_ci = interval_on_scale(float(est["gold_mean"][0]), se_gold, q, scale)
        ppi_mean, ppi_ci = interval_on_scale(float(est["ppi_mean"][0]), se_ppi, q, scale)
        ratio = se_ppi / se_gold if se_gold > 0 else None
        entry = {
            "n_labelled": n_lab,
            "n_unlabelled": n_unl,
            "gold_mean": gold_mean,
            "gold_ci95": gold_ci,
            "judge_mean": float(np.mean(judge[rows])),
            "ppi_mean": ppi_mean,
            "ppi_ci95": ppi_ci,
            "lambda": lam,
            "width_ratio": None if ratio is None else float(ratio),
            "effective_labelled": None if not ratio else float(n_lab / ratio**2),
            "labels_saved": None if ratio is None else float(max(0.0, 1 - ratio**2)),
        }
        joint[name] = {"se": (se_ppi, se_gold), "n": n_lab}
        if hidden_gold is not None:
            everything = float(np.mean(hidden_gold[rows]))
            entry["all_gold_mean"] = everything
            entry["ppi_covers_all_gold"] = bool(ppi_ci[0] <= everything <= ppi_ci[1])
            entry["gold_covers_all_gold"] = bool(gold_ci[0] <= everything <= gold_ci[1])
        per_system[name] = entry
    _simultaneous(per_system, joint)
    return {"systems": per_system, "ranking": rankings(per_system, names, joint)}


def _simultaneous(per_system: dict, joint: dict[str, dict]) -> None:
    """Each ranked system's PPI and gold-only intervals at 1 - 0.05 / systems
    (Bonferroni), beside its standard errors in `joint`."""
    alpha = 0.05 / max(len(joint), 1)
    for name, part in joint.items():
        q = t_quantile(part["n"], alpha)
        se_ppi, se_gold = part["se"]
        for key, mean_key, se in (("ppi", "ppi_mean", se_ppi), ("gold", "gold_mean", se_gold)):
            mean = per_system[name][mean_key]
            part[key] = (mean - q * se, mean + q * se)
        part["gold_only"] = part["gold"]


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
    labels alone. Returns (theta, se, lambda, theta_0, se_0): the paper's
    formula (the tests compare with it); the report widens these
    (weighted_system_scores)."""
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


def weighted_standard_error(
    gold: np.ndarray, judge: np.ndarray, weight: np.ndarray, lam: float, scale: tuple[float, float]
) -> float:
    """The reported standard error of the weighted estimate: sd(z) / sqrt(N)
    with PSEUDO_LABELS_WEIGHTED pseudo-responses at each end of the scale
    among the N, each picked with the labelled responses' mean weight and
    scored by the judge's mean."""
    picked = weight > 0
    w_bar = float(weight[picked].mean())
    f_bar = float(judge.mean())
    z = np.where(picked, gold, 0.0) * weight + lam * judge * (1 - weight)
    ends = (
        lam * f_bar + (scale[0] - lam * f_bar) * w_bar,
        lam * f_bar + (scale[1] - lam * f_bar) * w_bar,
    )
    return math.sqrt(padded_variance(z, ends, PSEUDO_LABELS_WEIGHTED) / len(z))


def hajek_mean(
    gold: np.ndarray, weight: np.ndarray, scale: tuple[float, float]
) -> tuple[float, float]:
    """The labels' weighted mean sum(w Y) / sum(w) (Hajek's ratio form of the
    Horvitz-Thompson mean: a system that happens to get more picks does not
    get a larger mean) and its linearised standard error, with the same
    pseudo-responses as weighted_standard_error."""
    picked = weight > 0
    total = float(weight.sum())
    theta = float(weight[picked] @ gold[picked]) / total
    scale_up = len(weight) / total
    u = np.where(picked, gold - theta, 0.0) * weight * scale_up
    w_bar = float(weight[picked].mean())
    ends = tuple(scale_up * w_bar * (v - theta) for v in scale)
    return theta, math.sqrt(padded_variance(u, (ends[0], ends[1]), PSEUDO_LABELS_WEIGHTED) / len(u))


def weighted_system_scores(
    boot: ClusterBootstrap,
    gold: np.ndarray,
    judge: np.ndarray,
    labelled: np.ndarray,
    probability: np.ndarray,
    systems: np.ndarray,
    names: list[str],
    *,
    scale: tuple[float, float] = SCALE,
) -> dict:
    """Per system, the labels' inverse-probability weighted mean (hajek_mean)
    and the judge-assisted active-inference mean (weighted_estimate), each with
    its 95% interval; rankings as system_scores gives them.

    The intervals are the estimator's normal ones made to hold at the sizes
    people label: Student's t on labels - 1 degrees of freedom, the variance
    with PSEUDO_LABELS_WEIGHTED pseudo-responses at each end of the scale
    (weighted_standard_error), cut to the scale; none where the design
    expects fewer than MIN_LABELS labels of the system. The normal interval
    covered 0.69-0.86 at 10 labels per system (docs/benchmarks.md,
    "Coverage").

    `probability[i]` is response i's inclusion probability (> 0 for every
    judged response: the caller checks), `labelled` marks the picked
    responses that carry a label. The intervals treat the picks as
    independent draws (Poisson sampling, as in the paper); the planner draws
    a fixed number systematically, whose variance is usually no larger."""
    del boot  # no meeting-clustered interval: it did not hold in the harness
    judge, gold = np.asarray(judge, float), np.asarray(gold, float)
    judged = np.isfinite(judge)
    labelled = np.asarray(labelled, bool) & judged & np.isfinite(gold)
    weight = np.where(labelled, 1.0 / np.where(probability > 0, probability, 1.0), 0.0)
    per_system: dict = {}
    joint: dict[str, dict] = {}
    for s, name in enumerate(names):
        rows = (systems == s) & judged
        n_lab = int((labelled & rows).sum())
        # refused by the design's expected count, fixed before any pick: refusing by
        # the count drawn would report the systems that happened to get more picks
        expected = float(probability[rows].sum())
        refused = too_few_labels(int(expected), "labelled responses expected")
        if refused is None and n_lab < 2:
            refused = {
                "computable": False,
                "reason": f"{n_lab} labelled response(s) of this system were drawn "
                f"({expected:.1f} expected): a variance needs 2",
            }
        if refused:
            per_system[name] = refused
            continue
        f, y, w = judge[rows], np.where(labelled[rows], gold[rows], 0.0), weight[rows]
        theta, _, lam, _, _ = weighted_estimate(y, f, w)
        se = weighted_standard_error(y, f, w, lam, scale)
        theta_0, se_0 = hajek_mean(y, w, scale)
        q = t_quantile(n_lab)
        gold_mean, gold_ci = interval_on_scale(theta_0, se_0, q, scale)
        ppi_mean, ppi_ci = interval_on_scale(theta, se, q, scale)
        ratio = se / se_0 if se_0 > 0 else None
        per_system[name] = {
            "n_labelled": n_lab,
            "n_unlabelled": int(rows.sum()) - n_lab,
            "gold_mean": gold_mean,
            "gold_ci95": gold_ci,
            "judge_mean": float(np.mean(f)),
            "ppi_mean": ppi_mean,
            "ppi_ci95": ppi_ci,
            "lambda": lam,
            "width_ratio": None if ratio is None else float(ratio),
            "effective_labelled": None if not ratio else float(n_lab / ratio**2),
            "labels_saved": None if ratio is None else float(max(0.0, 1 - ratio**2)),
        }
        joint[name] = {"se": (se, se_0), "n": n_lab}
    _simultaneous(per_system, joint)
    return {"systems": per_system, "ranking": rankings(per_system, names, joint)}


# --- How many gold ratings? -------------------------------------------------------------------


def padded_variance_at(
    n: np.ndarray,
    mean: np.ndarray | float,
    variance: np.ndarray | float,
    ends: tuple[np.ndarray | float, np.ndarray | float],
    copies: float,
) -> np.ndarray:
    """padded_variance of n values with this mean and (ddof 1) variance, for
    each n: what the reported interval's variance will be at n labels."""
    total = n + 2 * copies
    grand = (n * mean + copies * (ends[0] + ends[1])) / total
    squares = (
        (n - 1) * variance
        + n * (mean - grand) ** 2
        + copies * ((ends[0] - grand) ** 2 + (ends[1] - grand) ** 2)
    )
    return squares / (total - 1)


def smallest_sufficient(
    padded_at: Callable[[np.ndarray], np.ndarray],
    half_width: float,
    alpha: float,
    most: int,
    degrees: int | None = None,
) -> int:
    """The fewest labels n >= MIN_LABELS whose interval t * sqrt(padded
    variance at n / n) is at most `half_width` (`most` when none up to it),
    t on n - 1 degrees of freedom, or on `degrees` when the interval keeps
    those (a two-stage design's). The search stops at the n where even the
    smallest sample's quantile and variance would do, so it never scans far
    beyond the answer."""
    q_top = float(special.stdtrit(degrees or MIN_LABELS - 1, 1 - alpha / 2))
    start = float(padded_at(np.array([float(MIN_LABELS)]))[0])
    upper = min(most, max(MIN_LABELS, math.ceil(q_top**2 * start / half_width**2) + 1))
    n = np.arange(MIN_LABELS, upper + 1, dtype=float)
    quantile = special.stdtrit(np.minimum(n - 1, degrees or np.inf), 1 - alpha / 2)
    half = quantile * np.sqrt(padded_at(n) / n)
    narrow = np.flatnonzero(half <= half_width)
    return int(n[narrow[0]]) if len(narrow) else most


def gold_only_needed(gold: np.ndarray, width: float, scale: tuple[float, float] = SCALE) -> int:
    """The fewest labels whose reported gold-only interval (t, pseudo-labels)
    is at most `width` wide, with the mean and variance of the labels at hand."""
    y = np.asarray(gold, float)
    variance = float(np.var(y, ddof=1)) if len(y) > 1 else 0.0
    mean = float(y.mean())
    return smallest_sufficient(
        lambda n: padded_variance_at(n, mean, variance, scale, PSEUDO_LABELS),
        width / 2,
        0.05,
        200_000,
    )


def gold_needed(
    gold: np.ndarray,
    judge_labelled: np.ndarray,
    judge_all: np.ndarray,
    width: float,
    scale: tuple[float, float] = SCALE,
) -> dict:
    """Gold ratings one system needs for a 95% CI of the given full width on
    its mean, as the report will compute that interval (system_scores: t,
    pseudo-labels, at least MIN_LABELS): without a judge (gold_only_needed)
    and with PPI++ using the judge's scores on the system's other responses
    (the smallest n of the system's T responses whose PPI++ interval is
    narrow enough), with the variances and the covariance estimated on the
    gold ratings at hand.

    Dorner, Nastl & Hardt (ICLR 2025, "Limits to scalable evaluation at the
    frontier: LLM as judge won't beat twice the data") show that a judge no
    more accurate than the evaluated model saves at most half the labels:
    `ceiling` is that bound, n_gold / 2."""
    total = len(judge_all)
    y = np.asarray(gold, float)
    h = np.asarray(judge_labelled, float)
    cov = float(np.mean((y - y.mean()) * (h - h.mean())))
    var_all = float(np.var(judge_all, ddof=1)) if total > 1 else 0.0
    half = width / 2
    n_gold = gold_only_needed(y, width, scale)
    candidates = np.arange(MIN_LABELS, total + 1, dtype=float)
    rest = total - candidates
    f_bar = float(h.mean())
    ddof = 1 if len(y) > 1 else 0
    var_y, var_h = float(np.var(y, ddof=ddof)), float(np.var(h, ddof=ddof))
    cov_1 = cov * len(y) / max(len(y) - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(
            (rest > 0) & (var_all > 0),
            np.clip(cov / ((1 + candidates / rest) * var_all), 0, 1),
            0.0,
        )
        imputed = np.where(rest > 0, lam**2 * var_all / rest, 0.0)
    # the rectifier Y - lambda f at each candidate's lambda, from the labels at hand
    mean_r = float(y.mean()) - lam * f_bar
    var_r = np.maximum(var_y - 2 * lam * cov_1 + lam**2 * var_h, 0.0)
    ends = (scale[0] - lam * f_bar, scale[1] - lam * f_bar)
    padded = padded_variance_at(candidates, mean_r, var_r, ends, PSEUDO_LABELS)
    half_widths = special.stdtrit(candidates - 1, 0.975) * np.sqrt(padded / candidates + imputed)
    narrow = np.flatnonzero(half_widths <= half)
    n_ppi = int(candidates[narrow[0]]) if len(narrow) else None
    return {
        "responses": total,
        "gold_only": n_gold,
        "gold_only_reachable": n_gold <= total,
        "ppi": n_ppi,
        "ceiling": math.ceil(n_gold / 2),
        "beyond_ceiling": n_ppi is not None and n_ppi < math.ceil(n_gold / 2),
    }
