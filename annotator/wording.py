"""What a study action did, and what the audit log recorded, in words a
researcher reads (the console's study monitor and the admin say the same).

The audit log's details stay stored as the actions wrote them; this reads
them, old rows included, so no stored row needs rewriting.
"""

from __future__ import annotations

import re

from django.core.exceptions import FieldDoesNotExist
from django.db.models import ForeignObjectRel

from annotator.models import AuditEvent, Study
from core.words import count

Action = AuditEvent.Action


def refill_summary(
    released: int, open_places: int, prolific_places: int, *, on_prolific: bool = False
) -> str:
    """What "Refill the quota" did: the stale places it released, the places
    now open to new participants, and Prolific's places."""
    if released:
        parts = [f"released {count(released, 'stale place')} (work left unfinished too long)"]
    else:
        parts = ["no unfinished work was old enough to release"]
    if open_places:
        verb = "is" if open_places == 1 else "are"
        parts.append(f"{count(open_places, 'place')} {verb} open to new participants")
    else:
        parts.append("no place is open: every task has its raters or work in progress")
    if prolific_places:
        parts.append(f"Prolific's places set to {prolific_places:,}")
    elif on_prolific:
        parts.append("Prolific's places unchanged (set PROLIFIC_API_TOKEN to change them here)")
    text = "; ".join(parts)
    return f"Refilled the quota: {text}."


def refill_result_summary(result: dict[str, int], study: Study) -> str:
    """refill_summary of what check_refill_quota returned."""
    return refill_summary(
        result["released"],
        result["open_places"],
        result["prolific_places"],
        on_prolific=bool(study.prolific_study_id),
    )


PROLIFIC_STATUS_WORDS = {"RETURNED": "returned the study", "TIMED-OUT": "timed out"}
PAIR = re.compile(r"(\w+) (\d+)")


def field_label(name: str) -> str:
    try:
        field = Study._meta.get_field(name)
    except FieldDoesNotExist:  # a field removed since the row was written
        return name.replace("_", " ")
    if isinstance(field, ForeignObjectRel):  # a reverse relation has no label of its own
        return name.replace("_", " ")
    return str(field.verbose_name)


def audit_detail(event: AuditEvent) -> str:
    """The event's detail as a phrase (empty when there is nothing to add to
    the action's label): settings by their labels, outcomes in words, no raw
    keys or True / False."""
    detail = (event.detail or "").strip()
    action = event.action
    if action == Action.QUOTA_REFILLED:
        values = {key: int(value) for key, value in PAIR.findall(detail)}
        if {"released", "open_places", "prolific_places"} <= set(values):
            summary = refill_summary(
                values["released"], values["open_places"], values["prolific_places"]
            )
            return summary.removeprefix("Refilled the quota: ").rstrip(".")
        return detail
    if action == Action.CHANGED and detail:
        return ", ".join(field_label(name.strip()) for name in detail.split(","))
    if action == Action.COMPLETED:
        passed = detail.removeprefix("attention checks: ")
        return {
            "True": "passed the attention checks",
            "False": "failed the attention checks",
            "none": "",
        }.get(passed, detail)
    if action in (Action.OPENED, Action.PAUSED, Action.CLOSED) and detail.startswith("was "):
        return f"it was {detail.removeprefix('was ')}"
    if action == Action.RELEASED and detail.startswith("Prolific: "):
        status = detail.removeprefix("Prolific: ")
        return f"{PROLIFIC_STATUS_WORDS.get(status, status.lower())} on Prolific"
    if action in (Action.PROLIFIC_CREATED, Action.PROLIFIC_PUBLISHED) and detail:
        return f"Prolific study {detail}"
    return detail
