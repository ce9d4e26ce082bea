"""State changes of human studies. Views, admin, API and tasks only call these.

One discipline (Zulip's `zerver/actions` style): each change is one atomic
function that validates, takes its lock, changes, and writes an AuditEvent in
the same transaction.

Locks, always in this order, so that no two changes can deadlock:
1. the study's row (`lock_study`): every change of the study, its
   participants, assignments, and the judgments its ratings become;
2. then one assignment's row (`_lock_assignment`).
A rating (`submit_rating`) takes only its assignment's row: it changes no
state that another rater's work depends on, and the assignment's status that
completion, exclusion and release change is read under that lock. Functions
whose name starts with `_` or that say "caller holds the study lock" must only
be called with the lock held.

Judgments are kept equal to "the ratings of accepted participants whose work
is complete" rater by rater (`sync_rater_judgments`): a change touches only the
rows of the rater it concerns, never the whole study's.
"""

from __future__ import annotations

import math
import random
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotator import defaults
from annotator.gold import grouped_by_meeting, item_meetings
from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study, Task
from config.errors import Conflict, Invalid
from config.words import count
from corpus.models import Document, QuestionText
from generation.models import GenerationRun, Response
from judging import scores
from judging.models import Evaluator, Judgment, PairwiseVerdict

PROLIFIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
OTHER_DEVICE_HOURS = 24  # how long a researcher's "allow another device" waits to be used
MAX_BROWSERS = 10  # browsers remembered per assignment (a participant has one or two)
MAX_SECONDS_PER_VISIT = 3600.0
MAX_COMMENT = 2000
HUMAN_VERDICT_SEED = 0  # PairwiseVerdict.seed of human raters (LLM judges use their seed)

# What a study rates and how: frozen once anyone has rated (a correction is a new study).
SELECTION_FIELDS = (
    "kind",
    "rating_type",
    "dataset",
    "mode",
    "seed",
    "systems",
    "baseline_system",
    "documents",
    "responses",
    "attention_checks",
    "practice_items",
    "practice_pass",
    "scale_max",
    "scale_labels",
    "rubric",
    "guidelines",
)
Action = AuditEvent.Action


class StudyError(Invalid):
    """Something a user can understand and act on; the message says what."""

    code = "study_refused"
    http_status = 400


class StudyConflict(StudyError, Conflict):
    """The change contradicts stored human data (the API answers 409)."""

    code = "study_conflict"
    http_status = 409


class QuotaFull(StudyError, Conflict):
    code = "study_full"
    http_status = 409


class SessionRefused(StudyError):
    """A PROLIFIC_PID that has work here, from a browser that did not consent and
    with another (or no) SESSION_ID: the work stays its owner's."""

    code = "session_refused"
    http_status = 403

    def __init__(self, message: str = "", assignment_id: int | None = None):
        super().__init__(message or SESSION_REFUSED_TEXT)
        self.assignment_id = assignment_id


SESSION_REFUSED_TEXT = (
    "This Prolific ID already has work in this study, started in another browser and "
    "another Prolific session, so it cannot be opened here. Please continue in the browser "
    "you started in. If you switched device, message the researchers on Prolific: they can "
    "let you continue here."
)


def audit(study: Study, action: str, *, participant=None, actor=None, detail: str = "") -> None:
    AuditEvent.objects.create(
        study=study, participant=participant, actor=actor, action=action, detail=detail
    )


def lock_study(study: Study | int) -> Study:
    """Take the study's row lock (SELECT ... FOR UPDATE) and return the study as
    stored now. A Study instance passed in is refreshed in place, so the caller's
    object never holds stale state that a later save() would write back.

    Must run inside a transaction; every state change below starts with it."""
    locking = Study.objects.select_for_update()
    if isinstance(study, Study):
        study.refresh_from_db(from_queryset=locking)
        return study
    return locking.get(pk=study)


def _lock_assignment(pk: int) -> Assignment:
    """Caller holds the study lock (or only this lock, for a rating)."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("participant", "task")
        .get(pk=pk)
    )


def has_ratings(study: Study) -> bool:
    return Rating.objects.filter(item__study=study).exists()


def why_items_are_frozen(study: Study) -> str:
    """Why what the study rates can no longer change ("" while it may): someone
    rated, or someone arrived (an assignment holds its task and its own order of
    the items, so a rebuild would pull the work from under them; the database's
    PROTECT refuses too)."""
    if has_ratings(study):
        return "already has ratings"
    arrived = Assignment.objects.filter(task__study=study).count()
    if arrived:
        return f"has {arrived} participant{'s' if arrived != 1 else ''} with a task"
    return ""


# --- Study settings ---------------------------------------------------------------------------


def check_settings(study: Study) -> None:
    """Refuse settings a study cannot run with; the message names what is wrong."""
    if study.raters_per_task is None or study.raters_per_task < 1:
        raise StudyError("Raters per task must be at least 1.")
    needs_failed_code = study.attention_checks or bool(study.practice_items)
    if needs_failed_code and not (study.failed_attention_code or "").strip():
        raise StudyError(
            "With attention checks or a qualification round, set a failed-check completion "
            "code: participants who fail get it instead of the normal code."
        )
    if needs_failed_code and study.failed_attention_code == study.completion_code:
        raise StudyError("The failed-check code must differ from the completion code.")
    if study.scale_labels and len(study.scale_labels) != study.scale_max:
        raise StudyError(
            f"Give one label per point of the 1-{study.scale_max} scale "
            f"({len(study.scale_labels)} given), or none."
        )
    if study.scale_labels and not all(isinstance(x, str) for x in study.scale_labels):
        raise StudyError("Scale labels are a list of texts, lowest point first.")
    if study.is_pairwise and study.baseline_system_id is None:
        raise StudyError("A pairwise study needs a baseline system to compare with.")
    if study.is_pairwise and study.scale_max != 10:
        raise StudyError("A pairwise study has no rating scale: leave the scale at 1-10.")
    if study.is_pairwise and (study.attention_checks or study.practice_items):
        raise StudyError(
            "Attention checks and practice items are for rubric studies; a pairwise study "
            "cannot use them yet."
        )
    check_practice_items(study.practice_items, study.practice_pass, study.scale_max)


def check_practice_items(items, pass_count: int, scale_max: int = 10) -> None:
    if not isinstance(items, list):
        raise StudyError("Practice items are a list of objects.")
    for number, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise StudyError(f"Practice item {number} is not an object.")
        missing = [
            k
            for k in ("question", "correct_answer", "answer", "expected_min", "expected_max")
            if k not in item
        ]
        if missing:
            raise StudyError(f"Practice item {number} lacks {', '.join(missing)}.")
        for key in ("question", "correct_answer", "answer", "feedback", "other_answer"):
            if key in item and (not isinstance(item[key], str) or "\x00" in item[key]):
                raise StudyError(f"Practice item {number}: {key} must be text.")
        low, high = item["expected_min"], item["expected_max"]
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high <= scale_max):
            raise StudyError(
                f"Practice item {number}: expected_min and expected_max are whole scores "
                f"on the study's scale, 1 <= min <= max <= {scale_max}."
            )
    if pass_count > len(items):
        raise StudyError(
            f"The pass threshold ({pass_count}) is higher than the number of practice items "
            f"({len(items)})."
        )
    if items and pass_count < 1:
        raise StudyError("With practice items, set how many must be passed (at least 1).")


def documents_outside(dataset, documents) -> list[str]:
    """The chosen meetings that do not belong to the dataset's benchmark and split."""
    return sorted(
        d.external_id
        for d in documents
        if d.benchmark_id != dataset.benchmark_id or d.split != dataset.split
    )


