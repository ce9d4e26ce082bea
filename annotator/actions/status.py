"""A study's state: open (arrivals), paused (no new arrivals; work in progress
may finish) or closed (no arrivals, no more ratings)."""

from __future__ import annotations

from django.db import transaction

from annotator.actions.audit import Action, audit
from annotator.actions.locks import lock_study
from annotator.errors import StudyError
from annotator.models import Item, Study
from users.models import User

STATUS_ACTIONS: dict[str, str] = {
    Study.Status.OPEN: Action.OPENED,
    Study.Status.PAUSED: Action.PAUSED,
    Study.Status.CLOSED: Action.CLOSED,
}


@transaction.atomic
def check_set_study_status(study: Study, status: str, actor: User | None = None) -> Study:
    """Open (or reopen), pause or close. Takes the study lock, refuses to open a
    study without items, then do_set_study_status."""
    if status not in STATUS_ACTIONS:
        raise StudyError(f"A study is open, paused or closed, not {status!r}.")
    study = lock_study(study)
    if status == Study.Status.OPEN and not Item.objects.filter(study=study).exists():
        raise StudyError(f"Study '{study.name}' has no items yet: build them first.")
    return do_set_study_status(study, status, actor)


def do_set_study_status(study: Study, status: str, actor: User | None = None) -> Study:
    """Set the status (nothing when it is so already) and audit the change.

    Needs the study lock (check_set_study_status takes it)."""
    if study.status == status:
        return study
    before = study.status
    study.status = status
    study.save(update_fields=["status"])
    audit(study, STATUS_ACTIONS[status], actor=actor, detail=f"was {before}")
    return study
