"""Where an adaptive study stands: per system, the interval of its mean human
score from the draws resolved so far, and whether the goal is met. Reads
only; adaptive.loop acts on it.

The interval is the design's (analysis.planning.study_plan): for the `adaptive` design
the anytime-valid confidence sequence of the active increments (no running
intersection, pseudo-observations at the increments' ends); for the fixed
designs (`uniform`, `ppi`) the fixed-n interval of `fixed_estimate` on the
system's labels (with the judge's scores of the labelled draws and its mean
over the system's pool for `ppi`), valid once, when every sent draw of the
planned waves is rated: `goal_met` never reads it before.

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
from analysis.planning.study_plan import fixed_estimate
from analysis.statistics.anytime import active_increments, confidence_sequence, increment_ends
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


@dataclass
class Prefix:
    """A system's longest resolved prefix of draws, in order."""

    judge: list[float]  # the judge's score of each draw
    human: list[float]  # the human rating (NaN where not sent)
    sent: list[bool]
    probability: list[float]
    pending: int  # sent draws still waiting for a rating (the prefix stops at the first)
    first: int  # draws of the system's first wave (a fixed design's degrees of freedom)

    @property
    def labels(self) -> np.ndarray:
        return np.array([h for h, s in zip(self.human, self.sent, strict=True) if s], float)

    @property
    def judge_of_labels(self) -> np.ndarray:
        return np.array([j for j, s in zip(self.judge, self.sent, strict=True) if s], float)


def resolved_prefix(
    adaptive: AdaptiveStudy, draws: list[Draw], labels: dict[tuple[int, int], float]
) -> Prefix:
    prefix = Prefix([], [], [], [], 0, sum(1 for d in draws if d.wave == draws[0].wave))
    blocked = False
    for draw in draws:
        label = labels.get((draw.study_id or 0, draw.response_id)) if draw.sent else None
        if draw.sent and label is None:
            prefix.pending += 1
            blocked = True
        if blocked:
            continue
        prefix.judge.append(adaptive.pool[str(draw.response_id)][1])
        prefix.human.append(label if label is not None else np.nan)
        prefix.sent.append(draw.sent)
        prefix.probability.append(draw.probability)
    return prefix


def system_pool(adaptive: AdaptiveStudy, system_id: int) -> tuple[np.ndarray, np.ndarray]:
    """The judge's score and the probability of every response of the system's pool."""
    entries = [entry for entry in adaptive.pool.values() if entry[0] == system_id]
    return np.array([e[1] for e in entries], float), np.array([e[2] for e in entries], float)


def system_estimate(
    adaptive: AdaptiveStudy,
    system_id: int,
    name: str,
    draws: list[Draw],
    labels: dict[tuple[int, int], float],
    alpha: float,
) -> SystemEstimate:
    """The system's estimate by the study's design, over its resolved prefix."""
    prefix = resolved_prefix(adaptive, draws, labels) if draws else Prefix([], [], [], [], 0, 0)
    pool_judge, pool_probability = system_pool(adaptive, system_id)
    if adaptive.fixed:
        if not prefix.sent:
            return SystemEstimate(system_id, name, None, *SCALE, 0, 0, prefix.pending)
        mean, lower, upper, _ = fixed_estimate(
            adaptive.design,
            prefix.labels,
            prefix.judge_of_labels,
            float(pool_judge.mean()),
            alpha,
            SCALE,
            first=prefix.first,
        )
        return SystemEstimate(
            system_id,
            name,
            mean,
            lower,
            upper,
            len(prefix.judge),
            len(prefix.labels),
            prefix.pending,
        )
    if not prefix.judge:
        return SystemEstimate(system_id, name, None, *SCALE, 0, 0, prefix.pending)
    z, _ = active_increments(
        np.array(prefix.judge),
        np.array(prefix.human),
        np.array(prefix.sent),
        np.array(prefix.probability),
    )
    sequence = confidence_sequence(
        z,
        alpha=alpha,
        t_opt=adaptive.t_opt,
        scale=adaptive.scale,
        bounds=SCALE,
        pad=increment_ends(pool_judge, pool_probability, SCALE),
    )
    return SystemEstimate(
        system_id,
        name,
        float(sequence.mean[-1]),
        float(sequence.lower[-1]),
        float(sequence.upper[-1]),
        len(prefix.judge),
        int(sum(prefix.sent)),
        prefix.pending,
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
    """The systems whose part of the goal is not answered yet (they get more
    draws). The adaptive design reads no interval below `min_labels` labels
    (the sequence is asymptotic); a fixed design's interval holds from its
    first wave (analysis.statistics.ppi's small-sample interval)."""
    least = 1 if adaptive.fixed else adaptive.min_labels
    ready = [e for e in found if e.labels >= least and e.mean is not None]
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
    """By the intervals; the alt-test goal is decided by its looks (adaptive.alt_goal).
    A fixed design's intervals count only once every sent draw is rated: it
    does not stop early on the mean."""
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST:
        return False
    if adaptive.fixed and any(e.pending for e in found):
        return False
    return bool(found) and not unanswered(adaptive, found)


def ranking(found: list[SystemEstimate]) -> list[str]:
    """The systems from the highest mean down."""
    return [e.name for e in sorted(found, key=lambda e: -(e.mean or 0.0))]
