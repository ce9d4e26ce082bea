"""Anytime-valid estimates for a human study that looks at its data after
every rating and stops when its question is answered.

A fixed-n confidence interval is valid once, at the n chosen in advance; a
study that checks "is the interval narrow enough yet?" after every rating and
stops the first time it is would cover the truth far less often than 95%.
A confidence sequence is a sequence of intervals that cover the truth at
every time at once with probability 1 - alpha, so any stopping rule keeps the
coverage.

Used here: the asymptotic confidence sequence of Waudby-Smith, Arnold, Wu,
Howard & Ramdas ("Time-uniform central limit theory and asymptotic confidence
sequences", Annals of Statistics 2024, Theorem 2.2), the Robbins normal
mixture boundary with the running sample variance:

    mean_t +- sqrt( 2 (t s_t^2 rho^2 + 1) / (t^2 rho^2)
                    * log( sqrt(t s_t^2 rho^2 + 1) / alpha ) )

with rho^2 = (2 log(1/alpha) + log(1 + 2 log(1/alpha))) / (t_opt * scale^2)
making it tightest near t_opt observations of variance scale^2. The boundary
is the two-sided normal mixture of the `confseq` package
(`TwoSidedNormalMixture`, `best_rho`), written out here because that package
builds C++ with Boost for these three lines.

Each observation of a study is an active-inference increment (Zrnic &
Candes, ICML 2024, "Active Statistical Inference"; its sequential form as in
Zrnic & Candes' section on sequential sampling): a response drawn at random
from the pool, its judge score f always known, sent to a human with a
probability pi chosen before its label is seen (higher where the judge is
unsure, never below a floor: `analysis.planning.items_for_humans.inclusion_probabilities`),
and

    z_t = lambda_t f_t + (Y_t - lambda_t f_t) xi_t / pi_t

where xi_t is 1 if it was sent and Y_t the human's score. E[z_t] is the
pool's human mean whatever the judge's bias; lambda_t (power tuning, clipped
to [0, 1]) is computed from the increments before t only, so that it is
predictable and the sequence stays valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def mixture_radius(
    count: np.ndarray, variance: np.ndarray, alpha: float, t_opt: float, scale: float = 1.0
) -> np.ndarray:
    """The half-width of the asymptotic confidence sequence after `count`
    observations with running variance `variance` (arrays of one length)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha}: between 0 and 1.")
    if t_opt <= 0 or scale <= 0:
        raise ValueError("t_opt and scale: positive.")
    log_inverse = math.log(1 / alpha)
    # confseq's TwoSidedNormalMixture::best_rho(v_opt, alpha), in intrinsic time
    mixture = (t_opt * scale**2) / (2 * log_inverse + math.log(1 + 2 * log_inverse))
    intrinsic = count * variance  # t s_t^2
    return (
        np.sqrt((intrinsic + mixture) * (np.log1p(intrinsic / mixture) + 2 * log_inverse)) / count
    )


@dataclass(frozen=True)
class ConfidenceSequence:
    """Per observation t (0-based: after t + 1 of them): the running mean and
    the anytime-valid interval."""

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @property
    def half_width(self) -> np.ndarray:
        return (self.upper - self.lower) / 2


def running_variance(
    values: np.ndarray, ends: tuple[float, float] | None = None, copies: float = 0.0
) -> np.ndarray:
    """After each observation: the variance of the values so far (population
    form), with `copies` pseudo-observations at each of the two `ends` among
    them. The pseudo-observations keep an early variance from being too small
    where the values are skewed (a run of equal scores before the first rare
    one): without them, streams missed the truth early in up to 9% of the
    coverage harness's replays after 30 labels, with them at most 6.5%
    (docs/benchmarks.md, "Coverage")."""
    count = np.arange(1, len(values) + 1, dtype=float)
    if ends is None or copies <= 0:
        mean = np.cumsum(values) / count
        return np.maximum(np.cumsum(values**2) / count - mean**2, 0.0)
    total = count + 2 * copies
    grand = (np.cumsum(values) + copies * (ends[0] + ends[1])) / total
    squares = np.cumsum(values**2) + copies * (ends[0] ** 2 + ends[1] ** 2)
    return np.maximum(squares / total - grand**2, 0.0)


def increment_ends(
    judge: np.ndarray, probability: np.ndarray, scale: tuple[float, float]
) -> tuple[float, float]:
    """Where to put the pseudo-observations of a stream of active increments
    (running_variance): a draw sent with the pool's mean probability, judged
    at the pool's mean, rated at either end of the scale (lambda 1)."""
    f_bar = float(np.mean(judge))
    pi_bar = float(np.mean(probability))
    low, high = (f_bar + (v - f_bar) / pi_bar for v in scale)
    return low, high