def documents_for(dataset) -> Document:
    return Document.objects.filter(benchmark_id=dataset.benchmark_id, split=dataset.split)


def frozen_changes(study: Study, changed: list[str]) -> list[str]:
    return [f for f in SELECTION_FIELDS if f in changed]


def check_study_change(
    stored: Study | None, values: dict, systems, documents, changed: list[str]
) -> None:
    """Everything save_study would refuse, checked before saving (forms and the
    API call it): `values` are the new field values (many-to-many apart),
    `systems` and `documents` the new selection, `changed` the changed fields."""
    candidate = Study(
        **{
            f.attname: getattr(stored, f.attname)
            for f in Study._meta.concrete_fields
            if stored is not None
        }
    )
    for key, value in values.items():
        if key not in ("systems", "documents"):
            setattr(candidate, key, value)
    check_settings(candidate)
    reason = why_items_are_frozen(stored) if stored is not None and stored.pk is not None else ""
    frozen = frozen_changes(candidate, changed)
    if reason and frozen:
        raise StudyConflict(
            f"This study {reason}, so what it rates and how cannot change "
            f"({', '.join(frozen)}). Create a new study instead."
        )
    if not reason and (stored is None or stored.pk is None or frozen):
        selection(candidate, systems, documents)
    elif "gold_evaluator" in changed:
        check_gold_covers(candidate, set(stored.items.values_list("response_id", flat=True)))


@transaction.atomic
def save_study(study: Study, changed: list[str], *, actor=None, after_save=None) -> Study:
    """Save a new or changed study and (re)build its items while nobody has rated.
    Takes the study lock (of a stored study) before anything else.

    `changed` names the fields the caller changed; `after_save(study)` sets
    many-to-many fields. Refused, with nothing saved: invalid settings, a
    selection with no responses, and any change of what is rated once there
    are ratings (StudyConflict)."""
    check_settings(study)
    creating = study.pk is None
    if not creating:
        # by pk: `study` holds the unsaved changes
        reason = why_items_are_frozen(lock_study(study.pk))
        frozen = frozen_changes(study, changed)
        if reason and frozen:
            raise StudyConflict(
                f"Study '{study.name}' {reason}, so what it rates and how "
                f"cannot change ({', '.join(frozen)}). Create a new study instead."
            )
    study.save()
    if after_save is not None:
        after_save(study)
    outside = documents_outside(study.dataset, study.documents.all())
    if outside:
        raise StudyError(
            f"These meetings are not in {study.dataset}: {', '.join(outside)}. "
            "Choose meetings of the study's dataset."
        )
    if study.evaluator_id is not None and "name" in changed:
        _relabel_evaluator(study)
    if creating or frozen_changes(study, changed):
        build_items(study, actor=actor)
    elif "gold_evaluator" in changed:
        check_gold_covers(
            study, set(Item.objects.filter(study=study).values_list("response_id", flat=True))
        )
    if not creating and changed:
        audit(study, Action.CHANGED, actor=actor, detail=", ".join(sorted(changed)))
    return study


def _unique_evaluator_name(study: Study) -> str:
    name = study.evaluator_name
    taken = Evaluator.objects.filter(name=name)
    if study.evaluator_id:
        taken = taken.exclude(pk=study.evaluator_id)
    return f"{name} #{study.pk}" if taken.exists() else name


def _relabel_evaluator(study: Study) -> None:
    """The evaluator's name is only a label: renaming a study renames it, and no
    judgment moves (they hang on the foreign key)."""
    evaluator = study.evaluator
    evaluator.name = _unique_evaluator_name(study)
    evaluator.save(update_fields=["name"])


def ensure_evaluator(study: Study) -> Evaluator:
    """The study's evaluator, created once and tied by foreign key. Caller holds the lock."""
    if study.evaluator_id is not None:
        return study.evaluator
    kind = (
        Evaluator.Kind.GOLD_HUMAN if study.kind == Study.Kind.GOLD else Evaluator.Kind.CROWD_HUMAN
    )
    evaluator = Evaluator.objects.create(
        name=_unique_evaluator_name(study),
        kind=kind,
        origin=Evaluator.Origin.CONCORD,
        description=f"Ratings of study #{study.pk}.",
        config={"study_id": study.pk, "rating_type": study.rating_type},
    )
    study.evaluator = evaluator
    Study.objects.filter(pk=study.pk).update(evaluator=evaluator)
    return evaluator


# --- Building a study's items ---------------------------------------------------------------


def _runs(study: Study, systems) -> dict[int, GenerationRun]:
    runs = GenerationRun.objects.filter(
        dataset=study.dataset, mode=study.mode, system__in=systems
    ).filter(Q(seed=study.seed) if study.seed is not None else Q(seed__isnull=True))
    found = {run.system_id: run for run in runs}
    missing = [s.name for s in systems if s.pk not in found]
    if missing:
        raise StudyError(
            f"No {study.get_mode_display().lower()} run on {study.dataset} "
            f"(seed {study.seed if study.seed is not None else 'none'}) for: {', '.join(missing)}."
        )
    return found


def _selected_responses(study: Study, systems, documents) -> list[Response]:
    runs = _runs(study, systems)
    responses = Response.objects.filter(run__in=runs.values()).select_related(
        "question__document", "run__system"
    )
    if documents:
        responses = responses.filter(question__document__in=documents)
    if study.pk is not None and study.responses.exists():
        responses = responses.filter(pk__in=study.responses.values("pk"))
    responses = list(
        responses.order_by(
            "question__document__external_id", "question__order", "run__system__name"
        )
    )
    if not responses:
        chosen = ", ".join(d.external_id for d in documents) if documents else "any meeting"
        raise StudyError(
            f"The selection holds no responses: the {study.mode} runs of "
            f"{', '.join(s.name for s in systems)} on {study.dataset} have none for {chosen}."
        )
    return responses


