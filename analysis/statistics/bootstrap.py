"""The meeting-clustered bootstrap, vectorised.

ELITR-Bench's questions are nested in meetings: responses to questions about
the same meeting are not independent (the same transcript, the same raters in
a crowd study), so an interval that resamples responses is too narrow. This
bootstrap resamples whole meetings with replacement (Field & Welsh 2007, the
cluster bootstrap): each resample draws as many meetings as there are, and a
meeting drawn twice counts twice.

Every statistic here is a function of sums (counts, sums, sums of squares and
products), so a resample needs only each meeting's sums, weighted by how often
it was drawn: one (resamples x meetings) @ (meetings x sums) product for all
resamples at once, whatever the number of responses. Leaving one meeting out
(the jackknife) is a subtraction from those sums. A resample whose statistic
is undefined (e.g. zero variance) is left out and counted.

The judge-trust intervals are the ones the coverage harness
(benchmarks/coverage/rows_bootstrap.py: studies of K meetings drawn from each
dataset's meetings, against the whole pool's value) finds to cover at 0.94 or
more (95% nominal) on every dataset; the plain percentile interval does not with few meetings (the
paper's 8 meetings: 0.88 for Pearson r) nor, for Kendall's tau between system
rankings, with many near-tied systems (SummEval consistency, 16 systems: 0.90
even with all 100 articles):

- Pearson r: a studentized bootstrap on Fisher's z. z = atanh(r) plus or
  minus q times its meeting-jackknife standard error, where q is the 95th
  percentile over resamples of |z* - z| / se* (each resample's own jackknife
  standard error), and never below Student's t on meetings - 1 degrees of
  freedom; from MIN_CLUSTERS_CORRELATION meetings.
- Kendall's tau between system rankings: the 0.5th and 99.5th percentiles of
  the resampled tau (a 95% interval: the 2.5th-97.5th under-cover when
  systems nearly tie, because noise in the systems' means pulls tau toward 0
  more than the resamples show), from CLUSTERS_PER_SYSTEM meetings per
  ranked system.

Below its condition no interval is given, with the reason and how many more
meetings it takes (too_few_clusters).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20250611
LARGE_T = 1e6  # |t*| of a resample whose jackknife has no spread (tanh(z +- 1e6 se) is +-1)


def cluster_draws(clusters: int, resamples: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(resamples x clusters) cluster numbers drawn with replacement."""
    return np.random.default_rng(seed).integers(0, clusters, size=(resamples, clusters))


def draw_counts(draws: np.ndarray, clusters: int) -> np.ndarray:
    """How often each cluster was drawn in each resample: (resamples x clusters)."""
    resamples = draws.shape[0]
    offsets = (draws + clusters * np.arange(resamples)[:, None]).ravel()
    return np.bincount(offsets, minlength=resamples * clusters).reshape(resamples, clusters)


def cluster_sums(codes: np.ndarray, columns: np.ndarray, clusters: int) -> np.ndarray:
    """Per cluster, the sum of each column: (clusters x columns)."""
    columns = np.asarray(columns, dtype=float).reshape(len(codes), -1)
    return np.stack(
        [np.bincount(codes, weights=col, minlength=clusters) for col in columns.T], axis=1
    )


