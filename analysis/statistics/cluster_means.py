"""A mean score with its interval when the items come in clusters (documents,
meetings): the mean over clusters of each cluster's mean score (a document
weighs as much as any other, however many of its questions were asked), and
the betting confidence interval for the mean of bounded observations of
Waudby-Smith & Ramdas ("Estimating means of bounded random variables by
betting", JRSS B 2024; `betting_ci` of their `confseq` package with its
defaults: the predictable-mixture bets tuned for n, the hedged capital
max(K+/2, K-/2) against 1/alpha on a grid of 1,001 means, its running
intersection). The cluster means, put on [0, 1] by the score's scale, are
bet on in an order drawn from a fixed seed.

Why this interval: it holds for any distribution on the scale, with no
large-sample step. The cluster-robust t interval and the studentized
cluster bootstrap (on the mean, or on its logit) both under-cover where a
few clusters sit far from the rest: the paper's 8 meetings give 0.88-0.89
for LongAlpaca-7B's gold mean at 5-8 meetings, a skewed simulated
population 0.90-0.92 even at 20 (benchmarks/coverage/rows_cluster_means.py:
studies of K clusters drawn from each dataset's clusters). The price is
width: with few clusters the interval is wide, and says so.
"""

from __future__ import annotations

import numpy as np

ALPHA = 0.05
BREAKS = 1000  # betting_ci's grid: means 0, 0.001, ..., 1
ORDER_SEED = 20251127  # the order the cluster means are bet on
MIN_CLUSTERS_MEAN = 2
WHY = "with one cluster there is no spread to bet against"


def betting_interval(
    x: np.ndarray, alpha: float = ALPHA, breaks: int = BREAKS
) -> tuple[float, float]:
    """confseq's betting_ci(x, alpha) for observations x in [0, 1], in order:
    every mean of the grid at once (the bets do not depend on it)."""
    x = np.asarray(x, float)
    n = len(x)
    t = np.arange(1, n + 1)
    # lambda_predmix_eb(x, alpha=alpha / 2, fixed_n=n): the regularised running
    # mean and variance of the observations before each one
    mu_hat = np.minimum((0.5 + np.cumsum(x)) / (t + 1), 1)
    sigma2 = (0.25 + np.cumsum((x - mu_hat) ** 2)) / (t + 1)
    sigma2_before = np.append(0.25, sigma2[:-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        bets = np.sqrt(2 * np.log(1 / (alpha / 2)) / (n * sigma2_before))
    bets = np.clip(np.nan_to_num(bets, nan=0.0), -1, 1)  # trunc_scale 1, no m truncation
    grid = np.arange(0, 1 + 1 / breaks, step=1 / breaks)
    kept = np.empty((len(grid), n), bool)  # means x times: not rejected by then
    block = max(1, 2_000_000 // max(n, 1))  # grid rows at a time: bounded memory
    for start in range(0, len(grid), block):
        gaps = x[None, :] - grid[start : start + block, None]
        # 0 x infinity (a factor of 0 after an overflow) counts as 0, as confseq counts it
        with np.errstate(invalid="ignore", over="ignore"):
            positive = np.nan_to_num(np.cumprod(1 + bets * gaps, axis=1))
            negative = np.nan_to_num(np.cumprod(1 - bets * gaps, axis=1))
        kept[start : start + block] = np.maximum(0.5 * positive, 0.5 * negative) <= 1 / alpha
    low, high = np.zeros(n), np.ones(n)
    any_kept = kept.any(axis=0)
    first = np.argmax(kept, axis=0)
    last = len(grid) - 1 - np.argmax(kept[::-1], axis=0)
    low[any_kept], high[any_kept] = grid[first[any_kept]], grid[last[any_kept]]
    low, high = np.maximum(0, low - 1 / breaks), np.minimum(1, high + 1 / breaks)
    return float(np.max(low)), float(np.min(high))  # the running intersection's last


def clustered_mean(values: np.ndarray, clusters: np.ndarray, scale: tuple[float, float]) -> dict:
    """The mean over clusters of the known (finite) `values`' cluster means
    (items grouped by `clusters`, any labels) on `scale`, with its 95%
    betting interval from MIN_CLUSTERS_MEAN clusters."""
    values = np.asarray(values, float)
    known = np.isfinite(values)
    values, clusters = values[known], np.asarray(clusters)[known]
    if not len(values):
        return {"computable": False, "reason": "no scored item"}
    lo, hi = scale
    if np.any(values < lo) or np.any(values > hi):
        raise ValueError(f"a score outside the scale {lo:g}-{hi:g}")
    _, codes = np.unique(clusters, return_inverse=True)
    k = int(codes.max()) + 1
    means = np.bincount(codes, weights=values, minlength=k) / np.bincount(codes, minlength=k)
    out: dict = {
        "mean": float(means.mean()),
        "ci95": [None, None],
        "n": int(len(values)),
        "clusters": k,
    }
    if k < MIN_CLUSTERS_MEAN:
        out["ci_note"] = f"not enough clusters for an interval: 1 cluster ({WHY})"
        return out
    order = np.random.default_rng(ORDER_SEED).permutation(k)
    low, high = betting_interval((means[order] - lo) / (hi - lo))
    out["ci95"] = [lo + (hi - lo) * low, lo + (hi - lo) * high]
    return out
