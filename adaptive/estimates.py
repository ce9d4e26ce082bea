"""Where an adaptive study stands: per system, the anytime-valid interval of
its mean human score from the draws resolved so far, and whether the goal is
met. Reads only; adaptive.loop acts on it.

A system's draws are read in their order (position). A draw is resolved when
it was not sent, or when its batch has an accepted rating of it (a judgment of
the batch study's evaluator: the ratings of accepted participants whose work
is complete). The sequence runs over the longest resolved prefix: the order
was fixed before any label, so waiting for a late label keeps the increments
in that order, whatever the raters' speed (reading them in order of arrival
would let a rater's speed, which may go with their scores, pick the order).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from adaptive.models import AdaptiveStudy, Draw
from analysis.anytime import active_increments, confidence_sequence
from annotator.models import Study
from judging.models import Judgment

SCALE = (1.0, 10.0)  # judgments' common scale


@dataclass
class SystemEstimate:
    system_id: int
    name: str
    mean: float | None
    lower: float
    upper: float
    draws: int  # resolved, in order
    labels: int  # human ratings among them
    pending: int  # sent draws still waiting for a rating

    @property
    def half_width(self) -> float:
        return (self.upper - self.lower) / 2

    def as_dict(self) -> dict:
        return asdict(self)


def alpha_per_system(adaptive: AdaptiveStudy, systems: int) -> float:
    """The means goal holds each system's interval at alpha; the ranking goal
    needs all of them at once, so each gets (1 - p) / K (Bonferroni)."""
    if adaptive.goal == AdaptiveStudy.Goal.RANKING:
        return (1 - float(adaptive.probability or 0.95)) / max(systems, 1)
    return adaptive.alpha


def labels_by_draw(draws: list[Draw]) -> dict[tuple[int, int], float]:
    """(batch study id, response id) -> the accepted human score (first by time)."""
    studies = {d.study_id for d in draws if d.study_id is not None}
    evaluators = dict(
        Study.objects.filter(pk__in=studies, evaluator__isnull=False).values_list(
            "evaluator_id", "pk"
        )
    )
    labels: dict[tuple[int, int], float] = {}
    for evaluator_id, response_id, score in (
        Judgment.objects.filter(evaluator_id__in=evaluators)
        .order_by("created_at", "pk")
        .values_list("evaluator_id", "response_id", "score")
    ):
        labels.setdefault((evaluators[evaluator_id], response_id), float(score))
    return labels


def system_estimate(
    adaptive: AdaptiveStudy,
    system_id: int,
    name: str,
    draws: list[Draw],
    labels: dict[tuple[int, int], float],
    alpha: float,
) -> SystemEstimate:
    judge, human, sent, probability = [], [], [], []
    pending = 0
    blocked = False
    for draw in draws:
        label = labels.get((draw.study_id or 0, draw.response_id)) if draw.sent else None
        if draw.sent and label is None:
            pending += 1
            blocked = True
        if blocked:
            continue
        judge.append(adaptive.pool[str(draw.response_id)][1])
        human.append(label if label is not None else np.nan)
        sent.append(draw.sent)
        probability.append(draw.probability)
    if not judge:
        return SystemEstimate(system_id, name, None, *SCALE, 0, 0, pending)
    z, _ = active_increments(
        np.array(judge), np.array(human), np.array(sent), np.array(probability)
    )
    sequence = confidence_sequence(
        z, alpha=alpha, t_opt=adaptive.t_opt, scale=adaptive.scale, bounds=SCALE
    )
    return SystemEstimate(
        system_id,
        name,
        float(sequence.mean[-1]),
        float(sequence.lower[-1]),
        float(sequence.upper[-1]),
        len(judge),
        int(sum(sent)),
        pending,
    )


def estimates(adaptive: AdaptiveStudy) -> list[SystemEstimate]:
    """Per system of the study (by name), its estimate now."""
    systems = sorted(adaptive.systems.all(), key=lambda s: s.name)
    draws = list(Draw.objects.filter(adaptive=adaptive).order_by("system_id", "position"))
    labels = labels_by_draw(draws)
    alpha = alpha_per_system(adaptive, len(systems))
    return [
        system_estimate(
            adaptive, s.pk, s.name, [d for d in draws if d.system_id == s.pk], labels, alpha
        )
        for s in systems
    ]


def unanswered(adaptive: AdaptiveStudy, found: list[SystemEstimate]) -> list[int]:
    """The systems whose part of the goal is not answered yet (they get more draws)."""
    ready = [e for e in found if e.labels >= adaptive.min_labels and e.mean is not None]
    if adaptive.goal == AdaptiveStudy.Goal.MEANS:
        width = float(adaptive.half_width or 0)
        return [e.system_id for e in found if e not in ready or e.half_width > width + 1e-12]
    open_ = {e.system_id for e in found if e not in ready}
    ranked = sorted(ready, key=lambda e: e.mean or 0.0)
    for low, high in zip(ranked, ranked[1:], strict=False):
        if low.upper >= high.lower:  # their intervals overlap: the order is not decided
            open_ |= {low.system_id, high.system_id}
    return sorted(open_)


def goal_met(adaptive: AdaptiveStudy, found: list[SystemEstimate]) -> bool:
    """By the intervals; the alt-test goal is decided by its looks (adaptive.alt_goal)."""
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        return False
    return bool(found) and not unanswered(adaptive, found)


def ranking(found: list[SystemEstimate]) -> list[str]:
    """The systems from the highest mean down."""
    return [e.name for e in sorted(found, key=lambda e: -(e.mean or 0.0))]
