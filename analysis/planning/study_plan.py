"""The plan of a human study before anything is spent, and the design it runs:
for "every system's mean human score within +-w (95%)" (or the ranking, as
every system's mean within half the smallest gap), which of three designs
answers it for the fewest paid ratings while its intervals keep their
promise, simulated on the data at hand.

The designs (each draws the system's responses at random, with replacement):

- `uniform`: a fixed design on humans alone. Every draw is rated; at the end
  one fixed-n interval (Student's t, a pseudo-label at each end of the
  scale: analysis.statistics.ppi's small-sample interval). The number of draws is set
  beforehand from the spread of the ratings at hand; if the first wave falls
  short of the width, one top-up wave is sized from the first wave's own
  spread (Stein's two-stage design) and the interval is read once, on all.
- `ppi`: the same fixed design, with the judge: every response of the pool
  has the judge's score, so the labels' mean is corrected by the judge's
  pool mean (theta = lambda mean_pool(f) + mean(Y - lambda f), a control
  variate with known mean; lambda the variance-minimising one, in [0, 1]).
  The judge's bias cancels; its agreement with the humans saves ratings.
- `adaptive`: waves of draws, each sent to a human with its probability
  (active inference), the anytime confidence sequence of analysis.statistics.anytime
  read after every rating, stopping as soon as the interval is narrow enough
  (after `min_labels`). Being allowed to stop at any time costs width: on
  the coverage harness's datasets it paid 1.3-10x the uniform design for the
  means goal (docs/benchmarks.md, "Coverage"), so the plan chooses it only
  where the simulation says it is cheaper.

`plan` simulates each design `replays` times (human ratings as the judge's
score plus one of the human-minus-judge differences seen so far, on the
scale; without 10 of them, noise as wide as the judge's own spread), and
chooses the cheapest whose simulated coverage is at least COVERAGE_TARGET
and which answers in most simulated studies; it says which and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import special

from analysis.statistics.anytime import active_increments, confidence_sequence, increment_ends
from analysis.statistics.ppi import (
    PSEUDO_LABELS_WEIGHTED,
    padded_variance,
    padded_variance_at,
    smallest_sufficient,
)

Z95 = 1.959963984540054
COVERAGE_TARGET = 0.94
ANSWERED_TARGET = 0.8  # a design must answer in this share of simulated studies
DESIGNS = ("uniform", "ppi", "adaptive")
TOP_UPS = 2  # waves a fixed design may add when its interval falls short of the width
TOP_UP_LEAST = 10  # draws per system: a smaller wave is not worth a study
VARIANCE_BOUND = 0.9  # a top-up is sized on the 90% upper bound of the spread so far
FIRST_WAVE_CHANCE = 0.9  # a fixed design's first wave reaches the width this often
FIRST_WAVE_TRIALS = 100  # simulated first waves per system when sizing it
# pseudo-labels at each end of the scale in a fixed design's variance: as many as the
# weighted design's, for the skew its top-up decision adds (with one, the uniform design
# covered 0.940 on the paper's crowd, 2,000 replays)
PSEUDO_LABELS_STUDY = PSEUDO_LABELS_WEIGHTED
CHEAPER_BY = 0.05  # a design replaces a simpler one only when it saves this share
DESIGN_WORDS = {
    "uniform": "a fixed uniform design on humans alone",
    "ppi": "a fixed design with the judge (PPI)",
    "adaptive": "adaptive waves with an anytime interval",
}
# (responses drawn, rng) -> their simulated human ratings
RatingSampler = Callable[[np.ndarray, np.random.Generator], np.ndarray]


@dataclass(frozen=True)
class Goal:
    """System means within +-`width` (1 - alpha each)."""

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
    stopped: bool  # the goal's width was reached (within max_draws, or the top-up)
    draws: int
    labels: int
    paid: int  # places paid, dropouts included
    lower: float
    upper: float
    mean: float = math.nan


# --- the fixed designs ------------------------------------------------------------------------


def fixed_estimate(
    design: str,
    labels: np.ndarray,
    judge: np.ndarray,
    pool_judge_mean: float,
    alpha: float,
    scale: tuple[float, float],
    first: int | None = None,
) -> tuple[float, float, float, float]:
    """The fixed design's estimate and interval from its labels (and, for
    `ppi`, the judge's scores of the labelled draws and its pool mean):
    (mean, lower, upper, lambda), cut to the scale. After top-ups, Student's
    t keeps the first wave's degrees of freedom (`first` labels), as in
    Stein's two-stage design: the spread that sized the study is that one."""
    labels, judge = np.asarray(labels, float), np.asarray(judge, float)
    n = len(labels)
    lam = 0.0
    if design == "ppi" and n > 1:
        spread = float(np.var(judge, ddof=1))
        if spread > 0:
            lam = float(np.clip(np.cov(labels, judge, ddof=1)[0, 1] / spread, 0, 1))
    residual = labels - lam * judge
    f_bar = float(judge.mean()) if n else 0.0
    ends = (scale[0] - lam * f_bar, scale[1] - lam * f_bar)
    se = math.sqrt(padded_variance(residual, ends, PSEUDO_LABELS_STUDY) / n)
    q = float(special.stdtrit(max(min(n, first or n) - 1, 1), 1 - alpha / 2))
    mean = lam * pool_judge_mean + float(residual.mean())
    low, high = scale
    return (
        float(np.clip(mean, low, high)),
        max(mean - q * se, low),
        min(mean + q * se, high),
        lam,
    )


