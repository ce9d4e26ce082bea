"""PPI's intervals, replayed: the report's system scores from a few labels
(analysis.ppi), both designs.

- `sample`: n labels per system drawn at random from an all-gold selection
  (the report's `ppi_labelled`); the truth is each system's mean gold score
  over the pool (what `ppi_covers_all_gold` compares with).
- `weighted`: a labelled set drawn as "Select items for humans" draws it
  (analysis.items_for_humans: probabilities from the two judges'
  disagreement with the uniform floor, systematic PPS), n per system on
  average; each picked item gets one human label (a rater at random; the
  gold evaluator's score where the dataset has one rater), and the truth is
  each system's mean expected label over the pool.

Both read the normal interval (`ppi_ci95`) and the meeting-clustered one
(`ppi_clustered_ci95`), exactly as the report gives them, through the
report's own functions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings

SIZES = (5, 10, 20, 40)
SMALL_SIZES = (10, 40)


def _reduce(
    covered: np.ndarray, widths: np.ndarray
) -> tuple[float | None, float | None, float, float | None]:
    """(worst system's coverage, all at once, reported share, mean width) from
    replays x systems arrays, NaN where not reported."""
    reported = np.isfinite(covered)
    if not reported.any():
        return None, None, 0.0, None
    per_system = [
        float(np.nanmean(covered[:, s])) for s in range(covered.shape[1]) if reported[:, s].any()
    ]
    every = reported.all(axis=1)
    together = float(covered[every].all(axis=1).mean()) if every.any() else None
    return min(per_system), together, float(reported.mean()), float(np.nanmean(widths))


def _boot(dataset: Dataset, settings: Settings, seed: int):
    from analysis.bootstrap import ClusterBootstrap

    return ClusterBootstrap(dataset.cluster, len(dataset.clusters), settings.resamples, seed)


def sample_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis import ppi

    if np.ptp(dataset.judge) == 0 and not settings.small:
        pass  # a constant judge is still replayed: PPI must fall back on the labels
    rng = np.random.default_rng(settings.seed)
    truth = dataset.truth(dataset.gold)
    systems = len(dataset.systems)
    rows = []
    for n in SMALL_SIZES if settings.small else SIZES:
        covered = {k: np.full((settings.replays, systems), np.nan) for k in ("normal", "clustered")}
        widths = {k: np.full((settings.replays, systems), np.nan) for k in ("normal", "clustered")}
        for r in range(settings.replays):
            labelled = np.zeros(dataset.size, bool)
            for s in range(systems):
                items = dataset.items_of(s)
                labelled[rng.choice(items, min(n, len(items) // 2), replace=False)] = True
            found = ppi.system_scores(
                _boot(dataset, settings, int(rng.integers(2**31))),
                dataset.gold,
                dataset.judge,
                labelled,
                dataset.system,
                dataset.systems,
            )["systems"]
            for s, name in enumerate(dataset.systems):
                entry = found[name]
                for kind, key in (("normal", "ppi_ci95"), ("clustered", "ppi_clustered_ci95")):
                    ci = entry.get(key) if entry.get("computable", True) else None
                    if ci and ci[0] is not None:
                        covered[kind][r, s] = ci[0] <= truth[s] <= ci[1]
                        widths[kind][r, s] = ci[1] - ci[0]
        for kind, label in (
            ("normal", "PPI++ interval"),
            ("clustered", "PPI++ clustered interval"),
        ):
            worst, together, reported, width = _reduce(covered[kind], widths[kind])
            rows.append(
                Row(
                    "ppi",
                    f"{label} (random labels)",
                    dataset.name,
                    f"{n} labels/system",
                    settings.replays,
                    worst,
                    together,
                    width,
                    reported,
                )
            )
    return rows


def weighted_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis import ppi
    from analysis.items_for_humans import inclusion_probabilities, systematic_pps

    rng = np.random.default_rng(settings.seed + 1)
    single_rater = dataset.raters.shape[1] == 1
    truth = dataset.truth()
    systems = len(dataset.systems)
    spread = pd.Series(np.abs(dataset.judge - dataset.second) / 2)  # std of two judges, ddof 0
    rows = []
    for n in SMALL_SIZES if settings.small else SIZES:
        probability = inclusion_probabilities(spread, count=n * systems).to_numpy()
        covered = {k: np.full((settings.replays, systems), np.nan) for k in ("normal", "clustered")}
        widths = {k: np.full((settings.replays, systems), np.nan) for k in ("normal", "clustered")}
        for r in range(settings.replays):
            picked = np.array(
                systematic_pps(pd.Series(probability), int(rng.integers(2**31))), dtype=int
            )
            labelled = np.zeros(dataset.size, bool)
            labelled[picked] = True
            labels = np.full(dataset.size, np.nan)
            labels[picked] = dataset.gold[picked] if single_rater else dataset.label(picked, rng)
            found = ppi.weighted_system_scores(
                _boot(dataset, settings, int(rng.integers(2**31))),
                labels,
                dataset.judge,
                labelled,
                probability,
                dataset.system,
                dataset.systems,
            )["systems"]
            for s, name in enumerate(dataset.systems):
                entry = found[name]
                for kind, key in (("normal", "ppi_ci95"), ("clustered", "ppi_clustered_ci95")):
                    ci = entry.get(key) if entry.get("computable", True) else None
                    if ci and ci[0] is not None:
                        covered[kind][r, s] = ci[0] <= truth[s] <= ci[1]
                        widths[kind][r, s] = ci[1] - ci[0]
        for kind, label in (
            ("normal", "weighted PPI interval"),
            ("clustered", "weighted PPI clustered interval"),
        ):
            worst, together, reported, width = _reduce(covered[kind], widths[kind])
            rows.append(
                Row(
                    "ppi",
                    f"{label} (disagreement selection)",
                    dataset.name,
                    f"{n} labels/system",
                    settings.replays,
                    worst,
                    together,
                    width,
                    reported,
                )
            )
    return rows