def percentile_interval(
    values: np.ndarray, percentiles: tuple[float, float] = (2.5, 97.5)
) -> tuple[list[float | None], int]:
    """The percentile interval of the finite values (by default the 2.5th and
    97.5th percentiles), and how many were not finite."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return [None, None], int(len(values))
    low, high = np.percentile(finite, percentiles)
    return [float(low), float(high)], int(len(values) - len(finite))


def jackknife_se(replicates: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """The jackknife standard error over the last axis. `replicates[..., k]`:
    the statistic with one copy of cluster k left out; `slots[..., k]`: how
    many copies of cluster k the sample holds (each copy is one leave-one-out
    replicate; a cluster not drawn has none). NaN when a replicate that
    counts is undefined."""
    counts = slots.sum(axis=-1)
    values = np.where(slots > 0, replicates, 0.0)
    mean = (slots * values).sum(axis=-1) / counts
    spread = (slots * (values - mean[..., None]) ** 2).sum(axis=-1)
    return np.sqrt((counts - 1) / counts * spread)


def studentized_interval(
    boot: ClusterBootstrap,
    per_cluster: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
) -> tuple[float, float, float, int] | None:
    """A symmetric studentized (bootstrap-t) 95% interval for a statistic of
    the clusters' sums: (estimate, low, high, undefined resamples), or None
    when the jackknife of the data is undefined.

    `per_cluster`: (clusters x sums); `statistic` maps sums (..., sums) to
    values (...). The estimate's standard error is the meeting jackknife's;
    each resample's too (leaving out one drawn meeting at a time: its sums
    less that meeting's). The multiplier is the 95th percentile of |t*| =
    |stat* - stat| / se* over resamples, never below Student's t on
    clusters - 1 degrees of freedom. A resample with no spread among its
    leave-one-out values (one meeting drawn every time) has an infinite t*."""
    total = per_cluster.sum(axis=0)
    estimate = statistic(total)
    se = jackknife_se(statistic(total[None, :] - per_cluster), np.ones(boot.clusters))
    if not (np.isfinite(estimate) and np.isfinite(se)):
        return None
    counts = boot.weights[:-1]
    resampled = counts @ per_cluster
    star = statistic(resampled)
    # resamples x clusters x sums at once, in blocks of about 10^6 values: a study
    # of 800 meetings would otherwise hold 5 * 10^6 per temporary array
    block = max(1, 10**6 // per_cluster.size)
    se_star = np.concatenate(
        [
            jackknife_se(
                statistic(resampled[i : i + block, None, :] - per_cluster[None, :, :]),
                counts[i : i + block],
            )
            for i in range(0, len(counts), block)
        ]
    )
    defined = np.isfinite(star) & np.isfinite(se_star)
    if not defined.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(star[defined] - estimate) / se_star[defined]
    # 0 / 0: a resample equal to the data, with no spread; x / 0: as large as can be
    t = np.nan_to_num(t, nan=0.0, posinf=LARGE_T)
    q = max(float(np.percentile(t, 95)), float(stats.t.ppf(0.975, boot.clusters - 1)))
    width = q * se if se > 0 else 0.0
    return float(estimate), float(estimate - width), float(estimate + width), int((~defined).sum())


class ClusterBootstrap:
    """Resamples of the clusters (meetings) of one set of responses.

    `codes[i]` is the cluster of response i (0..clusters-1). `weights` holds
    one row per resample (how often each cluster was drawn) plus a last row of
    ones: the full data, so that a statistic and its resamples come from the
    same code."""

    def __init__(
        self, codes: np.ndarray, clusters: int, resamples: int, seed: int = DEFAULT_SEED
    ) -> None:
        self.codes = np.asarray(codes)
        self.clusters = clusters
        self.resamples = resamples
        self.seed = seed
        self.draws = cluster_draws(clusters, resamples, seed)
        counts = draw_counts(self.draws, clusters).astype(float)
        self.weights = np.vstack([counts, np.ones((1, clusters))])

    def sums(self, columns: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """(resamples + 1) x columns: the resampled sums of each column over the
        responses `rows` (a boolean mask or indices; all by default)."""
        codes = self.codes if rows is None else self.codes[rows]
        return self.weights @ cluster_sums(codes, columns, self.clusters)

    def pearson(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Pearson r on the full data (last) and on each resample, over the
        responses where both x and y are known (not NaN)."""
        sums = PearsonSums(x, y)
        return sums.r(self.sums(sums.columns))

    def group_means(self, values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
        """(resamples + 1) x groups: the mean of the known (not NaN) `values`
        within each group (e.g. a system), NaN where a resample holds none."""
        values = np.asarray(values, float)
        valid = np.isfinite(values)
        onehot = np.zeros((len(values), n_groups))
        onehot[np.flatnonzero(valid), groups[valid]] = 1.0
        sums = self.sums(np.column_stack([onehot, onehot * np.where(valid, values, 0.0)[:, None]]))
        with np.errstate(divide="ignore", invalid="ignore"):
            return sums[:, n_groups:] / sums[:, :n_groups]


class PearsonSums:
    """Pearson r as a function of six sums (count, x, y, x^2, y^2, xy) over the
    responses where both x and y are known, so that any weighting of the
    meetings (a resample, the data less one meeting) gives its r from its
    sums."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        x, y = np.asarray(x, float), np.asarray(y, float)
        valid = np.isfinite(x) & np.isfinite(y)
        # centred: no cancellation in the sums; unknown values weigh nothing
        x = np.where(valid, x - x[valid].mean(), 0.0) if valid.any() else np.zeros_like(x)
        y = np.where(valid, y - y[valid].mean(), 0.0) if valid.any() else np.zeros_like(y)
        self.columns = np.column_stack([valid.astype(float), x, y, x * x, y * y, x * y])
        self.scale_x = float(np.mean(x[valid] ** 2)) if valid.any() else 0.0
        self.scale_y = float(np.mean(y[valid] ** 2)) if valid.any() else 0.0

    def r(self, sums: np.ndarray) -> np.ndarray:
        """r from sums of shape (..., 6); NaN where x or y has no spread."""
        n, sx, sy, sxx, syy, sxy = np.moveaxis(np.asarray(sums, float), -1, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = sxy / n - (sx / n) * (sy / n)
            vx = sxx / n - (sx / n) ** 2
            vy = syy / n - (sy / n) ** 2
            r = cov / np.sqrt(vx * vy)
        # a resample with (numerically) no spread in x or y has no correlation
        flat = (vx <= 1e-12 * self.scale_x) | (vy <= 1e-12 * self.scale_y) | (n < 2)
        return np.clip(np.where(flat, np.nan, r), -1, 1)

    def fisher_z(self, sums: np.ndarray) -> np.ndarray:
        """atanh(r), finite at r = +-1 (there the interval is that value)."""
        return np.arctanh(np.clip(self.r(sums), -1 + 1e-15, 1 - 1e-15))


def kendall_tau_b(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the rows of a and b (rows: resamples; columns:
    the same systems), as scipy.stats.kendalltau(variant="b"); NaN where a row
    has a NaN or no untied pair."""
    first, second = np.triu_indices(a.shape[1], k=1)
    da = np.sign(a[:, first] - a[:, second])
    db = np.sign(b[:, first] - b[:, second])
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (da * db).sum(axis=1) / np.sqrt(np.abs(da).sum(axis=1) * np.abs(db).sum(axis=1))
    tau[np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1)] = np.nan
    return tau


