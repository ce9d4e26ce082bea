"""What happens to participants and their places: stale work released, a
researcher's exclusion and reinstatement, the quota refilled, Prolific's
returned and timed-out places released, a failed check."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotator.actions.audit import Action, audit
from annotator.actions.judgments import do_sync_rater_judgments
from annotator.actions.locks import lock_assignment, lock_participant, lock_study
from annotator.errors import StudyError
from annotator.models import Assignment, Participant, Study
from annotator.selectors import OUT, progress, task_loads
from users.models import User

if TYPE_CHECKING:
    from annotator.prolific_api import ProlificClient

# --- Stale work -------------------------------------------------------------------------------


@transaction.atomic
def check_release_stale(study: Study) -> int:
    """Release the study's stale work (periodic task, admin action). Takes the
    study lock, then do_release_stale."""
    return do_release_stale(lock_study(study))


def do_release_stale(study: Study, now: datetime | None = None) -> int:
    """Release active assignments older than the study's limit. Their ratings
    stay, marked incomplete by the assignment's status.

    Needs the study lock (check_release_stale, check_start_assignment and
    check_refill_quota take it)."""
    now = now or timezone.now()
    stale = Assignment.objects.filter(
        task__study=study,
        status=Assignment.Status.ACTIVE,
        started_at__lt=now - timedelta(minutes=study.stale_minutes),
    )
    released = 0
    for assignment in stale.select_related("participant"):
        assignment.status = Assignment.Status.TIMED_OUT
        assignment.save(update_fields=["status"])
        audit(
            study,
            Action.TIMED_OUT,
            participant=assignment.participant,
            detail=f"not finished within {study.stale_minutes} minutes",
        )
        released += 1
    return released


# --- A researcher's decisions -------------------------------------------------------------------


@transaction.atomic
def check_exclude_participant(participant: Participant, actor: User | None, reason: str) -> bool:
    """Exclude a participant: their ratings are kept but leave the analysis, and
    their place opens for a new arrival. Refuses an exclusion without a reason;
    takes the study lock (and the participant's row), then
    do_exclude_participant. Returns whether anything changed (not for one
    excluded already, or who failed a check: out for good)."""
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("Give a reason for the exclusion (it is kept in the audit log).")
    study = lock_study(participant.study_id)
    participant = lock_participant(participant)
    if participant.status != Participant.Status.ACCEPTED:
        return False
    do_exclude_participant(study, participant, actor, reason)
    return True


def do_exclude_participant(
    study: Study, participant: Participant, actor: User | None, reason: str
) -> None:
    """Needs the study lock and the participant's row (check_exclude_participant
    takes them)."""
    participant.status = Participant.Status.EXCLUDED
    participant.exclusion_reason = reason[:2000]
    participant.save(update_fields=["status", "exclusion_reason"])
    audit(study, Action.EXCLUDED, participant=participant, actor=actor, detail=reason)
    do_sync_rater_judgments(study, participant)


@transaction.atomic
def check_reinstate_participant(
    participant: Participant, actor: User | None, reason: str = ""
) -> bool:
    """Undo an exclusion. Takes the study lock (and the participant's row), then
    do_reinstate_participant. Returns whether anything changed."""
    study = lock_study(participant.study_id)
    participant = lock_participant(participant)
    if participant.status != Participant.Status.EXCLUDED:
        return False
    do_reinstate_participant(study, participant, actor, reason)
    return True


def do_reinstate_participant(
    study: Study, participant: Participant, actor: User | None, reason: str = ""
) -> None:
    """The participant counts again toward their task's quota, which may then
    hold more than wanted (said in the audit log).

    Needs the study lock and the participant's row (check_reinstate_participant
    takes them)."""
    participant.status = Participant.Status.ACCEPTED
    participant.exclusion_reason = ""
    participant.save(update_fields=["status", "exclusion_reason"])
    assignment = Assignment.objects.filter(participant=participant).first()
    note = (reason or "").strip()
    if assignment is not None:
        load = task_loads(study).get(assignment.task_id, 0)
        if load > study.raters_per_task:
            note = f"{note} (task {assignment.task.label} now has {load} raters)".strip()
    audit(study, Action.REINSTATED, participant=participant, actor=actor, detail=note)
    do_sync_rater_judgments(study, participant)


def do_mark_failed_check(participant: Participant) -> None:
    """A participant given the failed-check code: out of the analysis for good
    (not 'accepted', never reinstated).

    Needs the study lock (check_complete_assignment takes it) or, after the
    qualification round, the participant's assignment lock (check_rate_item
    takes it)."""
    participant.status = Participant.Status.FAILED_CHECK
    participant.save(update_fields=["status"])


# --- Places -----------------------------------------------------------------------------------


def prolific_places_wanted(study: Study, tasks: int) -> int:
    """The places the study needs on Prolific: every task's raters, plus one for
    each excluded or unqualified participant (Prolific reopens returned and
    timed-out places itself, but theirs stay used)."""
    given_back = [Assignment.Status.RETURNED, Assignment.Status.TIMED_OUT]
    replaced = (
        Assignment.objects.filter(task__study=study)
        .filter(Q(participant__status__in=OUT) | Q(status=Assignment.Status.NOT_QUALIFIED))
        .exclude(status__in=given_back)
        .count()
    )
    return tasks * study.raters_per_task + replaced


@transaction.atomic
def check_refill_quota(
    study: Study, actor: User | None = None, client: ProlificClient | None = None
) -> dict[str, int]:
    """Make room for replacements of excluded, released and unqualified
    participants. Takes the study lock, then do_refill_quota."""
    return do_refill_quota(lock_study(study), actor, client)


def do_refill_quota(
    study: Study, actor: User | None = None, client: ProlificClient | None = None
) -> dict[str, int]:
    """Release stale work, and on Prolific (with a client) raise the study's places
    so that every task can reach its wanted raters.

    Needs the study lock (check_refill_quota takes it)."""
    released = do_release_stale(study)
    rows = progress(study)
    open_places = sum(row.open_places for row in rows)
    result = {"released": released, "open_places": open_places, "prolific_places": 0}
    if client is not None and study.prolific_study_id:
        places = prolific_places_wanted(study, len(rows))
        client.set_places(study.prolific_study_id, places)
        result["prolific_places"] = places
    audit(
        study,
        Action.QUOTA_REFILLED,
        actor=actor,
        detail=", ".join(f"{k} {v}" for k, v in result.items()),
    )
    return result


@transaction.atomic
def check_mark_returned(study: Study, pid: str, status: str) -> bool:
    """Prolific says a participant returned the study or timed out: release
    their place. Takes the study lock, then the active assignment's (none:
    False), then do_mark_returned."""
    study = lock_study(study)
    found = (
        Assignment.objects.filter(
            participant__study=study, participant__prolific_pid=pid, status=Assignment.Status.ACTIVE
        )
        .select_related("participant")
        .first()
    )
    if found is None:
        return False
    do_mark_returned(study, lock_assignment(found.pk), status)
    return True


def do_mark_returned(study: Study, assignment: Assignment, status: str) -> None:
    """`status` is Prolific's ("RETURNED", or "TIMED-OUT").

    Needs the study lock, then the assignment's (check_mark_returned takes them)."""
    assignment.status = (
        Assignment.Status.RETURNED if status == "RETURNED" else Assignment.Status.TIMED_OUT
    )
    assignment.save(update_fields=["status"])
    audit(study, Action.RELEASED, participant=assignment.participant, detail=f"Prolific: {status}")
