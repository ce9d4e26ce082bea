"""The human study's designs and the planner's choice, replayed (analysis.
study_plan: the fixed uniform design, the fixed design with the judge, the
adaptive waves with the anytime interval), and the confidence sequence
itself (analysis.statistics.anytime).

On each dataset the planner sees the judge's scores and, as the human
ratings "seen so far", the dataset's gold; it simulates each design and
chooses one, as an adaptive study does before anything is spent. Then every
design runs on the dataset's own human labels (one rater at random per
draw), replayed: its coverage at the stop (per system: the means goal
promises each system's interval), the ratings it paid against the fixed
uniform design on the same replay, and how often it answered. The planner's
choice is a row of its own: its coverage, and its cost against the uniform
design, which must be at most 1.

The ranking goal reads every system's interval together: a row counts the
replays whose intervals all cover, and the share of answered replays whose
ranking is wrong.

The confidence sequence of the adaptive design: the share of streams that
never miss at any time after the burn-in of 30 labels (the asymptotic
sequence promises it as labels grow; with its pseudo-observations it holds
from the burn-in on every dataset).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.coverage.datasets import Dataset
from benchmarks.coverage.harness import Row, Settings

WIDTH_SHARE = 0.07  # the means goal's half-width, as a share of the scale
SEND_RATE = 0.3


def _plan(dataset: Dataset, settings: Settings, goal, replays: int):
    """The probabilities an adaptive study would send with, and the plan it
    would make on this dataset, the gold standing for the ratings seen so far."""
    from analysis.planning.items_for_humans import inclusion_probabilities
    from analysis.planning.study_plan import Budget, plan

    probability = inclusion_probabilities(
        pd.Series(np.abs(dataset.judge - dataset.second) / 2), count=SEND_RATE * dataset.size
    ).to_numpy()
    planned = plan(
        dataset.judge,
        dataset.system,
        dataset.systems,
        dataset.gold,
        goal,
        Budget(pence=10**9, reward_pence=30, dropout=0.0),
        probability=probability,
        scale=dataset.scale,
        replays=20 if settings.small else replays,
        seed=settings.seed,
    )
    return probability, planned


def _setup(dataset: Dataset, settings: Settings):
    from analysis.planning.study_plan import Goal

    lo, hi = dataset.scale
    goal = Goal(width=WIDTH_SHARE * (hi - lo), max_draws=4000 if settings.small else 6000)
    probability, planned = _plan(dataset, settings, goal, 100)
    return goal, probability, planned


def _run(design, rng, dataset, goal, probability, first):
    from analysis.planning.study_plan import run_fixed, run_system

    def sample(item: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return dataset.label(item, rng)

    stops = []
    for s in range(len(dataset.systems)):
        rows = dataset.items_of(s)
        if design == "adaptive":
            stops.append(
                run_system(rng, rows, dataset.judge, probability, sample, goal, 0.0, dataset.scale)[
                    "sequence"
                ]
            )
        else:
            stops.append(
                run_fixed(
                    rng, design, rows, dataset.judge, sample, first[s], goal, 0.0, dataset.scale
                )
            )
    return stops


def means_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    from analysis.planning.study_plan import DESIGNS

    goal, probability, planned = _setup(dataset, settings)
    truth = dataset.truth()
    rng = np.random.default_rng(settings.seed + 7)
    # the fixed designs are quick and their intervals nominal, so they get the replays
    # that make a worst-of-16-systems coverage mean something; the adaptive design's
    # sequence is slow and conservative
    fixed = 20 if settings.small else 4 * settings.replays
    replays = {"uniform": fixed, "ppi": fixed, "adaptive": max(settings.replays // 5, 10)}
    covered: dict[str, list] = {d: [] for d in DESIGNS}
    paid: dict[str, list] = {d: [] for d in DESIGNS}
    answered: dict[str, list] = {d: [] for d in DESIGNS}
    for design in DESIGNS:
        first = planned.designs[design].first_wave
        for _ in range(replays[design]):
            stops = _run(design, rng, dataset, goal, probability, first)
            covered[design].append(
                [s.lower <= t <= s.upper for s, t in zip(stops, truth, strict=True)]
            )
            paid[design].append(sum(s.paid for s in stops))
            answered[design].append(all(s.stopped for s in stops))
    rows = []
    setting = f"+-{goal.width:.2f}, planner chose {planned.design}"
    for design in (*DESIGNS, "chosen"):
        d = planned.design if design == "chosen" else design
        hits = np.array(covered[d])
        rows.append(
            Row(
                "adaptive",
                f"means goal: {'the planner' + chr(39) + 's choice' if design == 'chosen' else d}",
                dataset.name,
                setting,
                replays[d],
                float(hits.mean(axis=0).min()),
                float(hits.all(axis=1).mean()),
                cost=float(np.median(paid[d]) / np.median(paid["uniform"])),
                cost_target=1.0 if design == "chosen" else None,
                extra={
                    "answered": float(np.mean(answered[d])),
                    "paid_median": float(np.median(paid[d])),
                    "coverage_pooled": float(hits.mean()),
                },
                note="cost: median ratings paid / the fixed uniform design's",
            )
        )
    return rows


def ranking_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    """The ranking goal as an adaptive study plans it: every system within
    half the smallest gap of the judge's means (at least 0.05), at
    1 - (1 - p) / K each (Bonferroni), p = 0.95."""
    from analysis.planning.study_plan import Goal

    systems = len(dataset.systems)
    means = sorted(dataset.truth(dataset.judge))
    gaps = [b - a for a, b in zip(means, means[1:], strict=False)]
    width = max(min(gaps) / 2, 0.05)  # as adaptive.planning.plan_width plans it
    goal = Goal(width=width, alpha=0.05 / systems, max_draws=4000 if settings.small else 6000)
    probability, planned = _plan(dataset, settings, goal, 60)
    truth = dataset.truth()
    order = list(np.argsort(-truth))
    rng = np.random.default_rng(settings.seed + 11)
    replays = max(settings.replays // 2, 10)
    together, wrong, claimed = [], [], []
    for _ in range(replays):
        stops = _run(
            planned.design,
            rng,
            dataset,
            goal,
            probability,
            planned.designs[planned.design].first_wave,
        )
        together.append(all(s.lower <= t <= s.upper for s, t in zip(stops, truth, strict=True)))
        ranked = sorted(range(systems), key=lambda i: -stops[i].mean)
        separated = all(
            stops[a].lower > stops[b].upper for a, b in zip(ranked, ranked[1:], strict=False)
        )
        claimed.append(separated)
        if separated:
            wrong.append(ranked != order)
    return [
        Row(
            "adaptive",
            "ranking goal: every interval at once",
            dataset.name,
            f"+-{width:.2f} at {0.05 / systems:.4f} each, planner chose {planned.design}",
            replays,
            float(np.mean(together)),
            float(np.mean(together)),
            simultaneous=True,
            extra={"claimed": float(np.mean(claimed))},
        ),
        Row(
            "adaptive",
            "ranking goal: claimed rankings that are right",
            dataset.name,
            f"+-{width:.2f}, planner chose {planned.design}",
            replays,
            float(1 - np.mean(wrong)) if wrong else None,
            reported=float(np.mean(claimed)),
            promise="a claimed ranking is right with probability >= 0.95",
        ),
    ]


def sequence_rows(dataset: Dataset, settings: Settings) -> list[Row]:
    """The adaptive design's confidence sequence on long streams of one
    system's active increments, with the study's defaults: never missing
    after the burn-in."""
    from analysis.planning.items_for_humans import inclusion_probabilities
    from analysis.statistics.anytime import active_increments, confidence_sequence, increment_ends

    probability = inclusion_probabilities(
        pd.Series(np.abs(dataset.judge - dataset.second) / 2), count=SEND_RATE * dataset.size
    ).to_numpy()
    truth = dataset.truth()
    rng = np.random.default_rng(settings.seed + 3)
    length = 1000 if settings.small else 3000
    replays = max(settings.replays // 5, 10)
    burn_in = 30
    never_missed = np.zeros((replays, len(truth)))
    for s in range(len(truth)):
        rows = dataset.items_of(s)
        ends = increment_ends(dataset.judge[rows], probability[rows], dataset.scale)
        for r in range(replays):
            item = rng.choice(rows, length)
            sent = rng.random(length) < probability[item]
            labels = np.where(sent, dataset.label(item, rng), np.nan)
            z, _ = active_increments(dataset.judge[item], labels, sent, probability[item])
            sequence = confidence_sequence(z, t_opt=800, scale=3.0, bounds=dataset.scale, pad=ends)
            start = int(np.argmax(np.cumsum(sent) >= burn_in))
            miss = (sequence.lower > truth[s]) | (sequence.upper < truth[s])
            never_missed[r, s] = not miss[start:].any()
    return [
        Row(
            "anytime",
            "confidence sequence: every time after 30 labels",
            dataset.name,
            f"{length} draws, send rate {SEND_RATE}",
            replays,
            float(never_missed.mean(axis=0).min()),
            promise="95% at every time after the burn-in at once (asymptotic)",
        )
    ]