def selection(study: Study, systems, documents) -> tuple[list[Response], dict[int, Response]]:
    """The responses a study with these settings would rate, and in a pairwise
    study the baseline's response to each question. Raises StudyError naming
    what does not match; writes nothing (forms call it before saving)."""
    systems, documents = list(systems), list(documents)
    if not systems:
        raise StudyError("Select at least one system.")
    outside = documents_outside(study.dataset, documents)
    if outside:
        raise StudyError(
            f"These meetings are not in {study.dataset}: {', '.join(outside)}. "
            "Choose meetings of the study's dataset."
        )
    opponents: dict[int, Response] = {}
    if study.is_pairwise:
        baseline = study.baseline_system
        systems = [s for s in systems if s.pk != baseline.pk]
        if not systems:
            raise StudyError("Select at least one system besides the baseline.")
        opponents = {r.question_id: r for r in _selected_responses(study, [baseline], documents)}
    responses = _selected_responses(study, systems, documents)
    if study.is_pairwise:
        unmatched = [r for r in responses if r.question_id not in opponents]
        if unmatched:
            raise StudyError(
                f"The baseline {study.baseline_system} has no answer to {len(unmatched)} of the "
                f"selected questions (e.g. {unmatched[0].question})."
            )
    check_gold_covers(study, {r.pk for r in responses})
    return responses, opponents


def check_gold_covers(study: Study, response_ids: set[int]) -> None:
    if study.gold_evaluator_id is None:
        return
    scored = Judgment.objects.filter(
        evaluator_id=study.gold_evaluator_id, response_id__in=response_ids
    ).exists()
    if not scored:
        raise StudyError(
            f"The gold evaluator '{study.gold_evaluator}' has no scores on this selection, so "
            "quality control could not compare anyone with it. Choose another gold evaluator "
            "or none."
        )


@transaction.atomic
def build_items(study: Study, actor=None) -> dict[str, int]:
    """(Re)build the study's tasks and items from its selection. Takes the study lock.

    Refused (StudyConflict, the API's 409) once anyone has arrived or rated:
    changing what was rated would make the collected ratings meaningless, and
    a participant's task holds their own order of its items."""
    study = lock_study(study)
    if reason := why_items_are_frozen(study):
        raise StudyConflict(
            f"Study '{study.name}' {reason}, so its items cannot change. "
            "Create a new study for a different selection."
        )
    check_settings(study)
    responses, opponents = selection(study, study.systems.all(), study.documents.all())
    wording = {
        qt.question_id: qt
        for qt in QuestionText.objects.filter(
            dataset=study.dataset, question_id__in={r.question_id for r in responses}
        )
    }
    Item.objects.filter(study=study).delete()
    Task.objects.filter(study=study).delete()
    tasks: dict[int | None, Task] = {}
    if study.kind == Study.Kind.GOLD:
        tasks[None] = Task.objects.create(study=study, label="all meetings")
    else:
        for document in sorted(
            {r.question.document for r in responses}, key=lambda d: d.external_id
        ):
            tasks[document.pk] = Task.objects.create(
                study=study, document=document, label=document.external_id
            )
    items = []
    for response in responses:
        text = wording[response.question_id]
        opponent = opponents.get(response.question_id)
        items.append(
            Item(
                study=study,
                task=tasks[
                    None if study.kind == Study.Kind.GOLD else response.question.document_id
                ],
                response=response,
                opponent=opponent,
                question=text.text,
                correct_answer=text.reference_answer,
                answer=response.text,
                other_answer=opponent.text if opponent else "",
            )
        )
    for task in tasks.values():
        for check in defaults.ATTENTION_CHECKS if study.attention_checks else ():
            items.append(Item(study=study, task=task, kind=Item.Kind.ATTENTION, **check))
        for practice in study.practice_items:
            items.append(
                Item(
                    study=study,
                    task=task,
                    kind=Item.Kind.PRACTICE,
                    question=practice["question"],
                    correct_answer=practice["correct_answer"],
                    answer=practice["answer"],
                    other_answer=practice.get("other_answer", ""),
                    expected_min=practice["expected_min"],
                    expected_max=practice["expected_max"],
                    feedback=practice.get("feedback", ""),
                )
            )
    Item.objects.bulk_create(items)
    ensure_evaluator(study)
    audit(
        study,
        Action.BUILD_ITEMS,
        actor=actor,
        detail=f"{count(len(tasks), 'task')}, {count(len(items), 'item')} "
        f"({count(len(responses), 'response')})",
    )
    return {"tasks": len(tasks), "items": len(items), "responses": len(responses)}


@transaction.atomic
def delete_study(study: Study, actor=None) -> None:
    """Delete a study nobody has taken part in, with its items and its (empty)
    evaluator. Takes the study lock. A study with participants is closed instead."""
    study = lock_study(study)
    if Participant.objects.filter(study=study).exists():
        raise StudyConflict(
            f"Study '{study.name}' has participants, so it cannot be deleted; close it instead."
        )
    evaluator_id = study.evaluator_id
    study.delete()
    if evaluator_id is not None:
        evaluator = Evaluator.objects.get(pk=evaluator_id)
        if not evaluator.judgments.exists() and not evaluator.verdicts.exists():
            evaluator.delete()


# --- Study states ------------------------------------------------------------------------------

STATUS_ACTIONS = {
    Study.Status.OPEN: Action.OPENED,
    Study.Status.PAUSED: Action.PAUSED,
    Study.Status.CLOSED: Action.CLOSED,
}


@transaction.atomic
def set_study_status(study: Study, status: str, actor=None) -> Study:
    """Open (or reopen), pause (no new arrivals; work in progress may finish) or
    close (no arrivals, no more ratings). Takes the study lock."""
    if status not in STATUS_ACTIONS:
        raise StudyError(f"A study is open, paused or closed, not {status!r}.")
    study = lock_study(study)
    if status == Study.Status.OPEN and not Item.objects.filter(study=study).exists():
        raise StudyError(f"Study '{study.name}' has no items yet: build them first.")
    if study.status == status:
        return study
    before = study.status
    study.status = status
    study.save(update_fields=["status"])
    audit(study, STATUS_ACTIONS[status], actor=actor, detail=f"was {before}")
    return study


def set_study_open(study: Study, is_open: bool, actor=None) -> Study:
    return set_study_status(study, Study.Status.OPEN if is_open else Study.Status.CLOSED, actor)


# --- Arrival and assignment -----------------------------------------------------------------


def release_stale(study: Study, now=None) -> int:
    """Release active assignments older than the study's limit; caller holds the
    study lock. Their ratings stay, marked incomplete by the assignment's status."""
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


@transaction.atomic
def release_stale_work(study: Study) -> int:
    """release_stale with the study lock taken (periodic task, admin action)."""
    return release_stale(lock_study(study))


# Participants whose ratings do not count: excluded by a researcher, or given
# the failed-check code.
OUT = (Participant.Status.EXCLUDED, Participant.Status.FAILED_CHECK)
COUNTING = Q(
    assignments__status__in=[Assignment.Status.ACTIVE, Assignment.Status.COMPLETED],
    assignments__participant__status=Participant.Status.ACCEPTED,
)


