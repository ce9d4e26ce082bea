"""PPI's intervals, replayed: the report's system scores from a few labels
(analysis.statistics.ppi), both designs, through the report's own functions.

- `sample`: n labels per system drawn at random from an all-gold selection
  (the report's `ppi_labelled`, at most half of a system's responses); the
  truth is each system's mean gold score over the pool (what
  `ppi_covers_all_gold` compares with).
- `weighted`: a labelled set drawn as "Select items for humans" draws it
  (analysis.planning.items_for_humans: probabilities from the two judges'
  disagreement with the uniform floor, systematic PPS), n per system on
  average; each picked item gets one human label (a rater at random; the
  gold where the dataset has one rater), and the truth is each system's mean
  expected label over the pool.

Per design: the PPI++ (or weighted) interval and the labels-only one, each
system's own (worst system; all at once is shown, not promised), and the
rank intervals (every system's true rank inside its interval at once: that
is their promise).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings

SIZES = (5, 10, 20, 40)
SMALL_SIZES = (5, 20)
KINDS = (
    ("ppi", "ppi_ci95", "ppi_mean"),
    ("labels only", "gold_ci95", "gold_mean"),
)


class Tally:
    """Replays x systems: covered (1/0) or NaN where no interval was reported."""

    def __init__(self, replays: int, systems: int) -> None:
        self.covered = {k: np.full((replays, systems), np.nan) for k, _, _ in KINDS}
        self.widths = {k: np.full((replays, systems), np.nan) for k, _, _ in KINDS}
        self.ranks = {k: np.full(replays, np.nan) for k in ("ppi", "gold_only")}

    def add(self, r: int, found: dict, names: list[str], truth: np.ndarray) -> None:
        for s, name in enumerate(names):
            entry = found["systems"][name]
            if entry.get("computable", True) is False:
                continue
            for kind, key, _ in KINDS:
                low, high = entry[key]
                self.covered[kind][r, s] = low <= truth[s] <= high
                self.widths[kind][r, s] = high - low
        ranking = found["ranking"]
        if ranking.get("computable", True) is False:
            return
        for key in ("ppi", "gold_only"):
            # ranks among the systems ranked (those with an interval)
            ranked = [e["system"] for e in ranking[key]]
            values = np.array([truth[names.index(n)] for n in ranked])
            true_rank = {n: i + 1 for i, n in enumerate(np.array(ranked)[np.argsort(-values)])}
            self.ranks[key][r] = all(
                e["rank_ci95"][0] <= true_rank[e["system"]] <= e["rank_ci95"][1]
                for e in ranking[key]
            )

    def rows(self, statistic: str, dataset: str, setting: str, replays: int) -> list[Row]:
        out = []
        for kind, _, _ in KINDS:
            covered, widths = self.covered[kind], self.widths[kind]
            reported = np.isfinite(covered)
            if reported.any():
                per_system = [
                    float(np.nanmean(covered[:, s]))
                    for s in range(covered.shape[1])
                    if reported[:, s].any()
                ]
                every = reported.all(axis=1)
                together = float(covered[every].all(axis=1).mean()) if every.any() else None
                worst, width = min(per_system), float(np.nanmean(widths))
            else:
                worst = together = width = None
            out.append(
                Row(
                    "ppi",
                    f"{statistic}: {kind}",
                    dataset,
                    setting,
                    replays,
                    worst,
                    together,
                    width=width,
                    reported=float(reported.mean()),
                )
            )
        for key, label in (("ppi", "ppi"), ("gold_only", "labels only")):
            ranks = self.ranks[key]
            done = np.isfinite(ranks)
            out.append(
                Row(
                    "ppi",
                    f"{statistic}: rank intervals, {label}",
                    dataset,
                    setting,
                    replays,
                    float(ranks[done].mean()) if done.any() else None,
                    reported=float(done.mean()),
                    promise="every system's rank at once, 95%",
                )
            )
        return out


def _boot(dataset: Dataset):
    from analysis.statistics.bootstrap import ClusterBootstrap

    # the PPI functions read only the responses' meetings from it
    return ClusterBootstrap(dataset.cluster, len(dataset.clusters), 0)


def sample_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.statistics import ppi

    if dataset.extra.get("gold_as") is not None:
        return []  # the same gold as another dataset: the same rows
    rng = np.random.default_rng(settings.seed)
    truth = dataset.truth(dataset.gold)
    rows = []
    for n in SMALL_SIZES if settings.small else SIZES:
        tally = Tally(settings.replays, len(dataset.systems))
        for r in range(settings.replays):
            labelled = np.zeros(dataset.size, bool)
            for s in range(len(dataset.systems)):
                items = dataset.items_of(s)
                labelled[rng.choice(items, min(n, len(items) // 2), replace=False)] = True
            found = ppi.system_scores(
                _boot(dataset),
                dataset.gold,
                dataset.judge,
                labelled,
                dataset.system,
                dataset.systems,
                scale=dataset.scale,
            )
            tally.add(r, found, dataset.systems, truth)
        rows += tally.rows(
            "PPI++ (random labels)", dataset.name, f"{n} labels/system", settings.replays
        )
    return rows


def weighted_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.planning.items_for_humans import inclusion_probabilities, systematic_pps
    from analysis.statistics import ppi

    rng = np.random.default_rng(settings.seed + 1)
    single_rater = dataset.raters.shape[1] == 1
    truth = dataset.truth()
    systems = len(dataset.systems)
    spread = pd.Series(np.abs(dataset.judge - dataset.second) / 2)  # std of two judges, ddof 0
    rows = []
    for n in SMALL_SIZES if settings.small else SIZES:
        count = min(n * systems, int(0.9 * dataset.size))
        probability = inclusion_probabilities(spread, count=count).to_numpy()
        tally = Tally(settings.replays, systems)
        for r in range(settings.replays):
            picked = np.array(
                systematic_pps(pd.Series(probability), int(rng.integers(2**31))), dtype=int
            )
            labelled = np.zeros(dataset.size, bool)
            labelled[picked] = True
            labels = np.full(dataset.size, np.nan)
            labels[picked] = dataset.gold[picked] if single_rater else dataset.label(picked, rng)
            found = ppi.weighted_system_scores(
                _boot(dataset),
                labels,
                dataset.judge,
                labelled,
                probability,
                dataset.system,
                dataset.systems,
                scale=dataset.scale,
            )
            tally.add(r, found, dataset.systems, truth)
        rows += tally.rows(
            "weighted PPI (disagreement selection)",
            dataset.name,
            f"{n} labels/system",
            settings.replays,
        )
    return rows
