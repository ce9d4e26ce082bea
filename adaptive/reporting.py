"""The report an adaptive study writes when it stops: the answer, the design
that gave it (and what kind of interval that is), the labels and money it
took, and what a fixed uniform design would have needed for the same
precision."""

from __future__ import annotations

import math

import numpy as np

from adaptive.estimates import SystemEstimate, ranking
from adaptive.models import AdaptiveStudy, Draw, Snapshot
from analysis.planning.study_plan import DESIGN_WORDS, Z95


def uniform_ratings(adaptive: AdaptiveStudy, found: list[SystemEstimate]) -> dict[str, int | None]:
    """Per system: the human ratings a fixed uniform design (humans alone, a
    fixed-n 95% interval) needs for the half-width the loop reached, from the
    spread of the human ratings the loop collected (None with fewer than 2)."""
    from adaptive.estimates import labels_by_draw

    draws = list(Draw.objects.filter(adaptive=adaptive, sent=True))
    labels = labels_by_draw(draws)
    out: dict[str, int | None] = {}
    for e in found:
        scores = [
            labels[(d.study_id or 0, d.response_id)]
            for d in draws
            if d.system_id == e.system_id and (d.study_id or 0, d.response_id) in labels
        ]
        if len(scores) < 2 or e.half_width <= 0:
            out[e.name] = None
            continue
        out[e.name] = math.ceil((Z95 * float(np.std(scores, ddof=1)) / e.half_width) ** 2)
    return out


def alt_test_report(adaptive: AdaptiveStudy, met: bool, money: dict[str, float]) -> dict:
    last = Snapshot.objects.filter(adaptive=adaptive).order_by("-created_at", "-pk").first()
    look = (last.estimates or [{}])[0] if last else {}
    if met:
        answer = f"Answered: {look.get('reason', '')} (look {look.get('look')})."
    else:
        where = f" The last look: {look.get('reason')}." if look else ""
        answer = f"Not answered ({adaptive.stop_reason}).{where}"
    return {
        "goal": adaptive.goal_text(),
        "met": met,
        "stop_reason": adaptive.stop_reason,
        "answer": answer,
        "look": look,
        "labels": last.labels if last else 0,
        "spent_pence": round(money["spent"], 2),
        "budget_pence": adaptive.budget_pence,
        "uniform_total": None,
        "planned_uniform_total": None,
        "estimates": [],
        "draws": Draw.objects.filter(adaptive=adaptive).count(),
    }


def design_note(adaptive: AdaptiveStudy) -> str:
    """What the design's intervals promise, in words."""
    words = DESIGN_WORDS.get(adaptive.design, adaptive.design)
    if adaptive.fixed:
        return (
            f"Design: {words} ({adaptive.design}). Its intervals are fixed-n ones (Student's "
            "t with the first wave's degrees of freedom, a pseudo-label at each end of the "
            "scale), read once, on all the labels, when every planned wave was rated: not "
            "anytime-valid, so the study did not stop early on the mean."
        )
    return (
        f"Design: {words} ({adaptive.design}). Its intervals are anytime-valid confidence "
        "sequences: they hold at whichever rating the study stopped."
    )


def final_report(
    adaptive: AdaptiveStudy, found: list[SystemEstimate], met: bool, money: dict[str, float]
) -> dict:
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        return alt_test_report(adaptive, met, money)
    labels = sum(e.labels for e in found)
    kind = "fixed-n, read once at the end" if adaptive.fixed else "anytime-valid"
    if met and adaptive.goal == AdaptiveStudy.Goal.RANKING:
        answer = (
            "Answered: the ranking is "
            + " > ".join(ranking(found))
            + (f" (all at once with probability >= {adaptive.probability:g}; {kind}).")
        )
    elif met:
        answer = (
            "Answered: "
            + "; ".join(f"{e.name} {e.mean:.2f} [{e.lower:.2f}, {e.upper:.2f}]" for e in found)
            + f" (95% {kind}, each)."
        )
    else:
        answer = (
            f"Not answered ({adaptive.stop_reason}). Where it stood: "
            + "; ".join(
                f"{e.name} {e.mean:.2f} [{e.lower:.2f}, {e.upper:.2f}]"
                if e.mean is not None
                else f"{e.name}: no data"
                for e in found
            )
            + "."
        )
    uniform = uniform_ratings(adaptive, found)
    known = [n for n in uniform.values() if n is not None]
    planned = (adaptive.plan.get("designs") or {}).get(adaptive.design) or {}
    return {
        "goal": adaptive.goal_text(),
        "met": met,
        "stop_reason": adaptive.stop_reason,
        "answer": answer,
        "design": adaptive.design,
        "design_note": design_note(adaptive),
        "design_reason": adaptive.plan.get("design_reason", ""),
        "interval": "fixed" if adaptive.fixed else "anytime",
        "planned_places_median": planned.get("paid_median"),
        "estimates": [e.as_dict() for e in found],
        "labels": labels,
        "draws": sum(e.draws for e in found),
        "spent_pence": round(money["spent"], 2),
        "budget_pence": adaptive.budget_pence,
        "uniform_ratings": uniform,
        "uniform_total": sum(known) if len(known) == len(uniform) else None,
        "planned_uniform_total": sum(adaptive.plan.get("uniform_ratings_per_system") or []) or None,
    }
