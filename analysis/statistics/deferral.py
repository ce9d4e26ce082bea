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
    size), since responses of one meeting are not independent.

    Every candidate's bound is computed at once (sorting, then prefix sums):
    the time grows as n log n however many distinct confidences there are."""
    confidence = np.asarray(confidence, dtype=float)
    disagrees = np.asarray(disagrees, dtype=bool)
    order = np.argsort(-confidence, kind="stable")
    sorted_confidence = confidence[order]
    errors_so_far = np.cumsum(disagrees[order])
    candidates = np.unique(sorted_confidence)[::-1]  # most confident first
    # kept at candidate c: every response with confidence >= c
    kept_at = np.searchsorted(-sorted_confidence, -candidates, side="right")
    tested_at = kept_at >= max(min_kept, 1)
    candidates, kept_at = candidates[tested_at], kept_at[tested_at]
    if len(candidates) == 0:
        return Threshold(None, 0, 0, None, 0)
    errors = errors_so_far[kept_at - 1]
    if clusters is None:
        with np.errstate(divide="ignore", invalid="ignore"):
            exact = stats.beta.ppf(1 - delta, errors + 1, kept_at - errors)
        bounds = np.where(errors >= kept_at, 1.0, exact)  # upper_bound, for every candidate
    else:
        codes = np.asarray(clusters)[order]
        effects = prefix_design_effects(codes, disagrees[order])[kept_at - 1]
        rates = errors / kept_at
        n = kept_at / effects
        with np.errstate(divide="ignore", invalid="ignore"):
            bounds = np.where(
                rates >= 1, 1.0, stats.beta.ppf(1 - delta, rates * n + 1, n - rates * n)
            )
    failing = np.flatnonzero(bounds > alpha)
    tested = int(failing[0]) + 1 if len(failing) else len(candidates)
    last = tested - 1 if not len(failing) else int(failing[0]) - 1
    if last < 0:
        return Threshold(None, 0, 0, None, tested)
    return Threshold(
        float(candidates[last]),
        int(kept_at[last]),
        int(errors[last]),
        float(bounds[last]),
        tested,
    )


def prefix_design_effects(codes: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """design_effect of the first i + 1 responses, for every i: the sums it
    needs (per meeting: errors squared, errors x size, size squared) grow by
    one response at a time, so each prefix's come from cumulative sums."""
    errors = np.asarray(errors, dtype=float)
    n = len(codes)
    # each response's meeting's errors and size before it (a stable sort by meeting)
    by_meeting = np.argsort(codes, kind="stable")
    sorted_codes = codes[by_meeting]
    starts = np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    size_before = np.empty(n)
    size_before[by_meeting] = np.arange(n) - group_start
    cumulative = np.cumsum(errors[by_meeting])
    before = cumulative - errors[by_meeting]
    errors_before = np.empty(n)
    errors_before[by_meeting] = before - np.where(group_start > 0, cumulative[group_start - 1], 0)
    e, k = errors_before, size_before
    s_ee = np.cumsum((e + errors) ** 2 - e**2)
    s_en = np.cumsum((e + errors) * (k + 1) - e * k)
    s_nn = np.cumsum((k + 1) ** 2 - k**2)
    meetings = np.cumsum(size_before == 0)
    total = np.arange(1, n + 1, dtype=float)
    rate = np.cumsum(errors) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        clustered = meetings / (meetings - 1) * (s_ee - 2 * rate * s_en + rate**2 * s_nn) / total**2
        effect = clustered / (rate * (1 - rate) / total)
    usable = (meetings >= 2) & (rate > 0) & (rate < 1)
    return np.where(usable, np.maximum(effect, 1.0), 1.0)


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
