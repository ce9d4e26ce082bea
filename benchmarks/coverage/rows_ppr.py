"""Prediction-powered rank-sets (analysis.statistics.prediction_powered_ranking),
replayed as the report builds them.

A dataset's scores become battles as the report makes them (`battles_from_
scores`: on each question every two systems meet, the higher score wins),
once with the reference's (gold) scores, the humans' outcomes, and once with
the judge's, on the same questions. A replay is a study of all the dataset's
clusters drawn with replacement (the estimand is the population of clusters,
as in rows_bootstrap), every battle judged, and the human outcomes of L
questions drawn at random (the report's labelled sample); the truth is each
system's win rate over the whole pool's gold battles, and its rank there.

Rows, per L:
- "PPR rank-sets (simultaneous)": every system's rank-set holds its rank in
  the pool at once (a rank the pool's tie allows counts); width: the mean
  number of ranks a set holds;
- "humans-alone rank-sets (simultaneous)": the same with lambda = 0 (the
  labelled battles alone), beside it for the width the judge saves;
- "PPR rank-sets, the authors' chi-square rule": shown, not a promise: the
  same estimate and covariance with the authors' multiplier (the chi-square
  ellipsoid's projection) in place of the max-t, for the width it costs;
- "PPR rank-sets, the authors' covariance": shown, not a promise: the
  authors' Sigma (each part divided by all its battles squared, no
  clustering) with their multiplier, to show why Concord's departs from it;
- "... against a baseline": the first two again with the battles of the
  pairwise studies' design (every system against one baseline, here the
  system of the median pool win rate), as the report's rank-sets from
  pairwise verdicts make them (analysis.report.prediction_powered_pairwise).
A replay with fewer labelled clusters than clusters_needed reports nothing,
as the report would.
"""

from __future__ import annotations

import numpy as np

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings
from benchmarks.coverage.rows_bradley_terry import rank_range

LABELLED_QUESTIONS = (10, 20, 40, 80)
SMALL_LABELLED_QUESTIONS = (20,)


def labelled_counts(questions: int, small: bool) -> list[int]:
    """The Ls replayed: those below half the dataset's questions, and half."""
    half = questions // 2
    sizes = SMALL_LABELLED_QUESTIONS if small else LABELLED_QUESTIONS
    return sorted({size for size in sizes if size < half} | {half})