def fixed_size(
    design: str,
    labels: np.ndarray,
    judge: np.ndarray,
    width: float,
    alpha: float,
    scale: tuple[float, float],
    most: int = 100_000,
    variance_bound: float | None = None,
    first: int | None = None,
) -> int:
    """The fewest labels (at least MIN_LABELS) whose fixed-design interval is
    at most +-width, for labels with the mean and spread of these (the
    residuals Y - lambda f for `ppi`). With `variance_bound` (e.g. 0.8) the
    spread is its upper confidence bound at that level (chi-square), so that
    a wave sized from a few labels reaches the width with that chance. With
    `first`, the interval keeps the first wave's degrees of freedom, as
    fixed_estimate reads it after a top-up."""
    labels, judge = np.asarray(labels, float), np.asarray(judge, float)
    lam = 0.0
    if design == "ppi" and len(labels) > 1 and np.var(judge) > 0:
        lam = float(np.clip(np.cov(labels, judge, ddof=1)[0, 1] / np.var(judge, ddof=1), 0, 1))
    residual = labels - lam * judge
    variance = float(np.var(residual, ddof=1)) if len(residual) > 1 else 0.0
    if variance_bound is not None and len(residual) > 1:
        df = len(residual) - 1
        variance *= df / float(special.chdtri(df, variance_bound))
    f_bar = float(judge.mean()) if len(judge) else 0.0
    ends = (scale[0] - lam * f_bar, scale[1] - lam * f_bar)
    mean = float(residual.mean())

    def padded_at(n: np.ndarray) -> np.ndarray:
        return padded_variance_at(n, mean, variance, ends, PSEUDO_LABELS_STUDY)

    return smallest_sufficient(
        padded_at, width, alpha, most, degrees=None if first is None else max(first - 1, 1)
    )


def first_wave(
    design: str,
    responses: np.ndarray,
    judge: np.ndarray,
    sample: RatingSampler,
    goal: Goal,
    scale: tuple[float, float],
    rng: np.random.Generator,
) -> int:
    """The first wave of a fixed design for one system: large enough that its
    own interval reaches the width in FIRST_WAVE_CHANCE of simulated waves, so
    that top-ups (sized on a spread that moves with the mean where scores are
    bounded) are the exception: a top-up in every other study cost the fixed
    designs 1-2 points of coverage in the harness."""
    pool_mean = float(judge[responses].mean())
    item = rng.choice(responses, 4000)
    size = fixed_size(design, sample(item, rng), judge[item], goal.width, goal.alpha, scale)
    for _ in range(20):
        met = 0
        for _ in range(FIRST_WAVE_TRIALS):
            item = rng.choice(responses, size)
            _, low, high, _ = fixed_estimate(
                design, sample(item, rng), judge[item], pool_mean, goal.alpha, scale
            )
            met += (high - low) / 2 <= goal.width
        if met >= FIRST_WAVE_CHANCE * FIRST_WAVE_TRIALS:
            break
        size = math.ceil(size * 1.05) + 1
    return size


def paid_for(labels: int, dropout: float, rng: np.random.Generator) -> int:
    """Places paid for `labels` ratings when a share `dropout` of places is
    returned unfinished and offered again."""
    if labels <= 0:
        return 0
    return int(rng.geometric(1 - dropout, labels).sum()) if dropout > 0 else labels