def confidence_sequence(
    values: np.ndarray,
    *,
    alpha: float = 0.05,
    t_opt: float = 100,
    scale: float = 1.0,
    bounds: tuple[float, float],
    running_intersection: bool = False,
    burn_in: int = 0,
    pad: tuple[float, float] | None = None,
    pad_copies: float = 1.0,
) -> ConfidenceSequence:
    """The asymptotic confidence sequence for the mean of `values`, observed
    in order. `scale` is a guess of their standard deviation made before any
    is seen (it only moves where the sequence is tightest). `bounds` is the
    range the mean lies in (a score's scale): the intervals are cut to it,
    and values must lie in it unless `pad` is given. `pad` (by default the
    bounds) puts `pad_copies` pseudo-observations at each of its two values
    into the running variance (running_variance); `pad_copies=0` gives the
    paper's sequence exactly. Unbounded, skewed data (lognormal scores missed
    in 25.8% of streams) have no place here: the bounds are required.

    The sequence is asymptotic: it covers at every time at once as the
    observations grow, not from the first one. So the intervals before
    `burn_in` observations are not to be read, and `running_intersection`
    (each interval cut to the earlier ones) starts at `burn_in`: an
    intersection from the first observation carried its early misses forever
    (3-45% of streams missed, against 0.2-7.8% without it). An intersection
    that would be empty keeps that time's own interval, never a zero width."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or not len(values):
        raise ValueError("values: a non-empty sequence of numbers.")
    if not np.isfinite(values).all():
        raise ValueError("values: finite numbers only.")
    low, high = bounds
    if not low < high:
        raise ValueError("bounds: (low, high) with low < high.")
    if pad is None and ((values < low) | (values > high)).any():
        raise ValueError(f"values: within the bounds [{low:g}, {high:g}].")
    count = np.arange(1, len(values) + 1, dtype=float)
    mean = np.cumsum(values) / count
    variance = running_variance(values, pad or bounds, pad_copies)
    radius = mixture_radius(count, variance, alpha, t_opt, scale)
    lower, upper = np.clip(mean - radius, low, high), np.clip(mean + radius, low, high)
    if running_intersection and burn_in < len(values):
        start = max(burn_in, 0)
        cut_lower = np.maximum.accumulate(lower[start:])
        cut_upper = np.minimum.accumulate(upper[start:])
        empty = cut_lower > cut_upper
        lower[start:] = np.where(empty, lower[start:], cut_lower)
        upper[start:] = np.where(empty, upper[start:], cut_upper)
    return ConfidenceSequence(mean, lower, upper)


def active_increments(
    judge: np.ndarray,
    human: np.ndarray,
    sent: np.ndarray,
    probability: np.ndarray,
    *,
    tune: bool = True,
    burn_in: int = 10,
) -> tuple[np.ndarray, np.ndarray]:
    """The increments z_t and the lambda_t each used. `human[t]` is read only
    where `sent[t]`. Without `tune`, lambda is 1 (plain prediction-powered);
    with it, lambda_t minimises the variance of z estimated on the increments
    before t (1 until `burn_in` labels were seen), clipped to [0, 1]."""
    judge = np.asarray(judge, dtype=float)
    sent = np.asarray(sent, dtype=bool)
    probability = np.asarray(probability, dtype=float)
    if not (len(judge) == len(sent) == len(probability) == len(human)):
        raise ValueError("judge, human, sent and probability: one entry per observation.")
    if ((probability <= 0) | (probability > 1)).any():
        raise ValueError("probability: in (0, 1] for every observation.")
    weight = np.where(sent, 1.0 / probability, 0.0)
    labels = np.where(sent, np.asarray(human, dtype=float), 0.0)
    if not np.isfinite(labels).all():
        raise ValueError("human: a finite score for every observation sent.")
    a = labels * weight  # z = a + lambda * b
    b = judge * (1 - weight)
    lambdas = np.ones(len(judge))
    if tune:
        # predictable: lambda_t from the increments 0 .. t-1
        n = np.arange(len(judge), dtype=float)
        sum_a, sum_b = np.cumsum(a) - a, np.cumsum(b) - b
        sum_ab, sum_bb = np.cumsum(a * b) - a * b, np.cumsum(b * b) - b * b
        labelled_before = np.cumsum(sent) - sent
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = sum_ab / n - (sum_a / n) * (sum_b / n)
            var_b = sum_bb / n - (sum_b / n) ** 2
            tuned = np.clip(-cov / var_b, 0.0, 1.0)
        ready = (labelled_before >= burn_in) & (var_b > 0) & np.isfinite(tuned)
        lambdas = np.where(ready, tuned, 1.0)
    return a + lambdas * b, lambdas