def task_loads(study: Study) -> dict[int, int]:
    """Per task: participants with active work plus accepted ones who completed.

    Excluded participants, released work (timed out, returned) and those who
    failed the qualification round do not count, so new arrivals replace them."""
    return dict(
        Task.objects.filter(study=study)
        .annotate(load=Count("assignments", filter=COUNTING, distinct=True))
        .values_list("pk", "load")
    )


@dataclass
class TaskProgress:
    task_id: int
    label: str
    items: int
    active: int
    completed: int  # accepted participants who completed (distinct people)
    excluded: int  # excluded by a researcher or given the failed-check code
    released: int
    wanted: int

    @property
    def open_places(self) -> int:
        return max(0, self.wanted - self.active - self.completed)


def progress(study: Study) -> list[TaskProgress]:
    """Per task, in participants (each counted once), from one query."""
    status = "assignments__status"
    accepted = Q(assignments__participant__status=Participant.Status.ACCEPTED)
    excluded = Q(assignments__participant__status__in=OUT)
    tasks = (
        Task.objects.filter(study=study)
        .annotate(
            n_items=Count("items", distinct=True),
            n_active=Count(
                "assignments",
                filter=Q(**{status: Assignment.Status.ACTIVE}) & accepted,
                distinct=True,
            ),
            n_completed=Count(
                "assignments",
                filter=Q(**{status: Assignment.Status.COMPLETED}) & accepted,
                distinct=True,
            ),
            n_excluded=Count("assignments", filter=excluded, distinct=True),
            n_released=Count(
                "assignments",
                filter=Q(
                    **{
                        f"{status}__in": [
                            Assignment.Status.TIMED_OUT,
                            Assignment.Status.RETURNED,
                            Assignment.Status.NOT_QUALIFIED,
                        ]
                    }
                )
                & accepted,
                distinct=True,
            ),
        )
        .order_by("label")
    )
    return [
        TaskProgress(
            t.pk,
            t.label,
            t.n_items,
            t.n_active,
            t.n_completed,
            t.n_excluded,
            t.n_released,
            study.raters_per_task,
        )
        for t in tasks
    ]


def pick_task(study: Study) -> Task | None:
    """The task with the fewest counting raters and room left (ties: the first).

    Participants never get two tasks of one study, so there is no 'not yet
    done by this participant' condition beyond the participant being new."""
    loads = task_loads(study)
    open_tasks = [(load, pk) for pk, load in loads.items() if load < study.raters_per_task]
    if not open_tasks:
        return None
    return Task.objects.get(pk=min(open_tasks)[1])


def check_prolific_id(pid: str) -> str:
    pid = (pid or "").strip()
    if not PROLIFIC_ID.match(pid):
        raise StudyError("This link must be opened from Prolific: it lacks a valid PROLIFIC_PID.")
    return pid


def check_can_arrive(study: Study) -> None:
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


def may_continue(study: Study) -> bool:
    """Participants with work in progress may go on while the study is open or paused."""
    return study.status in (Study.Status.OPEN, Study.Status.PAUSED)


def has_room(study: Study) -> bool:
    """Whether a new participant would get a place (stale work counts as released)."""
    now = timezone.now()
    loads = task_loads(study)
    stale = dict(
        Assignment.objects.filter(
            task__study=study,
            status=Assignment.Status.ACTIVE,
            started_at__lt=now - timedelta(minutes=study.stale_minutes),
        )
        .values_list("task_id")
        .annotate(n=Count("id"))
    )
    return any(load - stale.get(pk, 0) < study.raters_per_task for pk, load in loads.items())


@dataclass
class Arrival:
    """What a returning or new participant should see."""

    assignment: Assignment | None
    state: str  # "new", "resume", "completed", "excluded", "timed_out", "unqualified"


def find_arrival(study: Study, *, pid: str = "", user=None) -> Arrival:
    participant = (
        Participant.objects.filter(study=study, prolific_pid=pid).first()
        if pid
        else Participant.objects.filter(study=study, user=user).first()
    )
    if participant is None:
        return Arrival(None, "new")
    assignment = Assignment.objects.filter(participant=participant).select_related("task").first()
    if participant.status == Participant.Status.EXCLUDED:
        return Arrival(assignment, "excluded")
    if assignment is None:
        return Arrival(None, "new")
    if assignment.status == Assignment.Status.COMPLETED:
        return Arrival(assignment, "completed")
    if assignment.status == Assignment.Status.NOT_QUALIFIED:
        return Arrival(assignment, "unqualified")
    if assignment.status == Assignment.Status.ACTIVE:
        return Arrival(assignment, "resume")
    return Arrival(assignment, "timed_out")


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


@transaction.atomic
def start_assignment(
    study: Study,
    *,
    pid: str = "",
    user=None,
    prolific_study_id: str = "",
    session_id: str = "",
    browser: str | None = None,
) -> Assignment:
    """Give an arriving participant a task, or their own one back. Takes the study lock,
    so that two arrivals at once cannot both take the last place of a task.

    `browser` (the participant pages pass it: `browser_key` of the session) is
    remembered on new work; a returning PROLIFIC_PID is then given its work only
    if `admissible` (SessionRefused otherwise, with nothing changed: the page
    calls `admit_return` first, which audits a refusal; this check covers two
    arrivals with one PID at once). Without it (gold annotators, signed in;
    services and tests) the caller vouches for the arrival."""
    study = lock_study(study)
    arrival = find_arrival(study, pid=pid, user=user)
    if arrival.state == "excluded":
        raise StudyError("You can no longer take part in this study. Thank you for your time.")
    if (
        browser is not None
        and arrival.assignment is not None
        and not admissible(_lock_assignment(arrival.assignment.pk), session_id, browser)
    ):
        raise SessionRefused(assignment_id=arrival.assignment.pk)
    if arrival.state in ("resume", "completed", "unqualified"):
        if arrival.state == "resume" and not may_continue(study):
            check_can_arrive(study)
        note_return(study, arrival.assignment, session_id)
        return arrival.assignment
    check_can_arrive(study)
    release_stale(study)
    if arrival.state == "timed_out":
        note_return(study, arrival.assignment, session_id)
        return _reopen(study, arrival.assignment)
    task = pick_task(study)
    if task is None:
        raise QuotaFull(
            "All places in this study are taken. Please return it on Prolific; thank you."
        )
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
    return assignment


# --- Who may take up work again ----------------------------------------------------------------
#
# A crowd worker arrives by the study link with their PROLIFIC_PID, which is no
# secret (it shows in URLs, screenshots, support messages). The work itself sits
# behind its token (192 random bits), and the study link leads a returning PID
# to that token only for:
#   1. a browser that holds the work (the one that consented, or one admitted
#      since): its session key's hash is in `Assignment.browsers`;
#   2. the SESSION_ID of the first arrival (Prolific's id of the submission: the
#      same person on another device brings it again); an empty SESSION_ID
#      matches nothing;
#   3. once, within OTHER_DEVICE_HOURS, any browser after a researcher's
#      `allow_other_device` (a participant who switched device and whose
#      Prolific session changed).
# Anything else is refused with a clear page, changes nothing and is audited.


