"""Quality control of raters: agreement with gold, attention checks, speed."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Avg

from annotator.models import Assignment, AuditEvent, Participant, Rating, Study
from judging.models import Judgment

MIN_ITEMS_FOR_CORRELATION = 3


@dataclass
class ParticipantQuality:
    participant_id: int
    rater: str
    status: str
    task: str
    assignment_status: str
    ratings: int
    median_seconds: float | None
    attention_passed: bool | None
    gold_correlation: float | None
    gold_note: str
    flagged: bool


def gold_scores(study: Study, response_ids: set[int]) -> dict[int, float]:
    """The gold score of each response: the mean of the gold evaluator's judgments."""
    if study.gold_evaluator_id is None or not response_ids:
        return {}
    return dict(
        Judgment.objects.filter(evaluator_id=study.gold_evaluator_id, response_id__in=response_ids)
        .values_list("response_id")
        .annotate(mean=Avg("score"))
        .values_list("response_id", "mean")
    )


def correlation_with_gold(pairs: list[tuple[float, float]]) -> tuple[float | None, str]:
    if len(pairs) < MIN_ITEMS_FOR_CORRELATION:
        return None, f"not computable: {len(pairs)} items with a gold score"
    mine, gold = zip(*pairs, strict=True)
    if len(set(mine)) == 1 or len(set(gold)) == 1:
        return None, "not computable: constant scores"
    return statistics.correlation(mine, gold), f"{len(pairs)} items"


def participant_quality(study: Study) -> list[ParticipantQuality]:
    """One row per participant, from three queries whatever their number."""
    ratings = list(
        Rating.objects.filter(item__study=study).values_list(
            "assignment__participant_id", "item__response_id", "score", "seconds"
        )
    )
    gold = gold_scores(study, {r[1] for r in ratings if r[1] is not None})
    by_participant: dict[int, list[tuple]] = defaultdict(list)
    for participant_id, response_id, score, seconds in ratings:
        by_participant[participant_id].append((response_id, score, seconds))
    rows = []
    participants = Participant.objects.filter(study=study).select_related("assignment__task")
    for participant in participants:
        own = by_participant.get(participant.pk, [])
        pairs = [(score, gold[rid]) for rid, score, _ in own if rid in gold]
        corr, note = correlation_with_gold(pairs) if study.gold_evaluator_id else (None, "no gold")
        assignment: Assignment | None = getattr(participant, "assignment", None)
        rows.append(
            ParticipantQuality(
                participant_id=participant.pk,
                rater=participant.rater_id,
                status=participant.status,
                task=assignment.task.label if assignment else "",
                assignment_status=assignment.status if assignment else "",
                ratings=len(own),
                median_seconds=statistics.median(s for _, _, s in own) if own else None,
                attention_passed=assignment.attention_passed if assignment else None,
                gold_correlation=corr,
                gold_note=note,
                flagged=participant.flagged,
            )
        )
    return rows


def auto_flag(participant: Participant) -> bool:
    """Flag a participant who failed attention checks or agrees too little with
    gold. A flag only asks a researcher to look; excluding stays a decision."""
    study = participant.study
    reasons = []
    assignment = getattr(participant, "assignment", None)
    if assignment is not None and assignment.attention_passed is False:
        reasons.append("failed an attention check")
    if study.min_gold_correlation is not None and study.gold_evaluator_id is not None:
        own = list(
            Rating.objects.filter(
                assignment__participant=participant, item__response__isnull=False
            ).values_list("item__response_id", "score")
        )
        gold = gold_scores(study, {rid for rid, _ in own})
        corr, _ = correlation_with_gold([(s, gold[rid]) for rid, s in own if rid in gold])
        if corr is not None and corr < study.min_gold_correlation:
            reasons.append(f"correlation with gold {corr:.2f} < {study.min_gold_correlation:g}")
    if reasons and not participant.flagged:
        participant.flagged = True
        participant.flag_reason = "; ".join(reasons)[:300]
        participant.save(update_fields=["flagged", "flag_reason"])
        AuditEvent.objects.create(
            study=study, participant=participant, action="flagged", detail=participant.flag_reason
        )
    return bool(reasons)