def run_fixed(
    rng: np.random.Generator,
    design: str,
    responses: np.ndarray,
    judge: np.ndarray,
    sample: RatingSampler,
    first: int,
    goal: Goal,
    dropout: float,
    scale: tuple[float, float] = (1, 10),
) -> SystemStop:
    """One system of a fixed design: `first` draws rated; while their interval
    is wider than the goal, at most TOP_UPS more waves, each sized from the
    spread of the labels so far (its upper bound, VARIANCE_BOUND): a size
    that depends on the spread only, never on the mean (Stein's two-stage
    design); the interval is read on all the labels."""
    pool_mean = float(judge[responses].mean())
    item = rng.choice(responses, first)
    ratings = sample(item, rng)
    mean, low, high, _ = fixed_estimate(design, ratings, judge[item], pool_mean, goal.alpha, scale)
    for _ in range(TOP_UPS):
        if (high - low) / 2 <= goal.width:
            break
        total = fixed_size(
            design,
            ratings,
            judge[item],
            goal.width,
            goal.alpha,
            scale,
            variance_bound=VARIANCE_BOUND,
            first=first,
        )
        more = rng.choice(responses, max(total - len(item), TOP_UP_LEAST))
        item = np.r_[item, more]
        ratings = np.r_[ratings, sample(more, rng)]
        mean, low, high, _ = fixed_estimate(
            design, ratings, judge[item], pool_mean, goal.alpha, scale, first=first
        )
    return SystemStop(
        stopped=(high - low) / 2 <= goal.width + 1e-12,
        draws=len(item),
        labels=len(item),
        paid=paid_for(len(item), dropout, rng),
        lower=float(low),
        upper=float(high),
        mean=float(mean),
    )


# --- the adaptive design -----------------------------------------------------------------------


