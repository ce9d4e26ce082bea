"""Bradley-Terry ratings, their simultaneous differences and rank-sets
(analysis.statistics.bradley_terry), replayed as the report builds them.

A dataset's scores become battles as the report makes them
(`battles_from_scores`: on each question, every two systems meet and the
higher score wins, equal scores tie), once for the reference (gold) and once
for the judge. The estimand is the population of clusters, as in
rows_bootstrap: a replay is a study of K clusters drawn with replacement from
the dataset's, and the truth is the Bradley-Terry fit of the whole pool's
battles (the value a study of ever more clusters converges to).

Rows, per K and per side (gold, judge):
- "BT ratings (simultaneous)": every system's interval holds the pool's
  rating at once (the promise); the worst system's own coverage beside it;
- "BT differences (simultaneous)": every difference of two systems' ratings
  inside its interval at once, the promise of the max-t intervals;
- "BT rank-sets (simultaneous)": every system's rank-set holds its rank in
  the pool at once (a rank the pool's tie allows counts).
A replay without finite ratings (a system that won, or lost, every
comparison in the clusters drawn) reports nothing, as the report would.
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts

SIDES = ("gold", "judge")


def rank_range(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each system's ranks in the pool by `theta` (higher first): (best,
    worst), equal unless it ties."""
    above = (theta[None, :] > theta[:, None] + 1e-12).sum(axis=1)
    level = (np.abs(theta[None, :] - theta[:, None]) <= 1e-12).sum(axis=1)
    return 1 + above, above + level


class Battles:
    """One side's battles, grouped by cluster, and the pool's truth."""

    def __init__(self, dataset: Dataset, values: np.ndarray) -> None:
        from analysis.statistics import bradley_terry as bt

        first, second, outcome, cluster = bt.battles_from_scores(
            dataset.system, dataset.question, dataset.cluster, values
        )
        self.k = len(dataset.systems)
        self.by_cluster = [np.flatnonzero(cluster == c) for c in range(len(dataset.clusters))]
        self.first, self.second, self.outcome = first, second, outcome
        wins = bt.win_matrices(first, second, outcome, np.zeros(len(first), int), self.k, 1)
        self.theta = bt.fit(wins.sum(axis=0))
        self.rating = bt.elo(self.theta)

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.theta).all())

    def rank_range(self) -> tuple[np.ndarray, np.ndarray]:
        return rank_range(self.theta)

    def replay(self, drawn: np.ndarray, resamples: int, seed: int) -> dict:
        from analysis.statistics import bradley_terry as bt
        from analysis.statistics.bootstrap import ClusterBootstrap

        rows = [self.by_cluster[c] for c in drawn]
        index = np.concatenate(rows) if rows else np.array([], int)
        codes = np.repeat(np.arange(len(drawn)), [len(r) for r in rows])
        boot = ClusterBootstrap(codes, len(drawn), resamples, seed)
        names = [str(s) for s in range(self.k)]
        return bt.bradley_terry(
            self.first[index], self.second[index], self.outcome[index], codes, names, boot
        )


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    rng = np.random.default_rng(settings.seed)
    out: list[Row] = []
    sides = {"gold": Battles(dataset, dataset.gold), "judge": Battles(dataset, dataset.judge)}
    for k in cluster_counts(dataset, settings.small):
        setting = f"{k} clusters" + (" (all)" if k == len(dataset.clusters) else "")
        for side, battles in sides.items():
            if not battles.finite:
                continue
            best, worst = battles.rank_range()
            held = np.full((settings.replays, battles.k), np.nan)
            width = np.full(settings.replays, np.nan)
            differences = np.full(settings.replays, np.nan)
            ranks = np.full(settings.replays, np.nan)
            set_sizes = np.full(settings.replays, np.nan)
            notes: set[str] = set()
            for r in range(settings.replays):
                drawn = rng.integers(0, len(dataset.clusters), k)
                found = battles.replay(drawn, settings.resamples, int(rng.integers(2**31)))
                if not found.get("computable", True):
                    notes.add(found["reason"].split(":")[0])
                    continue
                if found.get("ci_note"):
                    notes.add(found["ci_note"])
                    continue
                by_system = {int(s["system"]): s for s in found["systems"]}
                low = np.array([by_system[s]["ci95"][0] for s in range(battles.k)])
                high = np.array([by_system[s]["ci95"][1] for s in range(battles.k)])
                held[r] = (low - 1e-9 <= battles.rating) & (battles.rating <= high + 1e-9)
                width[r] = float(np.mean(high - low))
                truth = 400 / np.log(10) * (battles.theta[:, None] - battles.theta[None, :])
                differences[r] = all(
                    d["ci95"][0] - 1e-9
                    <= truth[int(d["system"]), int(d["other"])]
                    <= d["ci95"][1] + 1e-9
                    for d in found["differences"]
                )
                sets = np.array([by_system[s]["rank_set"] for s in range(battles.k)])
                # the rank-set holds a rank the pool allows: the two ranges meet
                ranks[r] = bool(((sets[:, 0] <= worst) & (sets[:, 1] >= best)).all())
                set_sizes[r] = float(np.mean(sets[:, 1] - sets[:, 0] + 1))
            reported = np.isfinite(held).all(axis=1)
            note = "; ".join(sorted(notes))[:300]
            worst_system = (
                float(np.nanmean(held[reported], axis=0).min()) if reported.any() else None
            )
            all_at_once = float(held[reported].all(axis=1).mean()) if reported.any() else None
            share = float(reported.mean())
            out.append(
                Row(
                    "bradley-terry",
                    f"BT ratings (simultaneous) ({side})",
                    dataset.name,
                    setting,
                    settings.replays,
                    worst_system,
                    coverage_all=all_at_once,
                    simultaneous=True,
                    promise="95% for all at once",
                    # the median: a replay whose jackknife has no spread has an unbounded interval
                    width=float(np.nanmedian(width)) if reported.any() else None,
                    reported=share,
                    note=note,
                )
            )
            for name, values, size in (
                ("BT differences (simultaneous)", differences, None),
                ("BT rank-sets (simultaneous)", ranks, set_sizes),
            ):
                given = np.isfinite(values)
                out.append(
                    Row(
                        "bradley-terry",
                        f"{name} ({side})",
                        dataset.name,
                        setting,
                        settings.replays,
                        float(values[given].mean()) if given.any() else None,
                        coverage_all=float(values[given].mean()) if given.any() else None,
                        simultaneous=True,
                        # rank-sets: the mean number of ranks a set holds
                        width=float(np.nanmean(size)) if size is not None and given.any() else None,
                        reported=float(given.mean()),
                        promise="95% for all at once",
                        note=note,
                    )
                )
    return out
