"""The deferring judge's guarantee (analysis.statistics.deferral), replayed.

A dataset's judge defers by the disagreement of its two judges: its
confidence in a response is minus the distance between the judge's and the
second judge's scores (a two-member panel's spread, the signal a report
reads). The judge agrees with the humans on a response when its score is
within two points of the 1-10 scale (two ninths of the dataset's range) of
the reference's (gold), as the report reads it. The population is the dataset: a threshold's true
disagreement is the share of the dataset's responses at or above it where
the judge disagrees.

A replay labels responses, chooses the threshold (delta 0.05; alpha: 0.85 of
the judge's disagreement over the whole dataset, so that deferring is needed,
and all of it, where many thresholds sit near alpha and a test passes by
chance most easily) and checks the promise: the population's disagreement
among the responses the threshold keeps is at most alpha. The promise is
unconditional (with probability 1 - delta over the labels drawn), so a
replay whose judge keeps nothing (it defers every response) keeps it too;
the row's "reported" column is the share of replays that kept some.

Rows, per design:
- "deferral guarantee (independent labels)": N responses drawn one by one,
  the condition the guarantee is proved under;
- "deferral guarantee (labels by meeting)": K clusters drawn with
  replacement, all their responses labelled, as a study labels meetings.
The width column holds the mean share of the population the judge keeps.
"""

from __future__ import annotations

import itertools

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts

DELTA = 0.05
LABELS = (200, 500)
SMALL_LABELS = (200,)
SHARES = (0.85, 1.0)  # alpha as a share of the judge's disagreement over the dataset


def problem(dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Each response's confidence and whether the judge disagrees on it."""
    low, high = dataset.scale
    tolerance = 2 * (high - low) / 9
    confidence = -np.abs(dataset.judge - dataset.second)
    disagrees = np.abs(dataset.judge - dataset.gold) > tolerance + 1e-9
    return confidence, disagrees


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics import deferral

    rng = np.random.default_rng(settings.seed)
    confidence, disagrees = problem(dataset)
    by_cluster = [np.flatnonzero(dataset.cluster == c) for c in range(len(dataset.clusters))]
    designs: list[tuple[str, str, object]] = []
    for n in SMALL_LABELS if settings.small else LABELS:
        if n < len(confidence):
            designs.append(("independent labels", f"{n} responses", n))
    for k in cluster_counts(dataset, settings.small):
        designs.append(("labels by meeting", f"{k} clusters", k))
    out: list[Row] = []
    for (design, setting, size), share in itertools.product(designs, SHARES):
        alpha = round(share * float(disagrees.mean()), 3)
        held = np.ones(settings.replays)
        share_kept = np.full(settings.replays, np.nan)
        for r in range(settings.replays):
            if design == "independent labels":
                drawn = rng.integers(0, len(confidence), int(size))  # type: ignore[call-overload]
            else:
                clusters = rng.integers(0, len(by_cluster), int(size))  # type: ignore[call-overload]
                drawn = np.concatenate([by_cluster[c] for c in clusters])
                # a cluster drawn twice is two meetings of the study
                codes = np.repeat(np.arange(len(clusters)), [len(by_cluster[c]) for c in clusters])
            chosen = deferral.choose_threshold(
                confidence[drawn],
                disagrees[drawn],
                alpha,
                DELTA,
                clusters=None if design == "independent labels" else codes,
            )
            keep = deferral.kept(confidence, chosen.threshold)
            if not keep.any():
                continue  # it defers every response: the promise holds
            held[r] = disagrees[keep].mean() <= alpha + 1e-12
            share_kept[r] = keep.mean()
        given = np.isfinite(share_kept)
        out.append(
            Row(
                "deferral",
                f"deferral guarantee ({design})",
                dataset.name,
                f"{setting}, alpha {alpha:g}",
                settings.replays,
                float(held.mean()),
                width=float(np.nanmean(share_kept)) if given.any() else None,
                note=f"kept some responses in {given.mean():.0%} of the replays; width: the "
                "mean share of the population kept when it kept some",
                promise=f"disagreement <= alpha with probability {1 - DELTA:g}",
            )
        )
    return out
