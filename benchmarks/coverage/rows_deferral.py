"""The deferring judge's guarantee (analysis.statistics.deferral), replayed.

A dataset's judge defers by the disagreement of its two judges: its
confidence in a response is minus the distance between the judge's and the
second judge's scores (a two-member panel's spread, the signal a report
reads). The judge agrees with the humans on a response when its score is
within one point of the 1-10 scale (a ninth of the dataset's range) of the
reference's (gold). The population is the dataset: a threshold's true
disagreement is the share of the dataset's responses at or above it where
the judge disagrees.

A replay labels responses, chooses the threshold (alpha: 0.7 of the judge's
disagreement over the whole dataset, so that deferring is needed; delta
0.05) and checks the promise: the population's disagreement among the
responses the threshold keeps is at most alpha. A replay that keeps nothing
reports nothing (the judge defers every response; no promise is at stake).

Rows, per design:
- "deferral guarantee (independent labels)": N responses drawn one by one,
  the condition the guarantee is proved under;
- "deferral guarantee (labels by meeting)": K clusters drawn with
  replacement, all their responses labelled, as a study labels meetings.
The width column holds the mean share of the population the judge keeps.
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts

DELTA = 0.05
LABELS = (100, 300)
SMALL_LABELS = (100,)


def problem(dataset: Dataset) -> tuple[np.ndarray, np.ndarray, float]:
    """Each response's confidence and disagreement, and the alpha replayed."""
    low, high = dataset.scale
    tolerance = (high - low) / 9
    confidence = -np.abs(dataset.judge - dataset.second)
    disagrees = np.abs(dataset.judge - dataset.gold) > tolerance + 1e-9
    alpha = float(np.clip(round(0.7 * disagrees.mean(), 3), 0.05, 0.5))
    return confidence, disagrees, alpha


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics import deferral

    rng = np.random.default_rng(settings.seed)
    confidence, disagrees, alpha = problem(dataset)
    by_cluster = [np.flatnonzero(dataset.cluster == c) for c in range(len(dataset.clusters))]
    designs: list[tuple[str, str, object]] = []
    for n in SMALL_LABELS if settings.small else LABELS:
        if n < len(confidence):
            designs.append(("independent labels", f"{n} responses", n))
    for k in cluster_counts(dataset, settings.small):
        designs.append(("labels by meeting", f"{k} clusters", k))
    out: list[Row] = []
    for design, setting, size in designs:
        held = np.full(settings.replays, np.nan)
        share_kept = np.full(settings.replays, np.nan)
        for r in range(settings.replays):
            if design == "independent labels":
                drawn = rng.integers(0, len(confidence), int(size))  # type: ignore[call-overload]
            else:
                clusters = rng.integers(0, len(by_cluster), int(size))  # type: ignore[call-overload]
                drawn = np.concatenate([by_cluster[c] for c in clusters])
            chosen = deferral.choose_threshold(confidence[drawn], disagrees[drawn], alpha, DELTA)
            keep = deferral.kept(confidence, chosen.threshold)
            if not keep.any():
                continue
            held[r] = disagrees[keep].mean() <= alpha + 1e-12
            share_kept[r] = keep.mean()
        given = np.isfinite(held)
        out.append(
            Row(
                "deferral",
                f"deferral guarantee ({design})",
                dataset.name,
                f"{setting}, alpha {alpha:g}",
                settings.replays,
                float(held[given].mean()) if given.any() else None,
                width=float(np.nanmean(share_kept)) if given.any() else None,
                reported=float(given.mean()),
                promise=f"disagreement <= alpha with probability {1 - DELTA:g}",
                note="width: the mean share of the population the judge keeps",
            )
        )
    return out
