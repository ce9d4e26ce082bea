"""A participant arrives, or comes back: a task (or their own one again), the
browser and Prolific session that may take it up, a researcher's allowance of
another device. Who may take up work again is explained in
annotator.selectors (`admissible`)."""

from __future__ import annotations

import random
import re
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from annotator.actions.audit import Action, audit
from annotator.actions.locks import lock_assignment, lock_participant, lock_study
from annotator.actions.participants import do_release_stale
from annotator.errors import QuotaFull, SessionRefused, StudyError
from annotator.gold import grouped_by_meeting, item_meetings
from annotator.models import Assignment, Item, Participant, Study, Task
from annotator.selectors import (
    admissible,
    find_arrival,
    is_full,
    may_continue,
    pick_task,
    task_loads,
)
from annotator.signals import quota_filled
from users.models import User

PROLIFIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
OTHER_DEVICE_HOURS = 24  # how long a researcher's "allow another device" waits to be used
MAX_BROWSERS = 10  # browsers remembered per assignment (a participant has one or two)


def validate_prolific_id(pid: str) -> str:
    """The PROLIFIC_PID of a study link, stripped; refused when it is not one."""
    pid = (pid or "").strip()
    if not PROLIFIC_ID.match(pid):
        raise StudyError("This link must be opened from Prolific: it lacks a valid PROLIFIC_PID.")
    return pid


def validate_can_arrive(study: Study) -> None:
    """New participants may arrive only while the study is open."""
    if study.status == Study.Status.PAUSED:
        raise StudyError(
            "This study is paused and takes no new participants right now. Please return it "
            "on Prolific; thank you."
        )
    if study.status != Study.Status.OPEN:
        raise StudyError("This study is closed. Please return it on Prolific; thank you.")
    if not Item.objects.filter(study=study).exists():
        raise StudyError("This study has no items yet.")


# --- A task for an arrival ----------------------------------------------------------------------


@transaction.atomic
def check_start_assignment(
    study: Study,
    *,
    pid: str = "",
    user: User | None = None,
    prolific_study_id: str = "",
    session_id: str = "",
    browser: str | None = None,
) -> Assignment:
    """Give an arriving participant a task, or their own one back. Takes the study lock,
    so that two arrivals at once cannot both take the last place of a task; then
    do_note_return (their own work), do_reopen_assignment (their released work)
    or do_start_assignment (a new place).

    `browser` (the participant pages pass it: `browser_key` of the session) is
    remembered on new work; a returning PROLIFIC_PID is then given its work only
    if `admissible` (SessionRefused otherwise, with nothing changed: the page
    calls `check_admit_return` first, which audits a refusal; this check covers
    two arrivals with one PID at once). Without it (gold annotators, signed in;
    scripts and tests) the caller vouches for the arrival."""
    study = lock_study(study)
    arrival = find_arrival(study, pid=pid, user=user)
    if arrival.state == "excluded":
        raise StudyError("You can no longer take part in this study. Thank you for your time.")
    returning = arrival.assignment
    if (
        browser is not None
        and returning is not None
        and not admissible(lock_assignment(returning.pk), session_id, browser)
    ):
        raise SessionRefused(assignment_id=returning.pk)
    if returning is not None and arrival.state in ("resume", "completed", "unqualified"):
        if arrival.state == "resume" and not may_continue(study):
            validate_can_arrive(study)
        do_note_return(study, returning, session_id)
        return returning
    validate_can_arrive(study)
    do_release_stale(study)
    if returning is not None and arrival.state == "timed_out":
        do_note_return(study, returning, session_id)
        return do_reopen_assignment(study, returning)
    task = pick_task(study)
    if task is None:
        raise QuotaFull(
            "All places in this study are taken. Please return it on Prolific; thank you."
        )
    return do_start_assignment(
        study,
        task,
        pid=pid,
        user=user,
        prolific_study_id=prolific_study_id,
        session_id=session_id,
        browser=browser,
    )