class Pool:
    """The dataset's battles (gold and judge on the same questions), grouped by
    cluster, and the truth: the pool's gold win rates and each system's ranks."""

    def __init__(self, dataset: Dataset, against_baseline: bool = False) -> None:
        from analysis.statistics import bradley_terry as bt
        from analysis.statistics import prediction_powered_ranking as ppr

        both = np.isfinite(dataset.gold) & np.isfinite(dataset.judge)
        system, asked = dataset.system[both], dataset.question[both]
        # the question as the battles' cluster, as the report makes them: each battle
        # then carries its question, and the question its cluster
        first, second, gold, question = bt.battles_from_scores(
            system, asked, asked, dataset.gold[both]
        )
        first_j, second_j, judge, _ = bt.battles_from_scores(
            system, asked, asked, dataset.judge[both]
        )
        if not (np.array_equal(first, first_j) and np.array_equal(second, second_j)):
            raise AssertionError("gold and judge battles must align")
        if against_baseline:
            # the pairwise studies' design: every system meets one baseline, the
            # system of the median win rate by all the gold battles
            rates = ppr.win_rates(first, second, gold, len(dataset.systems))
            self.baseline = int(np.argsort(rates, kind="stable")[len(rates) // 2])
            keep = (first == self.baseline) | (second == self.baseline)
            first, second, gold, judge = first[keep], second[keep], gold[keep], judge[keep]
            question = question[keep]
        cluster_of = dict(zip(asked.tolist(), dataset.cluster[both].tolist(), strict=True))
        cluster = np.array([cluster_of[q] for q in question.tolist()], int)
        self.k = len(dataset.systems)
        self.first, self.second, self.gold, self.judge = first, second, gold, judge
        self.question, self.cluster = question, cluster
        self.by_cluster = [np.flatnonzero(cluster == c) for c in range(len(dataset.clusters))]
        self.theta = ppr.win_rates(first, second, gold, self.k)
        self.best, self.worst = rank_range(self.theta)

    def replay(
        self,
        drawn: np.ndarray,
        labelled_questions: int,
        rng: np.random.Generator,
        authors: bool = True,
    ) -> dict:
        """One study: the drawn clusters' battles, L of its questions labelled."""
        from analysis.statistics import prediction_powered_ranking as ppr

        rows = [self.by_cluster[c] for c in drawn]
        index = np.concatenate(rows)
        copy = np.repeat(np.arange(len(drawn)), [len(r) for r in rows])
        # a question drawn twice (its cluster drawn twice) is two questions of the study
        _, study_question = np.unique(
            np.column_stack([copy, self.question[index]]), axis=0, return_inverse=True
        )
        study_question = study_question.ravel()
        questions = int(study_question.max()) + 1
        chosen = rng.choice(questions, size=min(labelled_questions, questions), replace=False)
        labelled = np.isin(study_question, chosen)
        first, second = self.first[index], self.second[index]
        gold, judge = self.gold[index], self.judge[index]
        found = ppr.ranking(
            first, second, gold, judge, labelled, copy, [str(s) for s in range(self.k)]
        )
        if not found.get("computable", True) or "ci_note" in found:
            return found
        lam = found["prediction_powered"]["lambda"]
        got = ppr.estimate(first, second, gold, judge, labelled, copy, self.k, lam=lam)
        found["chi_square"] = ppr.rank_sets(got.theta, got.covariance)  # the authors' rule
        if authors:
            found["authors"] = ppr.rank_sets(
                got.theta, authors_covariance(first, second, gold, judge, labelled, self.k, lam)
            )
        return found

    def covered(self, sets: np.ndarray) -> bool:
        """Every set meets its system's pool ranks."""
        return bool(((sets[:, 0] <= self.worst) & (sets[:, 1] >= self.best)).all())


def authors_covariance(first, second, human, judge, labelled, k, lam) -> np.ndarray:
    """The authors' Sigma: lambda^2 A A^T / N^2 + B B^T / n^2, one battle per
    row (Concord's per-battle influences times each system's battles)."""
    from analysis.statistics import prediction_powered_ranking as ppr

    out = np.zeros((k, k))
    for part, outcome, weight in (
        (~labelled, judge, lam),
        (labelled, None, 1.0),
    ):
        f, s = first[part], second[part]
        n = len(f)
        singles = np.arange(n)
        if outcome is None:  # the rectifier: human - lambda * judge
            influence = ppr.cluster_influence(f, s, human[part], singles, n, k)
            influence = influence - lam * ppr.cluster_influence(f, s, judge[part], singles, n, k)
        else:
            influence = weight * ppr.cluster_influence(f, s, outcome[part], singles, n, k)
        _, counts = ppr.points_by_system(f, s, np.zeros(n), k)
        out += (influence.T @ influence) * np.outer(counts, counts) / n**2
    return out


def rows(dataset: Dataset, settings: Settings) -> list[Row]:
    rng = np.random.default_rng(settings.seed)
    out: list[Row] = []
    for design, pool in (("", Pool(dataset)), (" against a baseline", Pool(dataset, True))):
        out += design_rows(dataset, settings, pool, design, rng)
    return out


def design_rows(
    dataset: Dataset, settings: Settings, pool: Pool, design: str, rng: np.random.Generator
) -> list[Row]:
    """The rows of one battle design: every two systems ("") or each against
    the baseline (" against a baseline", without the authors' covariance)."""
    authors = not design
    out: list[Row] = []
    questions = len(np.unique(pool.question))
    for size in labelled_counts(questions, settings.small):
        held: dict[str, list[float]] = {
            "prediction_powered": [],
            "humans_alone": [],
            "chi_square": [],
        }
        if authors:
            held["authors"] = []
        widths: dict[str, list[float]] = {name: [] for name in held}
        lambdas: list[float] = []
        notes: set[str] = set()
        for _ in range(settings.replays):
            drawn = rng.integers(0, len(dataset.clusters), len(dataset.clusters))
            found = pool.replay(drawn, size, rng, authors)
            if not found.get("computable", True) or "ci_note" in found:
                notes.add((found.get("reason") or found["ci_note"]).split(":")[0])
                for name in held:
                    held[name].append(np.nan)
                continue
            lambdas.append(found["prediction_powered"]["lambda"])
            for name in ("prediction_powered", "humans_alone"):
                by_system = {int(s["system"]): s for s in found[name]["systems"]}
                sets = np.array([by_system[s]["rank_set"] for s in range(pool.k)])
                held[name].append(float(pool.covered(sets)))
                widths[name].append(found[name]["mean_rank_set_size"])
            for name in ("chi_square", "authors"):
                if name in held:
                    sets = found[name]
                    held[name].append(float(pool.covered(sets)))
                    widths[name].append(float(np.mean(sets[:, 1] - sets[:, 0] + 1)))
        setting = f"{size} labelled questions of {questions}"
        note = "; ".join(sorted(notes))[:300]
        for name, statistic, judged in (
            ("prediction_powered", f"PPR rank-sets{design} (simultaneous)", True),
            ("humans_alone", f"humans-alone rank-sets{design} (simultaneous)", True),
            ("chi_square", f"PPR rank-sets{design}, the authors' chi-square rule", False),
            ("authors", "PPR rank-sets, the authors' covariance", False),
        ):
            if name not in held:
                continue
            values = np.array(held[name], float)
            given = np.isfinite(values)
            coverage = float(values[given].mean()) if given.any() else None
            out.append(
                Row(
                    "ppr",
                    statistic,
                    dataset.name,
                    setting,
                    settings.replays,
                    coverage,
                    coverage_all=coverage,
                    simultaneous=True,
                    # the mean number of ranks a set holds, of the systems' count
                    width=float(np.mean(widths[name])) if widths[name] else None,
                    reported=float(given.mean()),
                    promise="95% for all at once",
                    judged=judged,
                    note=note,
                    extra={"mean_lambda": float(np.mean(lambdas))} if lambdas else {},
                )
            )
    return out
