"""The plan of an adaptive human study, before anything is spent: for the goal
"every system's mean human score within +-w (95%)", how many places it will
pay for, what that costs at the study's reward, and the chance of answering
within the budget, from simulated studies on the data at hand.

A simulated study runs the loop of analysis.anytime on each system: it draws
the system's responses at random (with replacement), sends each to a human
with its inclusion probability, feeds the increments to the confidence
sequence and stops the system the first time its interval is narrow enough
(after `min_labels` ratings). Human ratings are simulated as the judge's
score plus a difference drawn from the human-minus-judge differences seen
where both exist (the judge's error and the raters' noise together), on the
scale's bounds; without any, as the judge's score plus a difference as wide
as the judge's own spread (a judge that predicts nothing: the plan is then
pessimistic). A place whose participant drops out is paid again
(`dropout`). `benchmarks/adaptive_study.py` replays the same loop with the
paper's gold ratings as the oracle and checks the intervals' coverage.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from analysis.anytime import active_increments, confidence_sequence

Z95 = 1.959963984540054
# (responses drawn, rng) -> their simulated human ratings
RatingSampler = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Goal:
    """System means within +-`width` (95%, anytime-valid)."""

    width: float
    alpha: float = 0.05
    min_labels: int = 30
    t_opt: float = 800  # draws per system where the sequence is tightest
    scale: float = 3.0  # a guess of an increment's standard deviation
    max_draws: int = 6000  # per system, in a simulation

    def __post_init__(self) -> None:
        if not self.width > 0:
            raise ValueError("The goal's half-width must be positive.")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha: between 0 and 1.")
        if self.min_labels < 1 or self.max_draws < 10:
            raise ValueError("min_labels >= 1 and max_draws >= 10.")


@dataclass(frozen=True)
class Budget:
    pence: int  # money for places, the fees of the platform included
    reward_pence: int  # one place's reward (hourly pay x minutes per item)
    fee_share: float = 1 / 3  # the platform's fee on top of a reward
    dropout: float = 0.1  # share of places returned unfinished (paid again)

    def __post_init__(self) -> None:
        if self.pence < 0 or self.reward_pence <= 0:
            raise ValueError("A budget is not negative and a place's reward is positive.")
        if not 0 <= self.dropout < 1 or self.fee_share < 0:
            raise ValueError("dropout in [0, 1), fee_share >= 0.")

    @property
    def place_pence(self) -> float:
        return self.reward_pence * (1 + self.fee_share)


@dataclass
class SystemStop:
    stopped: bool  # the interval got narrow enough within max_draws
    draws: int
    labels: int
    paid: int  # places paid, dropouts included
    lower: float
    upper: float


def run_system(
    rng: np.random.Generator,
    responses: np.ndarray,
    judge: np.ndarray,
    probability: np.ndarray,
    sample: RatingSampler,
    goal: Goal,
    dropout: float,
) -> dict[str, SystemStop]:
    """One system of one simulated study. `responses` are its response
    indices; `judge` and `probability` are indexed by response. Returns where
    it stops on the confidence sequence ("sequence") and, on the same draws,
    on the fixed-n normal interval recomputed after every draw ("peeked": the
    invalid way, kept as the benchmark's control)."""
    draws = goal.max_draws
    item = rng.choice(responses, draws)
    sent = rng.random(draws) < probability[item]
    ratings = sample(item, rng)
    paid = np.cumsum(np.where(sent, rng.geometric(1 - dropout, draws), 0))
    z, _ = active_increments(judge[item], np.where(sent, ratings, np.nan), sent, probability[item])
    sequence = confidence_sequence(z, alpha=goal.alpha, t_opt=goal.t_opt, scale=goal.scale)
    count = np.arange(1, draws + 1)
    variance = np.maximum(np.cumsum(z**2) / count - sequence.mean**2, 0)
    fixed = Z95 * np.sqrt(variance / count)
    enough = np.cumsum(sent) >= goal.min_labels
    stops = {}
    for way, (lower, upper) in {
        "sequence": (sequence.lower, sequence.upper),
        "peeked": (sequence.mean - fixed, sequence.mean + fixed),
    }.items():
        narrow = ((upper - lower) / 2 <= goal.width) & enough & (count >= 10)
        k = int(np.argmax(narrow)) if narrow.any() else draws - 1
        stops[way] = SystemStop(
            bool(narrow.any()),
            k + 1,
            int(sent[: k + 1].sum()),
            int(paid[k]),
            float(lower[k]),
            float(upper[k]),
        )
    return stops


@dataclass
class Plan:
    goal: Goal
    budget: Budget
    systems: list[str]
    replays: int
    labels_median: float
    paid_median: float
    paid_p95: float  # the worst case: 19 studies in 20 pay no more
    cost_median_pence: float
    cost_p95_pence: float
    answered_within_budget: float  # share of simulated studies
    uniform_ratings: list[int]  # a fixed uniform design on humans alone, per system
    uniform_cost_pence: float
    assumptions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "goal": {"half_width": self.goal.width, "alpha": self.goal.alpha},
            "budget_pence": self.budget.pence,
            "place_pence": self.budget.place_pence,
            "systems": self.systems,
            "replays": self.replays,
            "labels_median": self.labels_median,
            "places_median": self.paid_median,
            "places_p95": self.paid_p95,
            "cost_median_pence": self.cost_median_pence,
            "cost_p95_pence": self.cost_p95_pence,
            "answered_within_budget": self.answered_within_budget,
            "uniform_ratings_per_system": self.uniform_ratings,
            "uniform_cost_pence": self.uniform_cost_pence,
            "assumptions": self.assumptions,
        }

    def summary(self) -> str:
        pounds = lambda pence: f"GBP {pence / 100:,.2f}"  # noqa: E731
        return (
            f"Goal: every system's mean within +-{self.goal.width} (95%, anytime-valid), "
            f"{len(self.systems)} systems. Expected {self.paid_median:.0f} paid places "
            f"({pounds(self.cost_median_pence)}), {self.paid_p95:.0f} "
            f"({pounds(self.cost_p95_pence)}) in the worst 1 of 20; chance of an answer "
            f"within {pounds(self.budget.pence)}: {self.answered_within_budget:.0%} "
            f"({self.replays} simulated studies). A fixed uniform design on humans alone "
            f"would need {sum(self.uniform_ratings)} ratings ({pounds(self.uniform_cost_pence)}) "
            "and could not stop early."
        )