# Any clustered interval: with one meeting every resample is that meeting, an
# interval of zero width that says nothing about the uncertainty.
MIN_CLUSTERS = 2
ONE_MEETING = "with one meeting every resample is that meeting"
# Pearson r's studentized interval: from 6 meetings it covers at 0.95 or more on
# every dataset of the coverage harness; at 5 the paper's meetings give 0.94 (an
# interval 0.54 wide), at 4 the simulated few-cluster population 0.80.
MIN_CLUSTERS_CORRELATION = 6
# Kendall's tau's percentile interval: 2.5 meetings per ranked system (8 for the
# paper's 3 systems, 15 for MT-bench's 6, 40 for SummEval's 16); with fewer, noise
# in the systems' means pulls tau below the pool's (MT-bench, 12 questions: 0.90).
CLUSTERS_PER_SYSTEM = 2.5
RANKING_PERCENTILES = (0.5, 99.5)
HARNESS = "below that the coverage harness finds no interval that holds"


def too_few_clusters(
    boot: ClusterBootstrap, minimum: int = MIN_CLUSTERS, why: str = ONE_MEETING
) -> str | None:
    """Why a clustered interval is not given (None: it is): the meetings
    there are, how many more it takes, and why that many."""
    if boot.clusters >= minimum:
        return None
    plural = "" if boot.clusters == 1 else "s"
    return (
        f"not enough meetings for an interval: {boot.clusters} meeting{plural}, "
        f"{minimum - boot.clusters} more (an interval needs {minimum}; {why})"
    )


def correlation_clusters_note(boot: ClusterBootstrap) -> str | None:
    """Why Pearson r's interval is not given for lack of meetings (None: it is)."""
    return too_few_clusters(boot, MIN_CLUSTERS_CORRELATION, HARNESS)


def ranking_clusters_note(boot: ClusterBootstrap, systems: int) -> str | None:
    """Why Kendall's tau's interval is not given for lack of meetings (None: it is)."""
    minimum = max(MIN_CLUSTERS, math.ceil(CLUSTERS_PER_SYSTEM * systems))
    return too_few_clusters(
        boot,
        minimum,
        f"{CLUSTERS_PER_SYSTEM:g} per ranked system, {systems} here; {HARNESS}",
    )


