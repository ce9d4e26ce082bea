"""The judge-trust section's intervals and decisions, replayed: Pearson r
between a judge and the reference, Kendall's tau-b between their system
rankings, and the verdicts read from them (analysis.statistics.bootstrap,
analysis.report.verdicts), exactly as the report builds them.

The estimand is the population of clusters (meetings, articles, questions):
a dataset's clusters are taken as that population, and a replay is a study
of K clusters drawn from it with replacement (a cluster drawn twice is two
clusters, as two meetings of the population would be). K is the dataset's
own number of clusters and, where it has more, fewer (5, 6, 8, 12, 20). The
replay's items are its clusters' items, judge against gold; the report's own
functions give the statistic, its interval and its verdict, from
`settings.resamples` bootstrap resamples of the replay's K clusters.

The truth is the pool's: r over all its items; tau between the pool's
system means of judge and gold (over the systems the replay ranks); whether
the pool's judge and gold put the same system on top.

Rows: each interval's coverage, over the replays where one was given (below
its condition the report gives none, and the row says how often it did). Each
decision is a verdict the report reads from an interval; "not settled"
promises nothing, so a replay breaks the promise only when its verdict is
settled and false, and the row is the share of replays that kept it (the
settled share and how often a settled verdict was true are in `extra`):
- the correlation's word ("tracks closely": the pool's r >= 0.7; "only
  moderately": in [0.5, 0.7); "does not track": below 0.5);
- the ranking's verdict ("same": the pool's rankings agree, tau 1;
  "different": they do not);
- "same top": the report's top agreement with the share of resamples that
  agree, read as settled when that share reaches TOP_SHARE.
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings

SIZES = (5, 6, 8, 12, 20)
SMALL_SIZES = (5, 8)
TOP_SHARE = 0.95
RIGHT_WORD = {
    "close": lambda r: r >= 0.7,
    "moderate": lambda r: 0.5 <= r < 0.7,
    "weak": lambda r: r < 0.5,
}


def cluster_counts(dataset: Dataset, small: bool) -> list[int]:
    """The Ks replayed: the dataset's own number of clusters and the smaller
    sizes below it."""
    own = len(dataset.clusters)
    return [k for k in (SMALL_SIZES if small else SIZES) if k < own] + [own]


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    both = np.isfinite(x) & np.isfinite(y)
    x, y = x[both], y[both]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    from analysis.statistics.bootstrap import kendall_tau_b

    return float(kendall_tau_b(a[None, :], b[None, :])[0])


def _top(means: np.ndarray) -> int | None:
    """The system on top, None when the highest means tie."""
    from analysis.statistics.bootstrap import tied_top

    return None if tied_top(means) else int(np.argmax(means))


class Pool:
    """What a replay is checked against: the whole dataset's statistics."""

    def __init__(self, dataset: Dataset) -> None:
        judge, gold = dataset.judge, dataset.gold
        self.r = _pearson(judge, gold)
        both = np.isfinite(judge) & np.isfinite(gold)
        self.judge_means = np.array(
            [judge[both & (dataset.system == s)].mean() for s in range(len(dataset.systems))]
        )
        self.gold_means = np.array(
            [gold[both & (dataset.system == s)].mean() for s in range(len(dataset.systems))]
        )

    def tau(self, ranked: list[int]) -> float:
        return _tau(self.judge_means[ranked], self.gold_means[ranked])

    def same_top(self, ranked: list[int]) -> bool | None:
        judge, gold = _top(self.judge_means[ranked]), _top(self.gold_means[ranked])
        return None if judge is None or gold is None else judge == gold


def replay(
    dataset: Dataset, members: list[np.ndarray], k: int, resamples: int, rng: np.random.Generator
) -> tuple[dict, dict, list[int]]:
    """One study of k clusters drawn with replacement: the report's
    correlation and ranking of judge against gold, and the systems ranked."""
    from analysis.statistics.bootstrap import (
        ClusterBootstrap,
        clustered_correlation,
        ranking_agreement,
    )

    drawn = rng.integers(0, len(members), k)
    items = np.concatenate([members[c] for c in drawn])
    codes = np.repeat(np.arange(k), [len(members[c]) for c in drawn])
    boot = ClusterBootstrap(codes, k, resamples, int(rng.integers(2**31)))
    judge, gold, system = dataset.judge[items], dataset.gold[items], dataset.system[items]
    correlation = clustered_correlation(boot, judge, gold)
    ranking = ranking_agreement(boot, judge, gold, system, dataset.systems)
    ranked = (
        sorted(dataset.systems.index(n) for n in ranking["judge_ranking"])
        if ranking.get("computable", True)
        else []
    )
    return correlation, ranking, ranked