def plan(
    judge: np.ndarray,
    system: np.ndarray,
    names: list[str],
    human: np.ndarray | None,
    goal: Goal,
    budget: Budget,
    *,
    probability: np.ndarray,
    scale: tuple[float, float] = (1, 10),
    replays: int = 300,
    seed: int = 0,
) -> Plan:
    """The plan from the judge's score on every response (`judge`), each
    response's system code (`system`, indexing `names`), the human scores
    known so far (`human`, NaN where none) and each response's inclusion
    probability."""
    judge = np.asarray(judge, float)
    if not np.isfinite(judge).all():
        raise ValueError("The judge must have scored every response of the pool.")
    assumptions = []
    known = np.isfinite(human) if human is not None else np.zeros(len(judge), bool)
    if known.sum() >= 10:
        residuals = (np.asarray(human, float) - judge)[known]
        assumptions.append(
            f"human ratings simulated as the judge's score plus one of the {int(known.sum())} "
            "human-minus-judge differences seen so far"
        )
    else:
        residuals = np.random.default_rng(seed).normal(0, max(float(judge.std()), 1.0), 1000)
        assumptions.append(
            "fewer than 10 human ratings so far: human ratings simulated as the judge's score "
            "plus noise as wide as the judge's own spread (a judge that predicts nothing)"
        )

    def sample(item: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.clip(judge[item] + rng.choice(residuals, len(item)), *scale)

    rng = np.random.default_rng(seed)
    labels, paid, answered = [], [], []
    groups = [np.flatnonzero(system == s) for s in range(len(names))]
    for _ in range(replays):
        stops = [
            run_system(rng, rows, judge, probability, sample, goal, budget.dropout)["sequence"]
            for rows in groups
        ]
        places = sum(stop.paid for stop in stops)
        labels.append(sum(stop.labels for stop in stops))
        paid.append(places)
        answered.append(
            all(stop.stopped for stop in stops) and places * budget.place_pence <= budget.pence
        )
    # a fixed uniform design: n per system from the simulated ratings' spread
    spread = [float(np.std(sample(np.repeat(rows, 20), rng))) for rows in groups]
    uniform = [math.ceil((Z95 * sd / goal.width) ** 2) for sd in spread]
    uniform_places = sum(uniform) / (1 - budget.dropout)
    return Plan(
        goal=goal,
        budget=budget,
        systems=list(names),
        replays=replays,
        labels_median=float(np.median(labels)),
        paid_median=float(np.median(paid)),
        paid_p95=float(np.percentile(paid, 95)),
        cost_median_pence=float(np.median(paid)) * budget.place_pence,
        cost_p95_pence=float(np.percentile(paid, 95)) * budget.place_pence,
        answered_within_budget=float(np.mean(answered)),
        uniform_ratings=uniform,
        uniform_cost_pence=uniform_places * budget.place_pence,
        assumptions=assumptions,
    )
