"""Quality control of raters: agreement with gold, attention checks, speed,
straight-lining. Flags only ask a researcher to look; excluding is a decision."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Avg

from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study
from judging.models import Judgment

MIN_ITEMS_FOR_CORRELATION = 3
MIN_ITEMS_FOR_STRAIGHT_LINE = 5
SPEED_SHARE = 0.25  # flag below a quarter of the estimated time per item


def speed_threshold(study: Study, items_per_task: int) -> float | None:
    """Seconds per item under which a median is suspiciously fast: the study's
    own threshold, else a quarter of (estimated minutes / items per task)."""
    if study.min_median_seconds is not None:
        return study.min_median_seconds
    if not items_per_task:
        return None
    return SPEED_SHARE * study.estimated_minutes * 60 / items_per_task


def straight_lined(values: list) -> bool:
    """The same score (or choice) on every rated item."""
    return len(values) >= MIN_ITEMS_FOR_STRAIGHT_LINE and len(set(values)) == 1


@dataclass
class ParticipantQuality:
    participant_id: int
    rater: str
    status: str
    status_label: str
    task: str
    assignment_status: str
    ratings: int
    median_seconds: float | None
    attention_passed: bool | None
    practice_passed: bool | None
    gold_correlation: float | None
    gold_note: str
    straight_lined: bool
    other_session_ids: list[str]
    comments: int
    item_flags: int
    flagged: bool
    flag_reason: str
    # what the study monitor's plots draw: their rubric scores (study scale) and,
    # for the responses with a gold score, (gold score, their score)
    scores: list[int] = field(default_factory=list)
    gold_pairs: list[tuple[float, int]] = field(default_factory=list)


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


def participant_quality(study: Study, only: int | None = None) -> list[ParticipantQuality]:
    """One row per participant (or only the participant of that id), from three
    queries whatever their number."""
    ratings_of = Rating.objects.filter(item__study=study, item__kind=Item.Kind.RESPONSE)
    participants = Participant.objects.filter(study=study).select_related("assignment__task")
    if only is not None:
        ratings_of = ratings_of.filter(assignment__participant_id=only)
        participants = participants.filter(pk=only)
    ratings = list(
        ratings_of.values_list(
            "assignment__participant_id",
            "item__response_id",
            "score",
            "choice",
            "seconds",
            "comment",
            "flag",
        )
    )
    gold = gold_scores(study, {r[1] for r in ratings if r[1] is not None})
    by_participant: dict[int, list[tuple]] = defaultdict(list)
    for participant_id, *rest in ratings:
        by_participant[participant_id].append(tuple(rest))
    rows = []
    for participant in participants:
        own = by_participant.get(participant.pk, [])
        pairs = [(score, gold[rid]) for rid, score, *_ in own if rid in gold and score is not None]
        scores = sorted(score for _, score, *_ in own if score is not None)
        corr, note = correlation_with_gold(pairs) if study.gold_evaluator_id else (None, "no gold")
        assignment: Assignment | None = getattr(participant, "assignment", None)
        rows.append(
            ParticipantQuality(
                participant_id=participant.pk,
                rater=participant.rater_id,
                status=participant.status,
                status_label=participant.get_status_display(),
                task=assignment.task.label if assignment else "",
                assignment_status=assignment.status if assignment else "",
                ratings=len(own),
                median_seconds=statistics.median(r[3] for r in own) if own else None,
                attention_passed=assignment.attention_passed if assignment else None,
                practice_passed=assignment.practice_passed if assignment else None,
                gold_correlation=corr,
                gold_note=note,
                straight_lined=straight_lined([r[1] if r[1] is not None else r[2] for r in own]),
                other_session_ids=list(assignment.other_session_ids) if assignment else [],
                comments=sum(1 for r in own if r[4]),
                item_flags=sum(1 for r in own if r[5]),
                flagged=participant.flagged,
                flag_reason=participant.flag_reason,
                scores=scores,
                gold_pairs=sorted((g, score) for score, g in pairs),
            )
        )
    return rows


def flag_reasons(participant: Participant) -> list[str]:
    """Why a participant's work looks doubtful, from their ratings of responses."""
    study = participant.study
    reasons = []
    assignment = getattr(participant, "assignment", None)
    if assignment is not None and assignment.attention_passed is False:
        reasons.append("failed an attention check")
    own = list(
        Rating.objects.filter(
            assignment__participant=participant, item__kind=Item.Kind.RESPONSE
        ).values_list("item__response_id", "score", "choice", "seconds")
    )
    if study.min_gold_correlation is not None and study.gold_evaluator_id is not None:
        gold = gold_scores(study, {rid for rid, *_ in own})
        corr, _ = correlation_with_gold(
            [(s, gold[rid]) for rid, s, *_ in own if rid in gold and s is not None]
        )
        if corr is not None and corr < study.min_gold_correlation:
            reasons.append(f"correlation with gold {corr:.2f} < {study.min_gold_correlation:g}")
    if assignment is not None and own:
        median = statistics.median(seconds for *_, seconds in own)
        threshold = speed_threshold(study, len(assignment.item_order))
        if threshold is not None and median < threshold:
            reasons.append(f"median {median:.1f} s per item < {threshold:.1f} s")
    if straight_lined([score if score is not None else choice for _, score, choice, _ in own]):
        value = own[0][1] if own[0][1] is not None else own[0][2]
        reasons.append(f"gave {value} to all {len(own)} items")
    return reasons


def auto_flag(participant: Participant) -> bool:
    """Flag a participant whose work looks doubtful (attention checks, gold
    correlation, speed, straight-lining). Caller holds the study lock."""
    reasons = flag_reasons(participant)
    if reasons and not participant.flagged:
        participant.flagged = True
        participant.flag_reason = "; ".join(reasons)[:300]
        participant.save(update_fields=["flagged", "flag_reason"])
        AuditEvent.objects.create(
            study=participant.study,
            participant=participant,
            action=AuditEvent.Action.FLAGGED,
            detail=participant.flag_reason,
        )
    return bool(reasons)