def admissible(assignment: Assignment, session_id: str, browser: str) -> str:
    """How a returning arrival may take up `assignment` ("browser", "session_id",
    "other_device"), or "" when it may not. Reads only."""
    session_id = (session_id or "").strip()[:64]
    if browser and browser in assignment.browsers:
        return "browser"
    if session_id and session_id == assignment.prolific_session_id:
        return "session_id"
    allowed = assignment.other_device_allowed_until
    if allowed is not None and timezone.now() < allowed:
        return "other_device"
    return ""


@transaction.atomic
def admit_return(assignment: Assignment, session_id: str, browser: str) -> bool:
    """May a returning PROLIFIC_PID take up its work in this browser? Takes the
    study lock, then the assignment's. Admitted: the browser is remembered, a
    new SESSION_ID recorded (note_return), a researcher's allowance used up.
    Refused: nothing changes but an audit event (committed: a refusal is an
    answer, not an error)."""
    study = lock_study(assignment.task.study_id)
    assignment = _lock_assignment(assignment.pk)
    how = admissible(assignment, session_id, browser)
    shown = (session_id or "").strip()[:64] or "(none)"
    if not how:
        audit(
            study,
            Action.SESSION_REFUSED,
            participant=assignment.participant,
            detail=f"SESSION_ID {shown} from a browser that did not consent "
            f"(first SESSION_ID: {assignment.prolific_session_id or '(none)'})",
        )
        return False
    changed = []
    if how == "other_device":
        assignment.other_device_allowed_until = None
        changed.append("other_device_allowed_until")
        audit(
            study,
            Action.OTHER_DEVICE_USED,
            participant=assignment.participant,
            detail=f"SESSION_ID {shown}",
        )
    if browser and browser not in assignment.browsers:
        assignment.browsers = [*assignment.browsers, browser][-MAX_BROWSERS:]
        changed.append("browsers")
    if changed:
        assignment.save(update_fields=changed)
    note_return(study, assignment, session_id)
    return True


@dataclass
class DeviceAccess:
    """What the study monitor shows of a crowd worker's arrivals from elsewhere."""

    refused: int  # arrivals refused (another browser and another SESSION_ID)
    allowed_until: datetime | None  # while a researcher's allowance waits


def device_access(study: Study, now=None) -> dict[int, DeviceAccess]:
    """Per participant id (crowd workers with a task only): refused arrivals and a
    waiting allowance. Two queries."""
    now = now or timezone.now()
    refused = dict(
        AuditEvent.objects.filter(study=study, action=Action.SESSION_REFUSED)
        .values_list("participant_id")
        .annotate(n=Count("id"))
    )
    allowed = dict(
        Assignment.objects.filter(
            task__study=study, other_device_allowed_until__gt=now
        ).values_list("participant_id", "other_device_allowed_until")
    )
    crowd = Participant.objects.filter(study=study, user__isnull=True, assignment__isnull=False)
    return {
        pk: DeviceAccess(refused.get(pk, 0), allowed.get(pk))
        for pk in crowd.values_list("pk", flat=True)
    }


@transaction.atomic
def allow_other_device(participant: Participant, actor, reason: str = "") -> bool:
    """Let a crowd participant take up their work once from another browser, with
    any SESSION_ID, within OTHER_DEVICE_HOURS (for one who switched device and
    whose Prolific session changed). Takes the study lock, then the
    assignment's; audited. Returns True (a second call renews the window)."""
    study = lock_study(participant.study_id)
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.user_id is not None:
        raise StudyError(
            f"{participant} is a gold annotator: they sign in, on any device; nothing to allow."
        )
    if participant.status == Participant.Status.EXCLUDED:
        raise StudyError(f"{participant} is excluded: reinstate them first.")
    found = Assignment.objects.filter(participant=participant).first()
    if found is None:
        raise StudyError(f"{participant} has no task in this study yet.")
    assignment = _lock_assignment(found.pk)
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
    return True


def note_return(study: Study, assignment: Assignment, session_id: str) -> None:
    """A participant came back with another Prolific SESSION_ID: record it for the
    researcher (same person id, another submission: worth a look). Caller holds
    the study lock."""
    session_id = (session_id or "")[:64]
    if not session_id or session_id == assignment.prolific_session_id:
        return
    if not assignment.prolific_session_id:
        Assignment.objects.filter(pk=assignment.pk).update(prolific_session_id=session_id)
        assignment.prolific_session_id = session_id
        return
    if session_id in assignment.other_session_ids:
        return
    assignment = _lock_assignment(assignment.pk)
    assignment.other_session_ids = [*assignment.other_session_ids, session_id]
    assignment.save(update_fields=["other_session_ids"])
    audit(
        study,
        Action.SESSION_CHANGED,
        participant=assignment.participant,
        detail=f"first {assignment.prolific_session_id}, now {session_id}",
    )


def _reopen(study: Study, assignment: Assignment) -> Assignment:
    """A participant whose work was released comes back: they continue if
    their task still has room, so none of their ratings is wasted. Caller holds
    the study lock."""
    load = task_loads(study).get(assignment.task_id, 0)
    if load >= study.raters_per_task:
        raise StudyError(
            "Your time for this study ran out and your place was given to someone else. "
            "Please return the study on Prolific; your ratings so far are kept."
        )
    assignment = _lock_assignment(assignment.pk)
    assignment.status = Assignment.Status.ACTIVE
    assignment.started_at = timezone.now()
    assignment.save(update_fields=["status", "started_at"])
    audit(study, Action.REOPENED, participant=assignment.participant)
    return assignment


# --- Rating -----------------------------------------------------------------------------------


def parse_score(raw, scale_max: int = 10) -> int:
    text = str(raw).strip() if raw is not None else ""
    if not re.fullmatch(r"\d{1,2}", text) or not 1 <= int(text) <= scale_max:
        raise StudyError(
            f"A score must be a whole number from 1 to {scale_max}, not {text or 'nothing'!r}."
        )
    return int(text)


def parse_choice(raw) -> str:
    text = str(raw).strip() if raw is not None else ""
    if text not in Rating.Choice.values:
        raise StudyError(f"Choose A, B or tie, not {text or 'nothing'!r}.")
    return text


def parse_seconds(raw) -> float:
    try:
        seconds = float(raw) if raw not in (None, "") else 0.0
    except (TypeError, ValueError):
        raise StudyError("The time spent must be a number of seconds.") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise StudyError("The time spent must be a positive number of seconds.")
    return min(seconds, MAX_SECONDS_PER_VISIT)