def do_start_assignment(
    study: Study,
    task: Task,
    *,
    pid: str = "",
    user: User | None = None,
    prolific_study_id: str = "",
    session_id: str = "",
    browser: str | None = None,
) -> Assignment:
    """A new participant on `task`, with their own order of its items.

    Needs the study lock, and a task with room (check_start_assignment takes the
    lock and picks the task)."""
    participant = Participant.objects.create(study=study, prolific_pid=pid, user=user)
    seed = secrets.randbits(62)
    item_order = _item_order(study, task, seed)
    assignment = Assignment.objects.create(
        participant=participant,
        task=task,
        item_order=item_order,
        shuffle_seed=seed,
        swapped_item_ids=_swapped_items(task, item_order) if study.is_pairwise else [],
        prolific_study_id=prolific_study_id[:64],
        prolific_session_id=session_id[:64],
        browsers=[browser] if browser else [],
    )
    audit(study, Action.ASSIGNED, participant=participant, detail=f"task {task.label}")
    if is_full(study):  # the task had room: this place was the last
        quota_filled.send(sender=Study, study_id=study.pk)
    return assignment


def _item_order(study: Study, task: Task, seed: int) -> list[int]:
    """Practice items first, in their given order; the rest shuffled with `seed`.
    A gold study's one task spans every meeting: its items come meeting by
    meeting, shuffled within each (annotator.gold.grouped_by_meeting), so
    that the expert reads one transcript at a time."""
    items = list(task.items.values_list("pk", "kind").order_by("pk"))
    practice = [pk for pk, kind in items if kind == Item.Kind.PRACTICE]
    rest = [pk for pk, kind in items if kind != Item.Kind.PRACTICE]
    if study.kind == Study.Kind.GOLD:
        meetings = item_meetings(rest)
        return practice + grouped_by_meeting(
            [(pk, meetings.get(pk, "")) for pk in rest], random.Random(seed)
        )
    random.Random(seed).shuffle(rest)
    return practice + rest


def _swapped_items(task: Task, item_order: list[int]) -> list[int]:
    """Pairwise: which items this participant sees with the answers swapped.

    The k-th participant of a task sees item i swapped when (k + i) is odd, so
    each item's two orders alternate across raters (balanced up to one)."""
    k = Assignment.objects.filter(task=task).count()
    return [pk for pk in sorted(item_order) if (k + pk) % 2 == 1]


def do_note_return(study: Study, assignment: Assignment, session_id: str) -> None:
    """A participant came back with another Prolific SESSION_ID: record it for the
    researcher (same person id, another submission: worth a look).

    Needs the study lock (check_start_assignment and check_admit_return take it);
    takes the assignment's lock itself to add a SESSION_ID."""
    session_id = (session_id or "")[:64]
    if not session_id or session_id == assignment.prolific_session_id:
        return
    if not assignment.prolific_session_id:
        Assignment.objects.filter(pk=assignment.pk).update(prolific_session_id=session_id)
        assignment.prolific_session_id = session_id
        return
    if session_id in assignment.other_session_ids:
        return
    assignment = lock_assignment(assignment.pk)
    assignment.other_session_ids = [*assignment.other_session_ids, session_id]
    assignment.save(update_fields=["other_session_ids"])
    audit(
        study,
        Action.SESSION_CHANGED,
        participant=assignment.participant,
        detail=f"first {assignment.prolific_session_id}, now {session_id}",
    )


def do_reopen_assignment(study: Study, assignment: Assignment) -> Assignment:
    """A participant whose work was released comes back: they continue if
    their task still has room, so none of their ratings is wasted (a StudyError
    when it has none).

    Needs the study lock (check_start_assignment takes it); takes the
    assignment's lock itself."""
    load = task_loads(study).get(assignment.task_id, 0)
    if load >= study.raters_per_task:
        raise StudyError(
            "Your time for this study ran out and your place was given to someone else. "
            "Please return the study on Prolific; your ratings so far are kept."
        )
    assignment = lock_assignment(assignment.pk)
    assignment.status = Assignment.Status.ACTIVE
    assignment.started_at = timezone.now()
    assignment.save(update_fields=["status", "started_at"])
    audit(study, Action.REOPENED, participant=assignment.participant)
    return assignment


