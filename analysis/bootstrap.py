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
resamples at once, whatever the number of responses. Intervals are percentile
intervals (2.5th and 97.5th percentiles of the resampled statistic); a
resample whose statistic is undefined (e.g. zero variance) is left out and
counted.
"""

from __future__ import annotations

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20250611


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


def percentile_interval(values: np.ndarray) -> tuple[list[float | None], int]:
    """The 95% percentile interval of the finite values, and how many were not."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return [None, None], int(len(values))
    low, high = np.percentile(finite, [2.5, 97.5])
    return [float(low), float(high)], int(len(values) - len(finite))


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
        x, y = np.asarray(x, float), np.asarray(y, float)
        valid = np.isfinite(x) & np.isfinite(y)
        # centred: no cancellation in the sums; unknown values weigh nothing
        x = np.where(valid, x - x[valid].mean(), 0.0) if valid.any() else np.zeros_like(x)
        y = np.where(valid, y - y[valid].mean(), 0.0) if valid.any() else np.zeros_like(y)
        columns = np.column_stack([valid.astype(float), x, y, x * x, y * y, x * y])
        n, sx, sy, sxx, syy, sxy = self.sums(columns).T
        with np.errstate(divide="ignore", invalid="ignore"):
            cov = sxy / n - (sx / n) * (sy / n)
            vx = sxx / n - (sx / n) ** 2
            vy = syy / n - (sy / n) ** 2
            r = cov / np.sqrt(vx * vy)
        # a resample with (numerically) no spread in x or y has no correlation
        scale_x, scale_y = np.mean(x[valid] ** 2), np.mean(y[valid] ** 2)
        flat = (vx <= 1e-12 * scale_x) | (vy <= 1e-12 * scale_y) | (n < 2)
        r[flat] = np.nan
        return np.clip(r, -1, 1)

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


MIN_CLUSTERS = 2


def too_few_clusters(boot: ClusterBootstrap) -> str | None:
    """Why a clustered interval cannot be given (None: it can). With one
    meeting every resample is that meeting: an interval of zero width that
    says nothing about the uncertainty."""
    if boot.clusters < MIN_CLUSTERS:
        return (
            f"{boot.clusters} meeting: a meeting-clustered interval needs {MIN_CLUSTERS} or more "
            "meetings, so none is given"
        )
    return None


def clustered_correlation(boot: ClusterBootstrap, x: np.ndarray, y: np.ndarray) -> dict:
    """Pearson r of x and y with its meeting-clustered percentile interval
    (none, with the reason, from fewer than 2 meetings)."""
    both = int((np.isfinite(x) & np.isfinite(y)).sum())
    if both < 3:
        return {"computable": False, "reason": f"{both} responses scored by both; at least 3"}
    r = boot.pearson(x, y)
    if not np.isfinite(r[-1]):
        return {"computable": False, "reason": "one of the two gives the same score everywhere"}
    note = too_few_clusters(boot)
    ci, undefined = ([None, None], 0) if note else percentile_interval(r[:-1])
    out: dict[str, object] = {
        "r": float(r[-1]),
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
    interval, and how often (over resamples) both put the same system on top."""
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
    note = too_few_clusters(boot)
    ci, undefined = ([None, None], 0) if note else percentile_interval(tau[:-1])
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
