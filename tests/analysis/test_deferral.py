"""The deferring judge's threshold (analysis.statistics.deferral) against a
transcription of Trust or Escalate's selection (the authors'
SelectiveClassificationUtil: a grid of candidate thresholds, an upper bound
found by brentq on the binomial CDF, tested from the top down), on thousands
of generated judges; the two places where Concord departs from it on purpose;
and the guarantee, by simulation on two populations."""

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import binom

from analysis.statistics import deferral


class AuthorsSelection:
    """The authors' SelectiveClassificationUtil, transcribed from torch to
    numpy. `fixed=True` steps to the next candidate in the list and keeps
    nothing when the top candidate fails (Concord's choices); False is the
    released code as it is."""

    def __init__(self, phats, wrong, delta, grid, fixed=True):
        self.phats, self.wrong, self.delta = phats, wrong, delta
        self.lambdas = np.array([lam for lam in grid if self.n_lambda(lam) >= 30])
        self.fixed = fixed

    def n_lambda(self, lam):
        return int((self.phats >= lam).sum())

    def selective_risk(self, lam):
        return self.wrong[self.phats >= lam].sum() / (self.phats >= lam).sum()

    def upper(self, lam):
        n = self.n_lambda(lam)
        # the released code's risk x n (errors / n x n) is a float that can fall a
        # hair below the whole number of errors, and the CDF then reads one fewer
        errors = self.selective_risk(lam) * n
        errors = round(errors) if self.fixed else errors
        return brentq(lambda r: binom.cdf(errors, n, r) - self.delta, 0, 0.9999)

    def lambda_hat(self, alpha):
        if len(self.lambdas) == 0:
            return None if self.fixed else 0.0
        if self.upper(self.lambdas[-1]) > alpha:
            return None if self.fixed else self.lambdas[-1]
        flipped = self.lambdas[::-1]
        for i, lam in enumerate(flipped):
            if self.fixed:
                if i + 1 == len(flipped):
                    break
                next_lam = flipped[i + 1]
            else:
                next_lam = lam - 1 / len(self.lambdas)
            if self.upper(next_lam) > alpha:
                return lam
        return self.lambdas[0]


def judge(rng, n):
    """A judge whose confidence tells, more or less, when it is wrong."""
    confidence = rng.integers(0, 40, n) / 39  # ties, as self-consistency gives
    slope = rng.uniform(0, 0.6)
    wrong = rng.random(n) < np.clip(rng.uniform(0.05, 0.5) - slope * (confidence - 0.5), 0, 1)
    return confidence, wrong


@pytest.mark.parametrize("errors,n", [(0, 30), (3, 30), (29, 30), (12, 200), (150, 1000)])
def test_the_bound_is_the_authors_root_of_the_binomial_cdf(errors, n):
    root = brentq(lambda r: binom.cdf(errors, n, r) - 0.1, 0, 0.9999)
    assert deferral.upper_bound(errors, n, 0.1) == pytest.approx(root, abs=1e-9)


def test_the_threshold_is_the_transcriptions_on_thousands_of_judges():
    rng = np.random.default_rng(0)
    compared = kept_nothing = 0
    for _ in range(2000):
        n = int(rng.integers(40, 400))
        confidence, wrong = judge(rng, n)
        alpha, delta = rng.choice([0.1, 0.2, 0.3]), rng.choice([0.05, 0.1])
        grid = np.unique(confidence)  # the authors' grid made the observed confidences
        reference = AuthorsSelection(confidence, wrong, delta, grid).lambda_hat(alpha)
        got = deferral.choose_threshold(confidence, wrong, alpha, delta)
        if reference is None:
            assert got.threshold is None
            kept_nothing += 1
        else:
            assert got.threshold == pytest.approx(reference, abs=0)
            assert got.bound <= alpha
        compared += 1
    assert compared == 2000 and 100 < kept_nothing < 1900  # both branches are exercised


def test_where_concord_departs_from_the_released_code():
    rng = np.random.default_rng(3)
    # a judge wrong half of the time whatever its confidence: the released code
    # still returns its most confident threshold, whose guarantee fails
    confidence, wrong = rng.random(300), rng.random(300) < 0.5
    grid = np.linspace(0, 1, 5000)
    released = AuthorsSelection(confidence, wrong, 0.1, grid, fixed=False).lambda_hat(0.2)
    assert released is not None and released > 0.8
    chosen = deferral.choose_threshold(confidence, wrong, 0.2, 0.1)
    assert chosen.threshold is None and chosen.kept == 0


