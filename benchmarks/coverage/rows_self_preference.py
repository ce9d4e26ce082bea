"""Self-preference (analysis.statistics.self_preference), replayed as the
report computes it: the judge's mean bias (its score minus the gold's) on one
system's responses minus its mean bias on the others', the system taken for
the judge's own family being each dataset's first. The estimand is the pool
of clusters, as in rows_bootstrap: a replay is a study of K clusters drawn
with replacement, the truth the whole dataset's difference. The studentized
interval is reported from 6 clusters (the correlation's condition).
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics.bootstrap import ClusterBootstrap
    from analysis.statistics.self_preference import self_preference

    rng = np.random.default_rng(settings.seed)
    bias = dataset.judge - dataset.gold
    own = dataset.system == 0
    known = np.isfinite(bias)
    truth = bias[known & own].mean() - bias[known & ~own].mean()
    members = [np.flatnonzero(dataset.cluster == c) for c in range(len(dataset.clusters))]
    out: list[Row] = []
    for k in cluster_counts(dataset, settings.small):
        held = np.full(settings.replays, np.nan)
        width = np.full(settings.replays, np.nan)
        for r in range(settings.replays):
            drawn = rng.integers(0, len(members), k)
            items = np.concatenate([members[c] for c in drawn])
            codes = np.repeat(np.arange(k), [len(members[c]) for c in drawn])
            boot = ClusterBootstrap(codes, k, settings.resamples, int(rng.integers(2**31)))
            found = self_preference(boot, bias[items], own[items])
            ci = found.get("ci95")
            if not isinstance(ci, list) or ci[0] is None:
                continue
            held[r] = ci[0] - 1e-12 <= truth <= ci[1] + 1e-12
            width[r] = ci[1] - ci[0]
        given = np.isfinite(held)
        out.append(
            Row(
                "self-preference",
                "self-preference (own family's bias minus the others')",
                dataset.name,
                f"{k} clusters" + (" (all)" if k == len(dataset.clusters) else ""),
                settings.replays,
                float(held[given].mean()) if given.any() else None,
                # the median: a study that drew one meeting several times can have a
                # resample whose jackknife has no spread, and an unbounded interval
                width=float(np.nanmedian(width)) if given.any() else None,
                reported=float(given.mean()),
            )
        )
    return out
