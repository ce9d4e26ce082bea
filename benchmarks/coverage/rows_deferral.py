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

"Deferral at the boundary" rows choose alpha a hair below the population's
disagreement at one of the most confident thresholds: a threshold whose test
passes there breaks the promise, so these rows measure each test's level
where it is hardest. (With alpha at shares of the overall disagreement, the
earlier design-effect test held everywhere, but at the boundary it passed up
to 11% of the time.)

The same rows for a panel of two pairwise judges, "pairwise" in the
statistic's name (analysis.report.pairwise_deferral): every two systems' answers to one question
make a pair; the humans' outcome is the sign of the gold difference (equal:
a tie), each judge's the sign of its own; the panel of the two judges gives
their outcome where they agree and a tie where not, and its spread is the
share of its members whose outcome differs from the panel's (0, 0.5 or 1). A
pair belongs to its question's cluster; "responses" in a setting are pairs.
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
BOUNDARY_LEVELS = 3
SMALL_BOUNDARY_LEVELS = 1  # the CI mode: the most confident threshold's boundary


def problem(dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Each response's confidence and whether the judge disagrees on it."""
    low, high = dataset.scale
    tolerance = 2 * (high - low) / 9
    confidence = -np.abs(dataset.judge - dataset.second)
    disagrees = np.abs(dataset.judge - dataset.gold) > tolerance + 1e-9
    return confidence, disagrees


def pairs_of(dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Every two items of one question from different systems: (first, second)."""
    firsts, seconds = [], []
    question = np.asarray(dataset.question)
    order = np.argsort(question, kind="stable")
    bounds = np.flatnonzero(np.diff(question[order])) + 1
    for items in np.split(order, bounds):
        a, b = np.triu_indices(len(items), k=1)
        different = dataset.system[items[a]] != dataset.system[items[b]]
        firsts.append(items[a][different])
        seconds.append(items[b][different])
    return np.concatenate(firsts), np.concatenate(seconds)


def pairwise_problem(dataset: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each pair's confidence (minus the panel's dissent), whether the panel's
    outcome differs from the humans', and the pair's cluster."""
    first, second = pairs_of(dataset)
    human = np.sign(dataset.gold[first] - dataset.gold[second])
    one = np.sign(dataset.judge[first] - dataset.judge[second])
    two = np.sign(dataset.second[first] - dataset.second[second])
    panel = np.where(one == two, one, 0)
    dissent = ((one != panel).astype(float) + (two != panel)) / 2
    return -dissent, panel != human, dataset.cluster[first]


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    confidence, disagrees = problem(dataset)
    scored = guarantee_rows(dataset, settings, confidence, disagrees, dataset.cluster, "")
    confidence, disagrees, cluster = pairwise_problem(dataset)
    return scored + guarantee_rows(dataset, settings, confidence, disagrees, cluster, "pairwise ")


def targets(
    confidence: np.ndarray, disagrees: np.ndarray, boundaries: int = BOUNDARY_LEVELS
) -> list[tuple[str, float, str]]:
    """(statistic's words, alpha, its description): alpha at SHARES of the
    judge's disagreement, and at the boundary of the `boundaries` most
    confident thresholds that keep 10% or more: a hair (1e-9) below the
    population's disagreement there, so that keeping that threshold breaks
    the promise, and its test should pass at most delta of the time."""
    out = [("deferral guarantee", round(s * float(disagrees.mean()), 3), "") for s in SHARES]
    levels = 0
    for level in np.unique(confidence)[::-1]:
        keep = confidence >= level
        rate = float(disagrees[keep].mean())
        if keep.mean() < 0.1 or not 0.02 <= rate <= 0.98:
            continue
        out.append(("deferral at the boundary", rate - 1e-9, f", keeping {keep.mean():.0%}"))
        levels += 1
        if levels == boundaries:
            break
    return out


def guarantee_rows(
    dataset: Dataset,
    settings: Settings,
    confidence: np.ndarray,
    disagrees: np.ndarray,
    cluster: np.ndarray,
    kind: str,
) -> list[Row]:
    from analysis.statistics import deferral

    rng = np.random.default_rng(settings.seed)
    by_cluster = [np.flatnonzero(cluster == c) for c in range(len(dataset.clusters))]
    designs: list[tuple[str, str, object]] = []
    for n in SMALL_LABELS if settings.small else LABELS:
        if n < len(confidence):
            designs.append(("independent labels", f"{n} {'pairs' if kind else 'responses'}", n))
    for k in cluster_counts(dataset, settings.small):
        designs.append(("labels by meeting", f"{k} clusters", k))
    out: list[Row] = []
    for (design, setting, size), (words, alpha, where) in itertools.product(
        designs,
        targets(
            confidence,
            disagrees,
            SMALL_BOUNDARY_LEVELS if settings.small else BOUNDARY_LEVELS,
        ),
    ):
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
                f"{words}, {kind}({design})" if kind else f"{words} ({design})",
                dataset.name,
                f"{setting}, alpha {alpha:.3g}{where}",
                settings.replays,
                float(held.mean()),
                width=float(np.nanmean(share_kept)) if given.any() else None,
                note=f"kept some responses in {given.mean():.0%} of the replays; width: the "
                "mean share of the population kept when it kept some",
                promise=f"disagreement <= alpha with probability {1 - DELTA:g}",
            )
        )
    return out