def run_system(
    rng: np.random.Generator,
    responses: np.ndarray,
    judge: np.ndarray,
    probability: np.ndarray,
    sample: RatingSampler,
    goal: Goal,
    dropout: float,
    scale: tuple[float, float] = (1, 10),
) -> dict[str, SystemStop]:
    """One system of the adaptive design. `responses` are its response
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
    sequence = confidence_sequence(
        z,
        alpha=goal.alpha,
        t_opt=goal.t_opt,
        scale=goal.scale,
        bounds=scale,
        pad=increment_ends(judge[responses], probability[responses], scale),
    )
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
            float(np.clip(sequence.mean[k], *scale)),
        )
    return stops


# --- the plan ---------------------------------------------------------------------------------


@dataclass
class DesignPlan:
    """What the simulation found for one design."""

    design: str
    first_wave: list[int]  # per system: draws of the first wave (fixed designs)
    labels_median: float
    paid_median: float
    paid_p95: float
    coverage: float  # over every system and simulated study, against the simulated truth
    coverage_worst: float  # the worst system's (noisier: fewer studies each)
    answered: float  # share of simulated studies that reach the goal
    answered_within_budget: float

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Plan:
    goal: Goal
    budget: Budget
    systems: list[str]
    replays: int
    design: str  # the chosen one
    reason: str
    designs: dict[str, DesignPlan]
    uniform_ratings: list[int]  # the fixed uniform design's first wave, per system
    assumptions: list[str] = field(default_factory=list)

    @property
    def chosen(self) -> DesignPlan:
        return self.designs[self.design]

    # the chosen design's figures, under the names the plan always had
    @property
    def labels_median(self) -> float:
        return self.chosen.labels_median

    @property
    def paid_median(self) -> float:
        return self.chosen.paid_median

    @property
    def paid_p95(self) -> float:
        return self.chosen.paid_p95

    @property
    def cost_median_pence(self) -> float:
        return self.paid_median * self.budget.place_pence

    @property
    def cost_p95_pence(self) -> float:
        return self.paid_p95 * self.budget.place_pence

    @property
    def answered_within_budget(self) -> float:
        return self.chosen.answered_within_budget

    @property
    def uniform_cost_pence(self) -> float:
        return self.designs["uniform"].paid_median * self.budget.place_pence

    def as_dict(self) -> dict:
        return {
            "goal": {"half_width": self.goal.width, "alpha": self.goal.alpha},
            "budget_pence": self.budget.pence,
            "place_pence": self.budget.place_pence,
            "systems": self.systems,
            "replays": self.replays,
            "design": self.design,
            "design_reason": self.reason,
            "designs": {name: d.as_dict() for name, d in self.designs.items()},
            "first_wave": self.chosen.first_wave,
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
        uniform = self.designs["uniform"]
        return (
            f"Goal: every system's mean within +-{self.goal.width:g} "
            f"({1 - self.goal.alpha:.0%} each), {len(self.systems)} systems. Design: "
            f"{DESIGN_WORDS[self.design]} ({self.reason}). Expected {self.paid_median:.0f} "
            f"paid places ({pounds(self.cost_median_pence)}), {self.paid_p95:.0f} "
            f"({pounds(self.cost_p95_pence)}) in the worst 1 of 20; chance of an answer "
            f"within {pounds(self.budget.pence)}: {self.answered_within_budget:.0%} "
            f"({self.replays} simulated studies). A fixed uniform design on humans alone "
            f"would pay {uniform.paid_median:.0f} places ({pounds(self.uniform_cost_pence)})."
        )


def choose(designs: dict[str, DesignPlan]) -> tuple[str, str]:
    """The cheapest design whose simulated coverage holds and which answers in
    most simulated studies, and why; the uniform design when none does."""

    def figures(d: DesignPlan) -> str:
        return (
            f"{d.paid_median:.0f} places, coverage {d.coverage:.2f}, answered in {d.answered:.0%}"
        )

    eligible = [
        d
        for d in designs.values()
        if d.coverage >= COVERAGE_TARGET and d.answered >= ANSWERED_TARGET
    ]
    eligible.sort(key=lambda d: DESIGNS.index(d.design))
    others = "; ".join(f"{DESIGN_WORDS[d.design]}: {figures(d)}" for d in designs.values())
    if not eligible:
        return "uniform", (
            f"no design both kept its coverage (>= {COVERAGE_TARGET}) and answered in "
            f"{ANSWERED_TARGET:.0%} of the simulated studies, so the simplest: {others}"
        )
    # in the order of simplicity, a design is kept unless a later one is cheaper by a
    # margin (two designs that pay the same within the simulation's noise are one)
    best = eligible[0]
    for d in eligible[1:]:
        if d.paid_median < (1 - CHEAPER_BY) * best.paid_median:
            best = d
    return best.design, (
        f"the fewest paid places among the designs that hold (a simpler design unless "
        f"another saves {CHEAPER_BY:.0%}): {others}"
    )


def expected_ratings(
    judge: np.ndarray, residuals: np.ndarray, scale: tuple[float, float]
) -> np.ndarray:
    """Per response, the mean simulated rating (over the residuals): the truth
    a simulated study must cover."""
    chunk = residuals[:1000]
    return np.clip(judge[:, None] + chunk[None, :], *scale).mean(axis=1)


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
    designs: tuple[str, ...] = DESIGNS,
) -> Plan:
    """The plan from the judge's score on every response (`judge`), each
    response's system code (`system`, indexing `names`), the human scores
    known so far (`human`, NaN where none) and each response's inclusion
    probability (for the adaptive design)."""
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

    groups = [np.flatnonzero(system == s) for s in range(len(names))]
    truth = expected_ratings(judge, residuals, scale)
    truths = [float(truth[rows].mean()) for rows in groups]
    rng = np.random.default_rng(seed)
    # the fixed designs' first waves, from a large simulated sample of each system
    first = {
        design: [first_wave(design, rows, judge, sample, goal, scale, rng) for rows in groups]
        for design in ("uniform", "ppi")
    }
    found: dict[str, DesignPlan] = {}
    for design in designs:
        labels, paid, answered, covered = [], [], [], []
        for _ in range(replays):
            if design == "adaptive":
                stops = [
                    run_system(rng, rows, judge, probability, sample, goal, budget.dropout, scale)[
                        "sequence"
                    ]
                    for rows in groups
                ]
            else:
                stops = [
                    run_fixed(rng, design, rows, judge, sample, n, goal, budget.dropout, scale)
                    for rows, n in zip(groups, first[design], strict=True)
                ]
            places = sum(stop.paid for stop in stops)
            labels.append(sum(stop.labels for stop in stops))
            paid.append(places)
            met = all(stop.stopped for stop in stops)
            answered.append((met, met and places * budget.place_pence <= budget.pence))
            covered.append(
                [stop.lower <= t <= stop.upper for stop, t in zip(stops, truths, strict=True)]
            )
        found[design] = DesignPlan(
            design=design,
            first_wave=first.get(design, [0] * len(names)),
            labels_median=float(np.median(labels)),
            paid_median=float(np.median(paid)),
            paid_p95=float(np.percentile(paid, 95)),
            coverage=float(np.mean(covered)),
            coverage_worst=float(np.min(np.mean(covered, axis=0))),
            answered=float(np.mean([a for a, _ in answered])),
            answered_within_budget=float(np.mean([b for _, b in answered])),
        )
    if "uniform" not in found:
        raise ValueError("The uniform design is the baseline: it is always simulated.")
    design, reason = choose(found)
    return Plan(
        goal=goal,
        budget=budget,
        systems=list(names),
        replays=replays,
        design=design,
        reason=reason,
        designs=found,
        uniform_ratings=first["uniform"],
        assumptions=assumptions,
    )