def parse_flag(raw) -> str:
    text = str(raw or "").strip()
    if text not in Rating.Flag.values:
        raise StudyError(f"Unknown flag {text!r}.")
    return text


def item_at(assignment: Assignment, position: int) -> Item | None:
    if not 1 <= position <= len(assignment.item_order):
        return None
    return Item.objects.filter(pk=assignment.item_order[position - 1]).first()


def note_item_served(assignment: Assignment, position: int) -> None:
    """The item page at `position` was delivered now: time on the item is
    measured from here to its rating, on the server."""
    if not 1 <= position <= len(assignment.item_order):
        return
    Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ACTIVE).update(
        served_item_id=assignment.item_order[position - 1], served_at=timezone.now()
    )


@dataclass
class RatingResult:
    rating: Rating
    item: Item
    practice_feedback: str = ""
    practice_ok: bool | None = None
    qualification: str = ""  # "", "passed", "failed"


def submit_rating(
    assignment: Assignment,
    position: int,
    score_raw=None,
    client_seconds=None,
    *,
    choice=None,
    comment=None,
    flag=None,
) -> Rating:
    return rate_item(
        assignment,
        position,
        score=score_raw,
        client_seconds=client_seconds,
        choice=choice,
        comment=comment,
        flag=flag,
    ).rating


@transaction.atomic
def rate_item(
    assignment: Assignment,
    position: int,
    *,
    score=None,
    client_seconds=None,
    choice=None,
    comment=None,
    flag=None,
) -> RatingResult:
    """Save (or change) the rating of the item at `position`. Holds the
    assignment's row lock only (see the module docstring).

    A double submit stores one rating: the second write, waiting for the
    assignment's lock, finds the first and becomes an update (and the database
    allows one rating per item whatever happens). Time on the item is the server's
    (delivery of the item page to this call, summed over visits and capped per
    visit); the browser's figure is kept as a hint. `comment` and `flag`, when
    given, replace the stored ones (a comment alone, without a score, is saved
    on an item already rated)."""
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("participant", "task__study")
        .get(pk=assignment.pk)
    )
    if assignment.status != Assignment.Status.ACTIVE:
        raise StudyError("This task is no longer open for ratings.")
    study = assignment.task.study
    if not may_continue(study):
        raise StudyError("This study is closed: ratings are no longer taken.")
    if not 1 <= position <= len(assignment.item_order):
        raise StudyError(f"There is no item {position} in this task.")
    item = Item.objects.get(pk=assignment.item_order[position - 1])
    comment_text = None if comment is None else _clean_comment(comment)
    flag_value = None if flag is None else parse_flag(flag)
    pairwise = study.is_pairwise and not item.is_practice
    given = (choice not in (None, "")) if pairwise else (score not in (None, ""))
    values: dict = {}
    if given and pairwise:
        values = {"choice": parse_choice(choice), "score": None}
        values["swapped"] = item.pk in assignment.swapped_item_ids
    elif given:
        values = {"score": parse_score(score, study.scale_max), "choice": ""}
    hint = parse_seconds(client_seconds)
    now = timezone.now()
    seconds = 0.0
    if assignment.served_item_id == item.pk and assignment.served_at is not None:
        seconds = min(max((now - assignment.served_at).total_seconds(), 0.0), MAX_SECONDS_PER_VISIT)
    extra = {}
    if comment_text is not None:
        extra["comment"] = comment_text
    if flag_value is not None:
        extra["flag"] = flag_value
    # The assignment's row lock serialises every write of this assignment's
    # ratings (a second tab waits here), so a plain read decides insert or update.
    rating = Rating.objects.filter(assignment=assignment, item=item).first()
    if rating is None:
        if not given:
            raise StudyError("Choose A, B or tie first." if pairwise else "Choose a score first.")
        rating = Rating.objects.create(
            assignment=assignment,
            item=item,
            seconds=seconds,
            client_seconds=hint,
            **values,
            **extra,
        )
    else:
        if item.is_practice and values and values.get("score") != rating.score:
            raise StudyError("A practice answer cannot change once its feedback was shown.")
        rating.seconds += seconds
        rating.client_seconds += hint
        for key, value in (values | extra).items():
            setattr(rating, key, value)
        rating.save()
    # The next visit of this page counts from now, not from its first delivery.
    assignment.served_at = now if assignment.served_item_id == item.pk else assignment.served_at
    assignment.last_seen_at = now
    assignment.save(update_fields=["served_at", "last_seen_at"])
    result = RatingResult(rating, item)
    if item.is_practice:
        result.practice_ok = item.expected_min <= rating.score <= item.expected_max
        result.practice_feedback = item.feedback
        result.qualification = _check_qualification(study, assignment)
    return result


def _clean_comment(raw) -> str:
    """Browsers send new lines as CRLF: stored as plain new lines, trimmed, capped."""
    return str(raw).replace("\r\n", "\n").replace("\r", "\n").strip()[:MAX_COMMENT]


def _check_qualification(study: Study, assignment: Assignment) -> str:
    """After the last practice item: pass (go on) or fail (the task ends with the
    failed-check code and the place is released). Caller holds the assignment lock."""
    practice = dict(
        Item.objects.filter(pk__in=assignment.item_order, kind=Item.Kind.PRACTICE).values_list(
            "pk", "expected_min"
        )
    )
    if not practice or assignment.practice_passed is not None:
        return ""
    ratings = list(
        Rating.objects.filter(assignment=assignment, item_id__in=practice).select_related("item")
    )
    if len(ratings) < len(practice):
        return ""
    passed = sum(r.item.expected_min <= r.score <= r.item.expected_max for r in ratings)
    assignment.practice_passed = passed >= study.practice_pass
    fields = ["practice_passed"]
    if not assignment.practice_passed:
        full = Study.objects.get(pk=study.pk)
        mark_failed_check(assignment.participant)
        assignment.status = Assignment.Status.NOT_QUALIFIED
        assignment.completion_code = full.failed_attention_code
        assignment.completed_at = timezone.now()
        fields += ["status", "completion_code", "completed_at"]
        audit(
            full,
            Action.NOT_QUALIFIED,
            participant=assignment.participant,
            detail=f"{passed} of {len(practice)} practice items within range "
            f"({study.practice_pass} needed)",
        )
    assignment.save(update_fields=fields)
    return "passed" if assignment.practice_passed else "failed"


def mark_failed_check(participant: Participant) -> None:
    """A participant given the failed-check code: out of the analysis for good
    (not 'accepted', never reinstated). Caller holds the study lock."""
    participant.status = Participant.Status.FAILED_CHECK
    participant.save(update_fields=["status"])


def missing_positions(assignment: Assignment) -> list[int]:
    rated = set(assignment.ratings.values_list("item_id", flat=True))
    return [i for i, item_id in enumerate(assignment.item_order, 1) if item_id not in rated]


