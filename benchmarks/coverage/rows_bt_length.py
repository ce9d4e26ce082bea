"""Length-controlled Bradley-Terry (analysis.statistics.style_control through
bradley_terry's `features`), replayed as the report builds it: the battles of
rows_bradley_terry, each with FastChat's length feature (the two answers'
length difference over their sum, scaled over the study's battles).

Answer lengths: the paper's real ones (characters); elsewhere, where the
datasets carry no text, drawn once per dataset from a log-normal whose
log-mean rises with the item's gold score (0.25 per standard deviation:
longer answers are the better ones, the confound style control removes) and
seeded by the dataset's name. The truth is the controlled fit of the whole
pool's battles (its ratings, differences and the length weight); a study
of K meetings drawn with replacement scales the feature on its own
battles, as the report does, so the truth's weight is read per study on
the study's scale.

Rows, per K and per side (gold, judge): "BT length-controlled ratings
(simultaneous)", "... differences (simultaneous)", "... rank-sets
(simultaneous)" (the promises, all at once), and "BT length weight" (the
weight's own 95% interval).
"""

from __future__ import annotations

import zlib

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bootstrap import cluster_counts
from benchmarks.coverage.rows_bradley_terry import rank_range

SIDES = ("gold", "judge")
# The CI mode replays this family twice as often as the others: its intervals sit
# near 95% (0.95-0.96 over 1,000 replays), and at 60 replays a window of unlucky
# draws fell under the allowance for the plain intervals too (0.867 on the same draws)
SMALL_MODE_FACTOR = 2


def lengths(dataset: Dataset) -> np.ndarray:
    """The dataset's answer lengths: real where it has them, else drawn."""
    if "length" in dataset.extra:
        return np.asarray(dataset.extra["length"], float)
    rng = np.random.default_rng(zlib.crc32(dataset.name.encode()))
    gold = dataset.gold
    z = (gold - gold.mean()) / (gold.std() or 1.0)
    return np.round(np.exp(6.0 + 0.25 * z + 0.5 * rng.normal(size=len(gold))))


class Pool:
    """One side's battles with the answers' lengths, grouped by cluster."""

    def __init__(self, dataset: Dataset, values: np.ndarray) -> None:
        from analysis.statistics import bradley_terry as bt
        from analysis.statistics import style_control as sc

        args = (dataset.system, dataset.question, dataset.cluster, values)
        self.first, self.second, self.outcome, self.cluster = bt.battles_from_scores(*args)
        self.len_first, self.len_second = sc.battle_values(
            dataset.system, dataset.question, values, lengths(dataset)
        )
        self.k = len(dataset.systems)
        self.by_cluster = [np.flatnonzero(self.cluster == c) for c in range(len(dataset.clusters))]
        # the truth: the pool's controlled fit, its weight per unit of the raw ratio
        ratio = (self.len_first - self.len_second) / (self.len_first + self.len_second + 1)
        self.ratio = ratio
        fitted = sc.fit(self.first, self.second, self.outcome, ratio[:, None], self.k)
        self.theta, self.weight_per_ratio = fitted[: self.k], float(fitted[self.k])

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.theta).all())

    def rank_range(self) -> tuple[np.ndarray, np.ndarray]:
        return rank_range(self.theta)

    def replay(self, drawn: np.ndarray, resamples: int, seed: int) -> tuple[dict, float]:
        """One study's ranking, and the truth's weight on its feature's scale."""
        from analysis.statistics import bradley_terry as bt
        from analysis.statistics import style_control as sc
        from analysis.statistics.bootstrap import ClusterBootstrap

        rows = [self.by_cluster[c] for c in drawn]
        index = np.concatenate(rows)
        codes = np.repeat(np.arange(len(drawn)), [len(r) for r in rows])
        boot = ClusterBootstrap(codes, len(drawn), resamples, seed)
        feature = sc.length_feature(self.len_first[index], self.len_second[index])
        found = bt.bradley_terry(
            self.first[index],
            self.second[index],
            self.outcome[index],
            codes,
            [str(s) for s in range(self.k)],
            boot,
            features=feature[:, None],
            feature_names=["length"],
        )
        # the feature is the ratio standardised: a weight per unit of it is the
        # weight per ratio times the ratio's spread in the study
        return found, self.weight_per_ratio * float(np.sqrt(np.mean(self.ratio[index] ** 2)))


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    rng = np.random.default_rng(settings.seed)
    replays = settings.replays * (SMALL_MODE_FACTOR if settings.small else 1)
    out: list[Row] = []
    sides = {"gold": Pool(dataset, dataset.gold), "judge": Pool(dataset, dataset.judge)}
    for k in cluster_counts(dataset, settings.small):
        setting = f"{k} clusters" + (" (all)" if k == len(dataset.clusters) else "")
        for side, pool in sides.items():
            if not pool.finite:
                continue
            best, worst = pool.rank_range()
            kinds = ("ratings", "differences", "rank-sets", "weight")
            held = {kind: np.full(replays, np.nan) for kind in kinds}
            set_sizes = np.full(replays, np.nan)
            notes: set[str] = set()
            for r in range(replays):
                drawn = rng.integers(0, len(dataset.clusters), k)
                found, weight = pool.replay(drawn, settings.resamples, int(rng.integers(2**31)))
                if not found.get("computable", True) or found.get("ci_note"):
                    notes.add((found.get("reason") or found["ci_note"]).split(":")[0])
                    continue
                by_system = {int(s["system"]): s for s in found["systems"]}
                low = np.array([by_system[s]["ci95"][0] for s in range(pool.k)])
                high = np.array([by_system[s]["ci95"][1] for s in range(pool.k)])
                rating = 1000 + 400 / np.log(10) * pool.theta
                held["ratings"][r] = bool(((low - 1e-9 <= rating) & (rating <= high + 1e-9)).all())
                truth = 400 / np.log(10) * (pool.theta[:, None] - pool.theta[None, :])
                held["differences"][r] = all(
                    d["ci95"][0] - 1e-9
                    <= truth[int(d["system"]), int(d["other"])]
                    <= d["ci95"][1] + 1e-9
                    for d in found["differences"]
                )
                sets = np.array([by_system[s]["rank_set"] for s in range(pool.k)])
                held["rank-sets"][r] = bool(((sets[:, 0] <= worst) & (sets[:, 1] >= best)).all())
                set_sizes[r] = float(np.mean(sets[:, 1] - sets[:, 0] + 1))
                ci = found["covariates"][0]["ci95"]
                held["weight"][r] = ci[0] - 1e-9 <= weight <= ci[1] + 1e-9
            note = "; ".join(sorted(notes))[:300]
            for kind in kinds:
                values = held[kind]
                given = np.isfinite(values)
                coverage = float(values[given].mean()) if given.any() else None
                simultaneous = kind != "weight"
                out.append(
                    Row(
                        "bt-length",
                        f"BT length-controlled {kind}"
                        + (" (simultaneous)" if simultaneous else "")
                        + f" ({side})",
                        dataset.name,
                        setting,
                        replays,
                        coverage,
                        coverage_all=coverage if simultaneous else None,
                        simultaneous=simultaneous,
                        width=float(np.nanmean(set_sizes))
                        if kind == "rank-sets" and given.any()
                        else None,
                        reported=float(given.mean()),
                        promise="95% for all at once" if simultaneous else "95% interval",
                        note=note,
                    )
                )
    return out
