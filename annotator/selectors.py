"""Reads of human studies: what a study would rate, how full its tasks are,
who a returning participant is and whether they may take up their work, what
is left to rate. Nothing here writes; the state changes are in
annotator.actions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from annotator.errors import StudyError
from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study, Task
from annotator.validation import validate_gold_covers
from corpus.models import Dataset, Document
from generation.models import GenerationRun, Response, System
from users.models import User

# --- What a study rates -------------------------------------------------------------------------


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


def documents_outside(dataset: Dataset, documents: Iterable[Document]) -> list[str]:
    """The chosen meetings that do not belong to the dataset's benchmark and split."""
    return sorted(
        d.external_id
        for d in documents
        if d.benchmark_id != dataset.benchmark_id or d.split != dataset.split
    )


def documents_for(dataset: Dataset) -> QuerySet[Document]:
    """The meetings of the dataset's benchmark and split (what a study may choose)."""
    return Document.objects.filter(benchmark_id=dataset.benchmark_id, split=dataset.split)


def _runs(study: Study, systems: list[System]) -> dict[int, GenerationRun]:
    runs = GenerationRun.objects.filter(
        project=study.project_id, dataset=study.dataset, mode=study.mode, system__in=systems
    ).filter(Q(seed=study.seed) if study.seed is not None else Q(seed__isnull=True))
    found = {run.system_id: run for run in runs}
    missing = [s.name for s in systems if s.pk not in found]
    if missing:
        raise StudyError(
            f"No {study.get_mode_display().lower()} run on {study.dataset} "
            f"(seed {study.seed if study.seed is not None else 'none'}) for: {', '.join(missing)}."
        )
    return found


def _selected_responses(
    study: Study, systems: list[System], documents: list[Document]
) -> list[Response]:
    runs = _runs(study, systems)
    responses = Response.objects.filter(run__in=runs.values()).select_related(
        "question__document", "run__system"
    )
    if documents:
        responses = responses.filter(question__document__in=documents)
    if study.pk is not None and study.responses.exists():
        responses = responses.filter(pk__in=study.responses.values("pk"))
    found = list(
        responses.order_by(
            "question__document__external_id", "question__order", "run__system__name"
        )
    )
    if not found:
        chosen = ", ".join(d.external_id for d in documents) if documents else "any meeting"
        raise StudyError(
            f"The selection holds no responses: the {study.mode} runs of "
            f"{', '.join(s.name for s in systems)} on {study.dataset} have none for {chosen}."
        )
    return found


def selection(
    study: Study, systems: Iterable[System], documents: Iterable[Document]
) -> tuple[list[Response], dict[int, Response]]:
    """The responses a study with these settings would rate, and in a pairwise
    study the baseline's response to each question. Raises StudyError naming
    what does not match; writes nothing (forms call it before saving)."""
    chosen_systems, chosen_documents = list(systems), list(documents)
    if not chosen_systems:
        raise StudyError("Select at least one system.")
    outside = documents_outside(study.dataset, chosen_documents)
    if outside:
        raise StudyError(
            f"These meetings are not in {study.dataset}: {', '.join(outside)}. "
            "Choose meetings of the study's dataset."
        )
    opponents: dict[int, Response] = {}
    if study.is_pairwise:
        baseline = study.baseline_system
        if baseline is None:  # validate_settings refuses this first
            raise StudyError("A pairwise study needs a baseline system to compare with.")
        chosen_systems = [s for s in chosen_systems if s.pk != baseline.pk]
        if not chosen_systems:
            raise StudyError("Select at least one system besides the baseline.")
        opponents = {
            r.question_id: r for r in _selected_responses(study, [baseline], chosen_documents)
        }
    responses = _selected_responses(study, chosen_systems, chosen_documents)
    if study.is_pairwise:
        unmatched = [r for r in responses if r.question_id not in opponents]
        if unmatched:
            raise StudyError(
                f"The baseline {study.baseline_system} has no answer to {len(unmatched)} of the "
                f"selected questions (e.g. {unmatched[0].question})."
            )
    validate_gold_covers(study, {r.pk for r in responses})
    return responses, opponents


# --- Places -----------------------------------------------------------------------------------

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


def is_full(study: Study) -> bool:
    """Whether every task has all its places taken (working or done)."""
    loads = task_loads(study)
    return bool(loads) and all(load >= study.raters_per_task for load in loads.values())


def completed_per_task(study: Study) -> dict[int, int]:
    """Per task: accepted participants who completed it."""
    done = Q(
        assignments__status=Assignment.Status.COMPLETED,
        assignments__participant__status=Participant.Status.ACCEPTED,
    )
    return dict(
        Task.objects.filter(study=study)
        .annotate(n=Count("assignments", filter=done, distinct=True))
        .values_list("pk", "n")
    )


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


# --- Arrivals ---------------------------------------------------------------------------------


@dataclass
class Arrival:
    """What a returning or new participant should see."""

    assignment: Assignment | None
    state: str  # "new", "resume", "completed", "excluded", "timed_out", "unqualified"


def find_arrival(study: Study, *, pid: str = "", user: User | None = None) -> Arrival:
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


# Who may take up work again.
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
#      allowance (annotator.actions.arrival.check_allow_other_device: a
#      participant who switched device and whose Prolific session changed).
# Anything else is refused with a clear page, changes nothing and is audited
# (annotator.actions.arrival.check_admit_return).


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


@dataclass
class DeviceAccess:
    """What the study monitor shows of a crowd worker's arrivals from elsewhere."""

    refused: int  # arrivals refused (another browser and another SESSION_ID)
    allowed_until: datetime | None  # while a researcher's allowance waits


def device_access(study: Study, now: datetime | None = None) -> dict[int, DeviceAccess]:
    """Per participant id (crowd workers with a task only): refused arrivals and a
    waiting allowance. Two queries."""
    now = now or timezone.now()
    refused = dict(
        AuditEvent.objects.filter(study=study, action=AuditEvent.Action.SESSION_REFUSED)
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


# --- Ratings ----------------------------------------------------------------------------------


def missing_positions(assignment: Assignment) -> list[int]:
    """The positions (from 1) of the assignment's items not rated yet."""
    rated = set(assignment.ratings.values_list("item_id", flat=True))
    return [i for i, item_id in enumerate(assignment.item_order, 1) if item_id not in rated]


def counted_ratings(study: Study) -> QuerySet[Rating]:
    """Ratings that become judgments: of responses, by accepted participants
    whose assignment is complete. Attention checks and practice are left out."""
    return Rating.objects.filter(
        item__study=study,
        item__kind=Item.Kind.RESPONSE,
        assignment__status=Assignment.Status.COMPLETED,
        assignment__participant__status=Participant.Status.ACCEPTED,
    )