@transaction.atomic
def complete_assignment(assignment: Assignment) -> str:
    """Close a fully rated task and return the participant's completion code.
    Takes the study lock, then the assignment's."""
    study = lock_study(
        Assignment.objects.values_list("task__study", flat=True).get(pk=assignment.pk)
    )
    assignment = _lock_assignment(assignment.pk)
    if assignment.status in (Assignment.Status.COMPLETED, Assignment.Status.NOT_QUALIFIED):
        return assignment.completion_code
    if assignment.status != Assignment.Status.ACTIVE:
        raise StudyError("This task is no longer open.")
    if not may_continue(study):
        raise StudyError("This study is closed: it takes no more work.")
    missing = missing_positions(assignment)
    if missing:
        raise StudyError(f"Please rate every item first: {', '.join(map(str, missing))} left.")
    checks = [
        (r.score, r.choice, r.item.expected_min, r.item.expected_max)
        for r in assignment.ratings.select_related("item").filter(item__kind=Item.Kind.ATTENTION)
    ]
    # Checks' expected ranges are on the common 1-10 scale.
    passed = (
        all(
            score is not None and low <= study.to_common_scale(score) <= high
            for score, _, low, high in checks
        )
        if checks
        else None
    )
    code = study.completion_code
    if passed is False:
        code = study.failed_attention_code or study.completion_code
        mark_failed_check(assignment.participant)
    assignment.status = Assignment.Status.COMPLETED
    assignment.completed_at = timezone.now()
    assignment.completion_code = code
    assignment.attention_passed = passed
    assignment.save()
    audit(
        study,
        Action.COMPLETED,
        participant=assignment.participant,
        detail=f"attention checks: {'none' if passed is None else passed}",
    )
    if passed is False:
        audit(
            study,
            Action.FAILED_CHECK,
            participant=assignment.participant,
            detail=f"{len(checks)} attention check(s), not all within range: given the "
            "failed-check code; their ratings never count",
        )
    from annotator.quality import auto_flag  # quality reads services' data, not the reverse

    auto_flag(assignment.participant)
    sync_rater_judgments(study, assignment.participant)
    return code


# --- Researcher actions on participants -------------------------------------------------------


@transaction.atomic
def exclude_participant(participant: Participant, actor, reason: str) -> bool:
    """Exclude a participant: their ratings are kept but leave the analysis, and
    their place opens for a new arrival. Takes the study lock. Returns whether
    anything changed."""
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("Give a reason for the exclusion (it is kept in the audit log).")
    study = lock_study(participant.study_id)
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.status != Participant.Status.ACCEPTED:
        return False  # excluded already, or failed a check (out for good)
    participant.status = Participant.Status.EXCLUDED
    participant.exclusion_reason = reason[:2000]
    participant.save(update_fields=["status", "exclusion_reason"])
    audit(study, Action.EXCLUDED, participant=participant, actor=actor, detail=reason)
    sync_rater_judgments(study, participant)
    return True


@transaction.atomic
def reinstate_participant(participant: Participant, actor, reason: str = "") -> bool:
    """Undo an exclusion. Takes the study lock. The participant counts again
    toward their task's quota, which may then hold more than wanted (said in
    the audit log)."""
    study = lock_study(participant.study_id)
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.status != Participant.Status.EXCLUDED:
        return False
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
    sync_rater_judgments(study, participant)
    return True


@transaction.atomic
def refill_quota(study: Study, actor=None, client=None) -> dict[str, int]:
    """Make room for replacements of excluded, released and unqualified
    participants: release stale work, and on Prolific raise the study's places
    so that every task can reach its wanted raters. Takes the study lock."""
    study = lock_study(study)
    released = release_stale(study)
    rows = progress(study)
    open_places = sum(row.open_places for row in rows)
    result = {"released": released, "open_places": open_places, "prolific_places": 0}
    if client is not None and study.prolific_study_id:
        # Prolific reopens returned and timed-out places itself, but the places of
        # excluded and unqualified participants stay used: add one for each.
        released = [Assignment.Status.RETURNED, Assignment.Status.TIMED_OUT]
        replaced = (
            Assignment.objects.filter(task__study=study)
            .filter(Q(participant__status__in=OUT) | Q(status=Assignment.Status.NOT_QUALIFIED))
            .exclude(status__in=released)
            .count()
        )
        places = len(rows) * study.raters_per_task + replaced
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
def mark_returned(study: Study, pid: str, status: str) -> bool:
    """Prolific says a participant returned the study or timed out: release
    their place. Takes the study lock."""
    study = lock_study(study)
    assignment = (
        Assignment.objects.filter(
            participant__study=study, participant__prolific_pid=pid, status=Assignment.Status.ACTIVE
        )
        .select_related("participant")
        .first()
    )
    if assignment is None:
        return False
    assignment = _lock_assignment(assignment.pk)
    assignment.status = (
        Assignment.Status.RETURNED if status == "RETURNED" else Assignment.Status.TIMED_OUT
    )
    assignment.save(update_fields=["status"])
    audit(study, Action.RELEASED, participant=assignment.participant, detail=f"Prolific: {status}")
    return True


# --- Ratings as judgments ---------------------------------------------------------------------


def _counted_ratings(study: Study):
    """Ratings that become judgments: of responses, by accepted participants
    whose assignment is complete. Attention checks and practice are left out."""
    return Rating.objects.filter(
        item__study=study,
        item__kind=Item.Kind.RESPONSE,
        assignment__status=Assignment.Status.COMPLETED,
        assignment__participant__status=Participant.Status.ACCEPTED,
    )


def sync_rater_judgments(study: Study, participant: Participant) -> int:
    """Make this rater's judgments (or pairwise verdicts) of the study's
    evaluator equal to their counted ratings. Caller holds the study lock.
    Touches this rater's rows only."""
    evaluator = ensure_evaluator(study)
    rater = participant.rater_id
    ratings = _counted_ratings(study).filter(assignment__participant=participant)
    if study.is_pairwise:
        PairwiseVerdict.objects.filter(evaluator=evaluator, rater=rater).delete()
        verdicts = [_verdict(evaluator, rater, *row) for row in _verdict_rows(ratings)]
        PairwiseVerdict.objects.bulk_create(verdicts)
        return len(verdicts)
    Judgment.objects.filter(evaluator=evaluator, rater=rater).delete()
    judgments = [
        _judgment(study, evaluator, rater, response_id, score)
        for response_id, score in ratings.values_list("item__response_id", "score")
    ]
    Judgment.objects.bulk_create(judgments)
    return len(judgments)


def _judgment(study: Study, evaluator, rater: str, response_id: int, score: int) -> Judgment:
    return scores.judgment(evaluator.pk, response_id, score, 1, study.scale_max, rater=rater)


def _verdict_rows(ratings):
    return ratings.values_list("item__response_id", "item__opponent_id", "choice", "swapped")