def _interval(ci: object) -> tuple[float, float] | None:
    if not isinstance(ci, list) or ci[0] is None or ci[1] is None:
        return None
    return float(ci[0]), float(ci[1])


class Tally:
    """Per replay: whether an interval was given and held (or a verdict was
    given and kept its promise), and the interval's width."""

    def __init__(self, replays: int) -> None:
        self.held = np.full(replays, np.nan)
        self.width = np.full(replays, np.nan)
        self.settled = np.zeros(replays, bool)

    def interval(self, r: int, ci: tuple[float, float] | None, truth: float) -> None:
        if ci is not None and np.isfinite(truth):
            self.held[r] = ci[0] - 1e-9 <= truth <= ci[1] + 1e-9
            self.width[r] = ci[1] - ci[0]

    def verdict(self, r: int, settled: bool, true: bool) -> None:
        """A verdict given in replay r: it breaks its promise only when it is
        settled and false ("not settled" promises nothing)."""
        self.held[r] = true or not settled
        self.settled[r] = settled

    def row(self, statistic: str, dataset: Dataset, setting: str, promise: str, note="") -> Row:
        reported = np.isfinite(self.held)
        extra: dict = {}
        if promise != "95% interval" and reported.any():
            settled = self.settled & reported
            extra = {
                "settled": float(settled.mean()),
                "true_when_settled": float(self.held[settled].mean()) if settled.any() else None,
            }
        return Row(
            "bootstrap",
            statistic,
            dataset.name,
            setting,
            len(self.held),
            float(self.held[reported].mean()) if reported.any() else None,
            width=float(np.nanmean(self.width)) if np.isfinite(self.width).any() else None,
            reported=float(reported.mean()),
            promise=promise,
            note=note,
            extra=extra,
        )


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.report import verdicts

    rng = np.random.default_rng(settings.seed)
    pool = Pool(dataset)
    members = [np.flatnonzero(dataset.cluster == c) for c in range(len(dataset.clusters))]
    out: list[Row] = []
    for k in cluster_counts(dataset, settings.small):
        r_interval, tau_interval = Tally(settings.replays), Tally(settings.replays)
        word, rank_verdict, top = (Tally(settings.replays) for _ in range(3))
        refusals: set[str] = set()
        for r in range(settings.replays):
            correlation, ranking, ranked = replay(dataset, members, k, settings.resamples, rng)
            if correlation.get("computable", True):
                r_interval.interval(r, _interval(correlation["ci95"]), pool.r)
                said = verdicts.correlation_words(correlation, "gold")
                word.verdict(r, said["settled"], bool(RIGHT_WORD[said["verdict"]](pool.r)))
                if correlation.get("ci_note"):
                    refusals.add(correlation["ci_note"])
            else:
                refusals.add(correlation["reason"])
            if not ranking.get("computable", True):
                refusals.add(ranking["reason"])
                continue
            if ranking.get("ci_note"):
                refusals.add(ranking["ci_note"])
            truth_tau = pool.tau(ranked)
            tau_interval.interval(r, _interval(ranking["ci95"]), truth_tau)
            if ranking["kendall_tau"] is not None:
                said = verdicts.ranking_words(ranking, "gold")
                same = bool(np.isfinite(truth_tau) and truth_tau >= 1 - 1e-12)
                rank_verdict.verdict(r, said["settled"], same == (said["verdict"] == "same"))
            # "same top" with a share of resamples: read as settled at TOP_SHARE
            share = ranking["top_same_probability"]
            if ranking["top_same"] is not None:
                claimed = bool(ranking["top_same"]) and share is not None and share >= TOP_SHARE
                top.verdict(r, claimed, pool.same_top(ranked) is True)
        setting = f"{k} clusters" + (" (all)" if k == len(dataset.clusters) else "")
        note = "; ".join(sorted(refusals))[:300]
        out += [
            r_interval.row("Pearson r interval", dataset, setting, "95% interval", note),
            tau_interval.row("Kendall tau interval", dataset, setting, "95% interval", note),
            word.row("correlation verdict", dataset, setting, "a settled verdict is true"),
            rank_verdict.row("ranking verdict", dataset, setting, "a settled verdict is true"),
            top.row(
                f"same top (share >= {TOP_SHARE:g})",
                dataset,
                setting,
                f"same top in >= {TOP_SHARE:g} of resamples is true",
            ),
        ]
    return out