@pytest.mark.parametrize("slope", [0.0, 0.5])
def test_the_guarantee_holds_for_independent_labels(slope):
    """A population with a known disagreement per confidence; at each replay
    the chosen threshold's disagreement in the population is at most alpha,
    in at least 1 - delta of the replays (three Monte-Carlo errors)."""
    rng = np.random.default_rng(11)
    population = rng.integers(0, 50, 200_000) / 49
    chance = np.clip(0.3 - slope * (population - 0.5), 0, 1)
    wrong = rng.random(len(population)) < chance
    alpha, delta, replays = 0.25, 0.1, 400
    failed = 0
    for _ in range(replays):
        drawn = rng.integers(0, len(population), 300)
        chosen = deferral.choose_threshold(population[drawn], wrong[drawn], alpha, delta)
        keep = deferral.kept(population, chosen.threshold)
        if keep.any() and wrong[keep].mean() > alpha:
            failed += 1
    assert failed / replays <= delta + 3 * np.sqrt(delta * (1 - delta) / replays)


def test_clopper_pearson_is_scipys():
    from scipy.stats import binomtest

    for k, n in [(0, 10), (3, 10), (10, 10), (57, 120)]:
        ci = binomtest(k, n).proportion_ci(0.95, method="exact")
        assert deferral.clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_the_clustered_score_is_a_plain_computation_by_meeting(seed):
    """The score statistic from the prefix sums equals (alpha - rate) over the
    cluster-robust standard error at alpha computed meeting by meeting, and at
    the observed rate its variance is statsmodels' cluster-robust variance of
    an intercept-only regression (the same estimator, at another centre)."""
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    meetings = np.repeat(np.arange(12), rng.integers(5, 40, 12))
    wrong = rng.random(len(meetings)) < rng.uniform(0.05, 0.6, 12)[meetings]
    sums = tuple(c[-1] for c in deferral.prefix_cluster_sums(meetings, wrong))
    e = np.bincount(meetings, wrong).astype(float)
    n = np.bincount(meetings).astype(float)
    for alpha in (0.1, 0.3, wrong.mean(), 0.6):
        variance = 12 / 11 * np.sum((e - alpha * n) ** 2) / n.sum() ** 2
        variance = max(variance, alpha * (1 - alpha) / n.sum())
        expected = (alpha - wrong.mean()) / np.sqrt(variance)
        assert deferral.clustered_score(sums, alpha) == pytest.approx(expected, rel=1e-10)
    fit = sm.OLS(wrong.astype(float), np.ones((len(wrong), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": meetings}
    )
    rate = wrong.mean()
    at_rate = 12 / 11 * np.sum((e - rate * n) ** 2) / n.sum() ** 2
    # statsmodels' small-sample factor also has (N - 1) / (N - k) with k = 1: none
    assert at_rate == pytest.approx(fit.bse[0] ** 2, rel=1e-10)


def test_the_clustered_bound_is_where_the_test_stops_rejecting():
    rng = np.random.default_rng(4)
    meetings = np.repeat(np.arange(9), 30)
    wrong = rng.random(len(meetings)) < rng.uniform(0.05, 0.3, 9)[meetings]
    every = deferral.prefix_cluster_sums(meetings, wrong)
    sums = tuple(float(c[-1]) for c in every)
    bound = deferral.clustered_bound(sums, 0.05)
    assert wrong.mean() < bound < 1
    passes = lambda alpha: bool(  # noqa: E731
        deferral.clustered_passes(tuple(np.array([c]) for c in sums), alpha, 0.05)[0]
    )
    assert passes(bound + 1e-6) and not passes(bound - 1e-6)


def test_the_clustered_threshold_is_never_laxer_than_the_binomial_one():
    rng = np.random.default_rng(5)
    for _ in range(300):
        meetings = np.repeat(np.arange(8), 25)
        confidence = rng.integers(0, 20, len(meetings)) / 19
        wrong = rng.random(len(meetings)) < np.clip(
            rng.uniform(0.05, 0.5, 8)[meetings] - 0.3 * (confidence - 0.5), 0, 1
        )
        plain = deferral.choose_threshold(confidence, wrong, 0.25, 0.05)
        clustered = deferral.choose_threshold(confidence, wrong, 0.25, 0.05, clusters=meetings)
        if clustered.threshold is not None:
            assert plain.threshold is not None and plain.threshold <= clustered.threshold


def test_every_prefixs_cluster_sums_are_the_plain_ones_on_that_prefix():
    rng = np.random.default_rng(9)
    codes = rng.integers(0, 7, 300)
    wrong = rng.random(300) < rng.uniform(0.05, 0.7, 7)[codes]
    every = deferral.prefix_cluster_sums(codes, wrong)
    for i in range(300):
        e = np.bincount(codes[: i + 1], wrong[: i + 1], minlength=7)
        n = np.bincount(codes[: i + 1], minlength=7)
        expected = (e.sum(), (e**2).sum(), (e * n).sum(), (n**2).sum(), (n > 0).sum(), i + 1)
        got = tuple(float(c[i]) for c in every)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12), i