def _verdict(evaluator, rater, response_id, opponent_id, choice, swapped) -> PairwiseVerdict:
    """A human's choice as a verdict: order 0 when the response was shown first (A)."""
    winner = {"A": "first", "B": "second", "tie": "tie"}[choice]
    return scores.verdict(
        evaluator.pk,
        response_id,
        opponent_id,
        winner,
        seed=HUMAN_VERDICT_SEED,
        order=1 if swapped else 0,
        rater=rater,
    )


@transaction.atomic
def sync_study_judgments(study: Study) -> int:
    """Check every rater of the study (admin action "update the scores"):
    takes the study lock and adds, changes or removes only the rows that differ
    from the counted ratings. Returns the number of judgments (or verdicts)."""
    study = lock_study(study)
    evaluator = ensure_evaluator(study)
    counted = _counted_ratings(study)
    if study.is_pairwise:
        wanted = {
            (rater, rid, oid): _verdict(evaluator, rater, rid, oid, choice, swapped)
            for rater, rid, oid, choice, swapped in _rater_values(
                counted, "item__response_id", "item__opponent_id", "choice", "swapped"
            )
        }
        stored = {
            (v.rater, v.response_id, v.opponent_id): v
            for v in PairwiseVerdict.objects.filter(evaluator=evaluator)
        }
        same = {
            key
            for key, v in stored.items()
            if key in wanted and (wanted[key].order, wanted[key].winner) == (v.order, v.winner)
        }
        PairwiseVerdict.objects.filter(
            pk__in=[v.pk for key, v in stored.items() if key not in same]
        ).delete()
        PairwiseVerdict.objects.bulk_create(v for key, v in wanted.items() if key not in same)
        return len(wanted)
    wanted = {
        (rater, rid): score
        for rater, rid, score in _rater_values(counted, "item__response_id", "score")
    }
    stored = {(j.rater, j.response_id): j for j in Judgment.objects.filter(evaluator=evaluator)}
    stale = [
        j.pk
        for key, j in stored.items()
        if key not in wanted or j.raw_score != wanted[key] or j.raw_scale_max != study.scale_max
    ]
    Judgment.objects.filter(pk__in=stale).delete()
    kept = {key for key, j in stored.items() if j.pk not in stale}
    Judgment.objects.bulk_create(
        _judgment(study, evaluator, rater, rid, score)
        for (rater, rid), score in wanted.items()
        if (rater, rid) not in kept
    )
    return len(wanted)


def _rater_values(ratings, *fields):
    rows = ratings.values_list(
        "assignment__participant__prolific_pid", "assignment__participant__user_id", *fields
    )
    for pid, user_id, *rest in rows:
        yield (pid or f"user:{user_id}", *rest)


# --- Prolific ---------------------------------------------------------------------------------


def prolific_study_url(study: Study, base_url: str) -> str:
    """The study URL to give Prolific: Prolific fills in the three parameters."""
    from django.urls import reverse

    path = reverse("annotator:study_entry", args=[study.public_id])
    return (
        f"{base_url.rstrip('/')}{path}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def is_local_url(base_url: str) -> bool:
    """Prolific's participants cannot reach a study URL on this machine."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("localhost", "::1", "0.0.0.0", "") or host.startswith("127.")


def prolific_draft(study: Study, base_url: str) -> dict:
    from annotator.prolific_api import reward_in_pence

    places = Task.objects.filter(study=study).count() * study.raters_per_task
    codes = [
        {
            "code": study.completion_code,
            "code_type": "COMPLETED",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        }
    ]
    if study.failed_attention_code and (study.attention_checks or study.practice_items):
        codes.append(
            {
                "code": study.failed_attention_code,
                "code_type": "FAILED_ATTENTION_CHECK",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            }
        )
    what = "which of two answers" if study.is_pairwise else "how well answers"
    return {
        "name": study.name,
        "internal_name": f"concord-study-{study.pk}",
        "description": f"Rate {what} to questions about a work meeting match the correct answers.",
        "external_study_url": prolific_study_url(study, base_url),
        "prolific_id_option": "url_parameters",
        "completion_codes": codes,
        "total_available_places": places,
        "estimated_completion_time": study.estimated_minutes,
        "reward": reward_in_pence(study.hourly_pay, study.estimated_minutes),
        "device_compatibility": ["desktop", "tablet", "mobile"],
    }


@transaction.atomic
def create_on_prolific(study: Study, client, base_url: str, actor=None) -> str:
    study = lock_study(study)
    if study.prolific_study_id:
        raise StudyError(
            f"Study '{study.name}' is already on Prolific ({study.prolific_study_id})."
        )
    if not Task.objects.filter(study=study).exists():
        raise StudyError("Build the study's items before creating it on Prolific.")
    created = client.create_study(prolific_draft(study, base_url))
    study.prolific_study_id = str(created["id"])
    study.save(update_fields=["prolific_study_id"])
    audit(study, Action.PROLIFIC_CREATED, actor=actor, detail=study.prolific_study_id)
    return study.prolific_study_id


def publish_on_prolific(study: Study, client, actor=None) -> None:
    if not study.prolific_study_id:
        raise StudyError("Create the study on Prolific first.")
    client.publish_study(study.prolific_study_id)
    audit(study, Action.PROLIFIC_PUBLISHED, actor=actor, detail=study.prolific_study_id)


def sync_prolific_submissions(study: Study, client) -> dict[str, int]:
    """Read the study's submissions: remember each participant's submission id,
    and release at once the places of those who returned or timed out."""
    from annotator.prolific_api import RELEASED_STATUSES

    if not study.prolific_study_id:
        raise StudyError("This study is not on Prolific.")
    counts = {"submissions": 0, "released": 0}
    for submission in client.submissions(study.prolific_study_id):
        counts["submissions"] += 1
        pid, status = submission.get("participant_id", ""), submission.get("status", "")
        Assignment.objects.filter(
            participant__study=study, participant__prolific_pid=pid, prolific_session_id=""
        ).update(prolific_session_id=str(submission.get("id", ""))[:64])
        if status in RELEASED_STATUSES and mark_returned(study, pid, status):
            counts["released"] += 1
    return counts


def review_on_prolific(
    participant: Participant,
    client,
    approve: bool,
    actor=None,
    message: str = "",
    category: str = "",
) -> None:
    assignment = getattr(participant, "assignment", None)
    if assignment is None or not assignment.prolific_session_id:
        raise StudyError(
            f"{participant}: no Prolific submission is known (sync submissions first)."
        )
    if approve:
        client.approve(assignment.prolific_session_id)
    else:
        client.reject(assignment.prolific_session_id, message, category)
    audit(
        participant.study,
        Action.PROLIFIC_APPROVED if approve else Action.PROLIFIC_REJECTED,
        participant=participant,
        actor=actor,
        detail=message,
    )