# --- Who may take up work again -----------------------------------------------------------------


@transaction.atomic
def check_admit_return(assignment: Assignment, session_id: str, browser: str) -> bool:
    """May a returning PROLIFIC_PID take up its work in this browser? Takes the
    study lock, then the assignment's; then do_admit_return, or
    do_refuse_return (committed: a refusal is an answer, not an error)."""
    study = lock_study(assignment.task.study_id)
    assignment = lock_assignment(assignment.pk)
    how = admissible(assignment, session_id, browser)
    if not how:
        do_refuse_return(study, assignment, session_id)
        return False
    do_admit_return(study, assignment, how, session_id, browser)
    return True


def _shown(session_id: str) -> str:
    return (session_id or "").strip()[:64] or "(none)"


def do_refuse_return(study: Study, assignment: Assignment, session_id: str) -> None:
    """Nothing changes but an audit event.

    Needs the study lock, then the assignment's (check_admit_return takes them)."""
    audit(
        study,
        Action.SESSION_REFUSED,
        participant=assignment.participant,
        detail=f"SESSION_ID {_shown(session_id)} from a browser that did not consent "
        f"(first SESSION_ID: {assignment.prolific_session_id or '(none)'})",
    )


def do_admit_return(
    study: Study, assignment: Assignment, how: str, session_id: str, browser: str
) -> None:
    """Admitted (`how`: what `admissible` answered): the browser is remembered, a
    new SESSION_ID recorded (do_note_return), a researcher's allowance used up.

    Needs the study lock, then the assignment's (check_admit_return takes them)."""
    changed = []
    if how == "other_device":
        assignment.other_device_allowed_until = None
        changed.append("other_device_allowed_until")
        audit(
            study,
            Action.OTHER_DEVICE_USED,
            participant=assignment.participant,
            detail=f"SESSION_ID {_shown(session_id)}",
        )
    if browser and browser not in assignment.browsers:
        assignment.browsers = [*assignment.browsers, browser][-MAX_BROWSERS:]
        changed.append("browsers")
    if changed:
        assignment.save(update_fields=changed)
    do_note_return(study, assignment, session_id)


@transaction.atomic
def check_allow_other_device(
    participant: Participant, actor: User | None, reason: str = ""
) -> bool:
    """Let a crowd participant take up their work once from another browser, with
    any SESSION_ID, within OTHER_DEVICE_HOURS (for one who switched device and
    whose Prolific session changed). Takes the study lock (and the
    participant's row), refuses a gold annotator, an excluded participant or
    one without a task, takes the assignment's lock, then
    do_allow_other_device. Returns True (a second call renews the window)."""
    study = lock_study(participant.study_id)
    participant = lock_participant(participant)
    if participant.user_id is not None:
        raise StudyError(
            f"{participant} is a gold annotator: they sign in, on any device; nothing to allow."
        )
    if participant.status == Participant.Status.EXCLUDED:
        raise StudyError(f"{participant} is excluded: reinstate them first.")
    found = Assignment.objects.filter(participant=participant).first()
    if found is None:
        raise StudyError(f"{participant} has no task in this study yet.")
    do_allow_other_device(study, participant, lock_assignment(found.pk), actor, reason)
    return True


def do_allow_other_device(
    study: Study,
    participant: Participant,
    assignment: Assignment,
    actor: User | None,
    reason: str = "",
) -> None:
    """Needs the study lock, then the assignment's (check_allow_other_device
    takes them)."""
    until = timezone.now() + timedelta(hours=OTHER_DEVICE_HOURS)
    assignment.other_device_allowed_until = until
    assignment.save(update_fields=["other_device_allowed_until"])
    note = (reason or "").strip()[:2000]
    audit(
        study,
        Action.OTHER_DEVICE_ALLOWED,
        participant=participant,
        actor=actor,
        detail=f"once, until {until:%Y-%m-%d %H:%M} UTC" + (f": {note}" if note else ""),
    )
