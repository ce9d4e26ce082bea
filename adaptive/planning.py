"""The plan shown before anything is spent (analysis.planning.study_plan's simulation
on the adaptive study's own pool): the design it will run (the cheapest of
uniform, ppi and adaptive whose simulated intervals keep their coverage, or
the one its researcher chose), why, what each design was expected to pay,
paid places expected and in the worst 1 of 20, their cost, the chance of an
answer within the budget, and the waves."""

from __future__ import annotations

import math

import numpy as np

from adaptive.models import AdaptiveStudy
from adaptive.pool import judge_means
from analysis.planning.study_plan import DESIGN_WORDS, TOP_UPS, Budget, Goal, plan
from users.models import User

PLAN_REPLAYS = 200
DROPOUT = 0.1  # the share of places returned unfinished (paid again), as planned


def plan_width(
    adaptive: AdaptiveStudy, judge: np.ndarray, code: np.ndarray
) -> tuple[float, float, str]:
    """The half-width and alpha the plan simulates, and how they were chosen."""
    if adaptive.goal == AdaptiveStudy.Goal.MEANS:
        return float(adaptive.half_width or 0), adaptive.alpha, ""
    systems = int(code.max()) + 1
    means = sorted(float(judge[code == s].mean()) for s in range(systems))
    gaps = [b - a for a, b in zip(means, means[1:], strict=False)] or [1.0]
    width = max(min(gaps) / 2, 0.05)
    alpha = (1 - float(adaptive.probability or 0.95)) / systems
    return (
        width,
        alpha,
        f"the ranking planned as every system's mean within +-{width:.2f} (half the smallest "
        f"gap between the judge's system means) at alpha {alpha:.4f} per system (Bonferroni)",
    )


def make_plan(adaptive: AdaptiveStudy, systems: list) -> dict:
    ids = sorted(adaptive.pool, key=int)
    names = sorted(s.name for s in systems)
    by_id = {s.pk: s.name for s in systems}
    judge = np.array([adaptive.pool[r][1] for r in ids], float)
    code = np.array([names.index(by_id[adaptive.pool[r][0]]) for r in ids])
    probability = np.array([adaptive.pool[r][2] for r in ids], float)
    human = None
    if adaptive.prior_humans is not None:
        known = judge_means(adaptive.prior_humans, [int(r) for r in ids])
        human = np.array([known.get(int(r), np.nan) for r in ids], float)
    width, alpha, how = plan_width(adaptive, judge, code)
    reward = max(int(float(adaptive.hourly_pay) * 100 * adaptive.minutes_per_item / 60), 1)
    result = plan(
        judge,
        code,
        names,
        human,
        Goal(
            width=width,
            alpha=alpha,
            min_labels=adaptive.min_labels,
            t_opt=adaptive.t_opt,
            scale=adaptive.scale,
        ),
        Budget(
            pence=adaptive.budget_pence,
            reward_pence=reward,
            fee_share=adaptive.fee_share,
            dropout=DROPOUT,
        ),
        probability=probability,
        replays=PLAN_REPLAYS,
        seed=adaptive.seed,
    )
    planned = result.design
    if adaptive.design and adaptive.design != planned:  # the researcher's choice
        result.design = adaptive.design
        result.reason = (
            f"chosen by the researcher; the plan chose {DESIGN_WORDS[planned]}: {result.reason}"
        )
    sent_per_wave = adaptive.send_rate * adaptive.draws_per_wave * len(names)
    out = result.as_dict()
    out["planned_design"] = planned
    out["top_ups"] = TOP_UPS
    if result.design == "adaptive":
        out["waves_median"] = math.ceil(result.labels_median / max(sent_per_wave, 1))
    else:  # the first wave, and top-ups where it falls short
        out["waves_median"] = 1
    out["raters_per_item"] = 1
    out["minutes_per_item"] = adaptive.minutes_per_item
    out["hourly_pay"] = str(adaptive.hourly_pay)
    out["summary"] = result.summary()
    source = (
        f"what {adaptive.judge} defers to humans at {1 - adaptive.defer_at:.0%} agreement "
        "(the report's deferring judge: more often where it defers, the floor where it keeps)"
        if adaptive.defer_at is not None
        else f"the disagreement between {adaptive.judge} and {adaptive.uncertainty_judge}"
        if adaptive.uncertainty_judge
        else f"the spread of {adaptive.judge}'s repeated scores, where it has several"
    )
    out["assumptions"] = (
        result.assumptions
        + ([how] if how else [])
        + [
            f"a draw is sent with a probability from {source} (uniform where none), "
            f"at least {adaptive.floor:.0%} of the uniform share",
            f"{DROPOUT:.0%} of places returned unfinished and paid again",
            "a rating costs the minutes per item at the hourly pay; the loop pays each batch's "
            "places at its largest task, at most 1.5x its smallest (so a batch may cost "
            "somewhat more than planned)",
        ]
    )
    return out


def design_chosen(plan: dict, actor: User | None) -> str:
    """The decision's words when a researcher chose the design over the plan."""
    who = str(actor) if actor else "a researcher"
    design, planned = plan["design"], plan.get("planned_design", plan["design"])
    figures = plan.get("designs") or {}

    def expected(name: str) -> str:
        d = figures.get(name) or {}
        return (
            f"{d.get('paid_median', 0):.0f} paid places expected, coverage "
            f"{d.get('coverage', 0):.2f}"
        )

    if design == planned:
        return (
            f"{who} chose {DESIGN_WORDS[design]} ({design}), as the plan did ({expected(design)})"
        )
    return (
        f"{who} chose {DESIGN_WORDS[design]} ({design}: {expected(design)}) over the plan's "
        f"{DESIGN_WORDS[planned]} ({planned}: {expected(planned)})"
    )
