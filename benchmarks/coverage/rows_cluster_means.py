"""A system's mean score over clusters with its betting interval
(analysis.statistics.cluster_means.clustered_mean), replayed as the reports
build it: per system, per length bucket, per task.

A replay is a study of K clusters drawn with replacement from the dataset's
clusters (a cluster drawn twice is two clusters); its interval for each
system's mean (gold scores, and the judge's) is checked against the pool's
mean of that system (the mean over the pool's clusters of its cluster
means: what the study's mean over its drawn clusters estimates). Rows per K and side: the worst
system's coverage (the promise: each interval alone), with all systems at
once shown beside it. Below MIN_CLUSTERS_MEAN the report gives no interval;
those Ks are replayed too, and their rows say it reported none.
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts

SIZES_BELOW = (2, 3, 4)  # fewer clusters than the others replay: wide, but promised


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics.cluster_means import MIN_CLUSTERS_MEAN, clustered_mean

    rng = np.random.default_rng(settings.seed)
    members = [np.flatnonzero(dataset.cluster == c) for c in range(len(dataset.clusters))]
    systems = range(len(dataset.systems))
    out: list[Row] = []
    below = SIZES_BELOW[:1] if settings.small else SIZES_BELOW
    ks = sorted({*cluster_counts(dataset, settings.small), *below} - {0})
    for side, values in (("gold", dataset.gold), ("judge", dataset.judge)):
        truth = np.array([_pool_mean(dataset, values, s) for s in systems])
        for k in ks:
            held = np.full((settings.replays, len(truth)), np.nan)
            widths = []
            for r in range(settings.replays):
                drawn = rng.integers(0, len(dataset.clusters), k)
                index = np.concatenate([members[c] for c in drawn])
                labels = np.repeat(np.arange(k), [len(members[c]) for c in drawn])
                for s in systems:
                    mine = dataset.system[index] == s
                    found = clustered_mean(values[index][mine], labels[mine], dataset.scale)
                    low, high = found.get("ci95", [None, None])
                    if low is None:
                        continue
                    held[r, s] = float(low - 1e-12 <= truth[s] <= high + 1e-12)
                    widths.append(high - low)
            reported = np.isfinite(held).all(axis=1)
            per_system = [float(np.mean(held[reported, s])) for s in systems if reported.any()]
            setting = f"{k} clusters" + (" (all)" if k == len(dataset.clusters) else "")
            note = "" if k >= MIN_CLUSTERS_MEAN else f"no interval below {MIN_CLUSTERS_MEAN}"
            out.append(
                Row(
                    "cluster-means",
                    f"System mean score ({side})",
                    dataset.name,
                    setting,
                    settings.replays,
                    min(per_system) if per_system else None,
                    coverage_all=float(np.mean(held[reported].all(axis=1)))
                    if reported.any()
                    else None,
                    width=float(np.mean(widths)) if widths else None,
                    reported=float(reported.mean()),
                    note=note,
                )
            )
    return out


def _pool_mean(dataset: Dataset, values: np.ndarray, system: int) -> float:
    """The pool's mean over clusters of the system's cluster means."""
    mine = (dataset.system == system) & np.isfinite(values)
    means = [
        values[mine & (dataset.cluster == c)].mean()
        for c in range(len(dataset.clusters))
        if (mine & (dataset.cluster == c)).any()
    ]
    return float(np.mean(means))
