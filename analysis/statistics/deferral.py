"""A judge that defers: keep the responses the judge is confident about, send
the rest to a human, and guarantee the judge's agreement with the humans on
the ones it keeps.

Trust or Escalate (Jung, Brahman & Choi, ICLR 2025, arXiv 2407.18370) chooses
the threshold by fixed-sequence testing on human-labelled responses: from the
most confident candidate threshold down, test "the judge disagrees with the
humans on more than alpha of the responses it keeps" with an exact binomial
(Clopper-Pearson) upper bound at level delta; keep lowering the threshold while
the test rejects and stop at the first that does not. Each test is at level
delta and they run in a fixed order, so with probability at least 1 - delta
the chosen threshold's disagreement is at most alpha (Bates et al. 2021,
"Distribution-free, risk-controlling prediction sets"; Angelopoulos et al.
2021, "Learn then test"), for labelled responses drawn independently from the
population it is used on.

Differences from the authors' code (`SelectiveClassificationUtil`): the
candidates are the confidences the labelled responses have (each with at least
MIN_KEPT responses kept), not a grid of 5,000; the next candidate is the next
one in the list (theirs steps by 1/len(candidates), which is not the grid's
step); when even the most confident candidate fails, the judge keeps
nothing (theirs returns that candidate, whose guarantee does not hold); and
the number of errors is a whole number (theirs is risk x n, a float that can
fall a hair below it, and the binomial CDF then counts one error fewer).

In Concord a response is one of the meeting it belongs to, and humans label
meetings: the labelled responses are drawn by meeting, not one by one. The
coverage harness (rows_deferral) measures the guarantee both ways.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

MIN_KEPT = 30  # the authors' floor: no threshold is tested on fewer labelled responses


def upper_bound(errors: int, n: int, delta: float) -> float:
    """The exact one-sided upper confidence bound on a binomial rate at level
    delta: the r with P(Binomial(n, r) <= errors) = delta (Clopper-Pearson)."""
    if n <= 0:
        return 1.0
    if errors >= n:
        return 1.0
    return float(stats.beta.ppf(1 - delta, errors + 1, n - errors))


def upper_bound_rate(rate: float, n: float, delta: float) -> float:
    """upper_bound for an effective sample of n (not a whole number) with the
    observed rate: the beta quantile with the counts it implies."""
    if n <= 0 or rate >= 1:
        return 1.0
    return float(stats.beta.ppf(1 - delta, rate * n + 1, n - rate * n))


@dataclass(frozen=True)
class Threshold:
    threshold: float | None  # keep responses with confidence >= it; None: keep none
    kept: int  # labelled responses kept at the threshold
    errors: int  # of those, the ones where the judge disagrees
    bound: float | None  # the upper bound on disagreement at the threshold
    tested: int  # candidates tested (the last failed, unless every one passed)


def design_effect(errors: np.ndarray, kept: np.ndarray) -> float:
    """How much wider than a binomial's the variance of the kept responses'
    disagreement rate is when they come in clusters (errors and kept: per
    cluster): the linearised variance of the ratio estimator over clusters,
    over the binomial's, never below 1."""
    used = kept > 0
    errors, kept = errors[used].astype(float), kept[used].astype(float)
    clusters, n = len(kept), kept.sum()
    if clusters < 2 or n == 0:
        return 1.0
    rate = errors.sum() / n
    if rate <= 0 or rate >= 1:
        return 1.0
    clustered = clusters / (clusters - 1) * np.sum((errors - rate * kept) ** 2) / n**2
    return max(1.0, float(clustered / (rate * (1 - rate) / n)))


def choose_threshold(
    confidence: np.ndarray,
    disagrees: np.ndarray,
    alpha: float,
    delta: float,
    min_kept: int = MIN_KEPT,
    clusters: np.ndarray | None = None,
) -> Threshold:
    """The lowest confidence threshold the fixed sequence reaches before its
    first failed test (see the module's text). With `clusters` (each
    response's meeting, as integer codes), each test's binomial counts are
    shrunk by the design effect of the meetings (Kish's effective sample
    size), since responses of one meeting are not independent."""
    confidence = np.asarray(confidence, dtype=float)
    disagrees = np.asarray(disagrees, dtype=bool)
    order = np.argsort(-confidence, kind="stable")
    sorted_confidence = confidence[order]
    errors_so_far = np.cumsum(disagrees[order])
    candidates = np.unique(sorted_confidence)[::-1]  # most confident first
    # kept at candidate c: every response with confidence >= c
    kept_at = np.searchsorted(-sorted_confidence, -candidates, side="right")
    codes = None if clusters is None else np.asarray(clusters)[order]
    width = 0 if codes is None else int(codes.max()) + 1
    chosen = Threshold(None, 0, 0, None, 0)
    tested = 0
    for candidate, kept in zip(candidates, kept_at, strict=True):
        if kept < min_kept:
            continue
        errors = int(errors_so_far[kept - 1])
        if codes is None:
            bound = upper_bound(errors, int(kept), delta)
        else:
            per_cluster = np.bincount(codes[:kept], disagrees[order][:kept], minlength=width)
            sizes = np.bincount(codes[:kept], minlength=width)
            effect = design_effect(per_cluster, sizes)
            bound = upper_bound_rate(errors / kept, kept / effect, delta)
        tested += 1
        if bound > alpha:
            return Threshold(chosen.threshold, chosen.kept, chosen.errors, chosen.bound, tested)
        chosen = Threshold(float(candidate), int(kept), errors, bound, tested)
    return chosen


def kept(confidence: np.ndarray, threshold: float | None) -> np.ndarray:
    """Which responses a judge with this threshold keeps (None: none)."""
    confidence = np.asarray(confidence, dtype=float)
    if threshold is None:
        return np.zeros(len(confidence), dtype=bool)
    return confidence >= threshold


def clopper_pearson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact two-sided interval of a binomial rate."""
    if n == 0:
        return (float("nan"), float("nan"))
    tail = (1 - level) / 2
    low = 0.0 if successes == 0 else float(stats.beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes == n else float(stats.beta.ppf(1 - tail, successes + 1, n - successes))
    return low, high
