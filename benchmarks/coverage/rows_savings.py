"""The ceiling on savings (analysis.statistics.savings), replayed as the
report computes it: the judge's within-system correlation with the gold, the
share of labels PPI++ saves at most (max(r, 0)^2) and its interval. The
estimand is the pool of clusters, as in rows_bootstrap: a replay is a study
of K clusters drawn with replacement, the truth the whole dataset's share.
The interval is reported from 6 clusters (the correlation's condition).
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics import savings
    from analysis.statistics.bootstrap import ClusterBootstrap

    rng = np.random.default_rng(settings.seed)
    k = len(dataset.systems)
    columns = savings.within_columns(dataset.judge, dataset.gold, dataset.system, k)
    truth = savings.share_saved(float(savings.within_r(columns.sum(axis=0))))
    members = [np.flatnonzero(dataset.cluster == c) for c in range(len(dataset.clusters))]
    out: list[Row] = []
    for size in cluster_counts(dataset, settings.small):
        held = np.full(settings.replays, np.nan)
        width = np.full(settings.replays, np.nan)
        for r in range(settings.replays):
            drawn = rng.integers(0, len(members), size)
            items = np.concatenate([members[c] for c in drawn])
            codes = np.repeat(np.arange(size), [len(members[c]) for c in drawn])
            boot = ClusterBootstrap(codes, size, settings.resamples, int(rng.integers(2**31)))
            found = savings.savings_ceiling(
                boot, dataset.system[items], k, dataset.judge[items], dataset.gold[items]
            )
            ci = found.get("share_saved_ci95")
            if not isinstance(ci, list) or ci[0] is None:
                continue
            held[r] = ci[0] - 1e-12 <= truth <= ci[1] + 1e-12
            width[r] = ci[1] - ci[0]
        given = np.isfinite(held)
        out.append(
            Row(
                "savings",
                "savings ceiling (share of labels PPI++ saves at most)",
                dataset.name,
                f"{size} clusters" + (" (all)" if size == len(dataset.clusters) else ""),
                settings.replays,
                float(held[given].mean()) if given.any() else None,
                width=float(np.nanmedian(width)) if given.any() else None,
                reported=float(given.mean()),
                extra={"truth": truth},
            )
        )
    return out
