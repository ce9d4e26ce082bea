"""CSV exports of a study's ratings: tidy (one row per rating) and wide (one
column per rater). The rows hold the values; `csv_text` writes them with every
cell that a spreadsheet would run as a formula neutralised (core/spreadsheet.py)."""

from __future__ import annotations

from collections.abc import Iterable

from annotator.models import Participant, Rating, Study
from core.downloads import safe_part

TIDY_COLUMNS = [
    "study",
    "meeting",
    "question_id",
    "question_type",
    "answer_position",
    "system",
    "response_id",
    "attention_check",
    "item_kind",
    "participant",
    "score",
    "choice",
    "shown_swapped",
    "seconds",
    "client_seconds",
    "comment",
    "flag",
    "created_at",
    "updated_at",
    "assignment_status",
    "excluded",
]


def tidy_rows(study: Study) -> list[dict]:
    ratings = (
        Rating.objects.filter(item__study=study)
        .select_related(
            "item__response__question__document",
            "item__response__run__system",
            "assignment__participant",
        )
        .order_by("item__task__label", "item_id", "assignment__participant_id")
    )
    rows = []
    for rating in ratings:
        item, participant = rating.item, rating.assignment.participant
        response = item.response
        question = response.question if response else None
        rows.append(
            {
                "study": study.name,
                "meeting": question.document.external_id if question else item.task.label,
                "question_id": question.external_id if question else "",
                "question_type": question.question_type if question else "",
                "answer_position": question.answer_position if question else "",
                "system": response.run.system.name if response else "",
                "response_id": response.pk if response else "",
                "attention_check": item.is_attention_check,
                "item_kind": item.kind,
                "participant": participant.rater_id,
                "score": rating.score,
                "choice": rating.choice,
                "shown_swapped": rating.swapped if rating.choice else "",
                "seconds": round(rating.seconds, 3),
                "client_seconds": round(rating.client_seconds, 3),
                "comment": rating.comment,
                "flag": rating.flag,
                "created_at": rating.created_at.isoformat(),
                "updated_at": rating.updated_at.isoformat(),
                "assignment_status": rating.assignment.status,
                "excluded": participant.status == Participant.Status.EXCLUDED,
            }
        )
    return rows


def wide_rows(study: Study) -> tuple[list[str], list[dict]]:
    """One row per rated response, one column per rater (empty where not rated)."""
    tidy = [r for r in tidy_rows(study) if r["item_kind"] == "response"]
    raters = sorted({r["participant"] for r in tidy})
    keys = ["meeting", "question_id", "question_type", "answer_position", "system", "response_id"]
    by_response: dict = {}
    for row in tidy:
        entry = by_response.setdefault(row["response_id"], {k: row[k] for k in keys})
        entry[row["participant"]] = row["score"] if row["score"] is not None else row["choice"]
    return keys + raters, list(by_response.values())


def feedback_rows(study: Study) -> list[dict]:
    """Raters' comments and flags, for the researcher: one row per rating that has one."""
    from django.db.models import Q

    ratings = (
        Rating.objects.filter(item__study=study)
        .exclude(Q(comment="") & Q(flag=""))
        .select_related("item__task", "assignment__participant")
        .order_by("item__task__label", "item_id", "pk")
    )
    return [
        {
            "task": r.item.task.label,
            "item_id": r.item_id,
            "response_id": r.item.response_id,
            "question": r.item.question,
            "participant": r.assignment.participant.rater_id,
            "flag": r.flag,
            "flag_label": r.get_flag_display() if r.flag else "",
            "comment": r.comment,
            "updated_at": r.updated_at.isoformat(),
        }
        for r in ratings
    ]


def ratings_subject(studies: Iterable[Study]) -> str:
    """What a ratings export is named after (core.downloads makes it safe): its
    study's name (its number when nothing of the name is left in ASCII), or how
    many studies it holds."""
    studies = list(studies)
    if len(studies) != 1:
        return f"ratings {len(studies)} studies"
    study = studies[0]
    return f"ratings {study.name if safe_part(study.name) else f'study {study.pk}'}"