def clustered_correlation(boot: ClusterBootstrap, x: np.ndarray, y: np.ndarray) -> dict:
    """Pearson r of x and y with its meeting-clustered interval: the
    studentized bootstrap on Fisher's z (studentized_interval), from
    MIN_CLUSTERS_CORRELATION meetings (below, none, with the reason)."""
    both = int((np.isfinite(x) & np.isfinite(y)).sum())
    if both < 3:
        return {"computable": False, "reason": f"{both} responses scored by both; at least 3"}
    sums = PearsonSums(x, y)
    r = sums.r(sums.columns.sum(axis=0))
    if not np.isfinite(r):
        return {"computable": False, "reason": "one of the two gives the same score everywhere"}
    note = correlation_clusters_note(boot)
    ci: list[float | None] = [None, None]
    undefined = 0
    if not note:
        per_cluster = cluster_sums(boot.codes, sums.columns, boot.clusters)
        found = studentized_interval(boot, per_cluster, sums.fisher_z)
        if found is None:
            note = "leaving out one meeting leaves no correlation, so no interval is given"
        else:
            _, low, high, undefined = found
            ci = [float(np.tanh(low)), float(np.tanh(high))]
    out: dict[str, object] = {
        "r": float(r),
        "ci95": ci,
        "n": both,
        "clusters": boot.clusters,
        "resamples": boot.resamples,
        "undefined_resamples": undefined,
    }
    if note:
        out["ci_note"] = note
    return out


def tied_top(means: np.ndarray, tolerance: float = 1e-9) -> bool:
    """Whether the highest of these means is shared by two or more."""
    finite = means[np.isfinite(means)]
    if len(finite) < 2:
        return False
    top = finite.max()
    return int((finite >= top - tolerance).sum()) >= 2


def ranking_agreement(
    boot: ClusterBootstrap,
    judge: np.ndarray,
    human: np.ndarray,
    systems: np.ndarray,
    names: list[str],
) -> dict:
    """The systems ranked by their mean judge score and by their mean human
    score: Kendall's tau-b between the two rankings with its clustered
    interval (the 0.5th-99.5th percentiles of the resampled tau, from
    CLUSTERS_PER_SYSTEM meetings per ranked system), and how often (over
    resamples) both put the same system on top (with the interval only)."""
    judge, human = np.asarray(judge, float), np.asarray(human, float)
    both = np.isfinite(judge) & np.isfinite(human)  # the same responses on both sides
    # only the systems both sides score are ranked
    scored = np.unique(systems[both]) if both.any() else np.array([], dtype=int)
    if len(scored) < 2:
        return {
            "computable": False,
            "reason": f"{len(scored)} system(s) scored by both the judge and the reference; "
            "a ranking needs 2 or more",
        }
    judge, human = np.where(both, judge, np.nan), np.where(both, human, np.nan)
    judge_means = boot.group_means(judge, systems, len(names))[:, scored]
    human_means = boot.group_means(human, systems, len(names))[:, scored]
    names = [names[i] for i in scored]
    tau = kendall_tau_b(judge_means, human_means)
    complete = ~(np.isnan(judge_means).any(axis=1) | np.isnan(human_means).any(axis=1))
    ties = np.array(
        [tied_top(j) or tied_top(h) for j, h in zip(judge_means, human_means, strict=True)]
    )
    same_top = (
        np.argmax(np.nan_to_num(judge_means, nan=-np.inf), axis=1)
        == np.argmax(np.nan_to_num(human_means, nan=-np.inf), axis=1)
    ) & ~ties
    note = ranking_clusters_note(boot, len(names))
    ci, undefined = (
        ([None, None], 0) if note else percentile_interval(tau[:-1], RANKING_PERCENTILES)
    )
    resampled = complete[:-1]

    def order(means: np.ndarray) -> list[str]:
        return [names[i] for i in np.argsort(-means, kind="stable")]

    top_note = None
    if tied_top(human_means[-1]) or tied_top(judge_means[-1]):
        side = "the reference's" if tied_top(human_means[-1]) else "the judge's"
        top_note = f"no top system: {side} highest means tie"
    out: dict[str, object] = {
        "judge_ranking": order(judge_means[-1]),
        "human_ranking": order(human_means[-1]),
        "kendall_tau": None if not np.isfinite(tau[-1]) else float(tau[-1]),
        "ci95": ci,
        "top_same": None if top_note else bool(same_top[-1]),
        "top_same_probability": None
        if top_note or note or not resampled.any()
        else float(same_top[:-1][resampled].mean()),
        "resamples": boot.resamples,
        "undefined_resamples": undefined,
    }
    if top_note:
        out["top_note"] = top_note
    if note:
        out["ci_note"] = note
    return out
