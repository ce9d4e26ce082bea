"""State changes of human studies. Views and admin only call these.

Each function is atomic and writes an AuditEvent where a person changed
something. Errors a participant or researcher can act on are StudyError with a
message meant for them.
"""

from __future__ import annotations

import random
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from annotator import defaults
from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study, Task
from corpus.models import QuestionText
from generation.models import GenerationRun, Response
from judging.models import Evaluator, Judgment

PROLIFIC_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_SECONDS_PER_VISIT = 3600.0


class StudyError(Exception):
    """Something a user can understand and act on; the message says what."""


class QuotaFull(StudyError):
    pass


def audit(study: Study, action: str, *, participant=None, actor=None, detail: str = "") -> None:
    AuditEvent.objects.create(
        study=study, participant=participant, actor=actor, action=action, detail=detail
    )


# --- Building a study's items ---------------------------------------------------------------


def has_ratings(study: Study) -> bool:
    return Rating.objects.filter(item__study=study).exists()


@transaction.atomic
def build_items(study: Study, actor=None) -> dict[str, int]:
    """(Re)build the study's tasks and items from its selection.

    Refused once anyone has rated: changing what was rated would make the
    collected ratings meaningless."""
    if has_ratings(study):
        raise StudyError(
            f"Study '{study.name}' already has ratings, so its items cannot change. "
            "Create a new study for a different selection."
        )
    systems = list(study.systems.all())
    if not systems:
        raise StudyError("Select at least one system.")
    runs = GenerationRun.objects.filter(
        dataset=study.dataset, mode=study.mode, system__in=systems
    ).filter(Q(seed=study.seed) if study.seed is not None else Q(seed__isnull=True))
    run_systems = {run.system_id: run for run in runs}
    missing = [s.name for s in systems if s.pk not in run_systems]
    if missing:
        raise StudyError(
            f"No {study.get_mode_display().lower()} run on {study.dataset} "
            f"(seed {study.seed if study.seed is not None else 'none'}) for: {', '.join(missing)}."
        )
    responses = Response.objects.filter(run__in=runs).select_related("question__document")
    documents = list(study.documents.all())
    if documents:
        responses = responses.filter(question__document__in=documents)
    responses = list(
        responses.order_by(
            "question__document__external_id", "question__order", "run__system__name"
        )
    )
    if not responses:
        raise StudyError("The selection holds no responses.")
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
        task = (
            tasks[None] if study.kind == Study.Kind.GOLD else tasks[response.question.document_id]
        )
        items.append(
            Item(
                study=study,
                task=task,
                response=response,
                question=text.text,
                correct_answer=text.reference_answer,
                answer=response.text,
            )
        )
    if study.attention_checks:
        for task in tasks.values():
            for check in defaults.ATTENTION_CHECKS:
                items.append(Item(study=study, task=task, **check))
    Item.objects.bulk_create(items)
    audit(
        study,
        "build_items",
        actor=actor,
        detail=f"{len(tasks)} tasks, {len(items)} items ({len(responses)} responses)",
    )
    return {"tasks": len(tasks), "items": len(items), "responses": len(responses)}


# --- Arrival and assignment -----------------------------------------------------------------


def release_stale(study: Study, now=None) -> int:
    """Release active assignments older than the study's limit. Their ratings
    stay, marked incomplete by the assignment's status."""
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
            "timed_out",
            participant=assignment.participant,
            detail=f"not finished within {study.stale_minutes} minutes",
        )
        released += 1
    return released


def task_loads(study: Study) -> dict[int, int]:
    """Per task: active assignments plus completed ones of accepted participants.

    Excluded participants and released (timed out, returned) work do not
    count, so new arrivals replace them."""
    counting = Q(assignments__status=Assignment.Status.ACTIVE) | Q(
        assignments__status=Assignment.Status.COMPLETED,
        assignments__participant__status=Participant.Status.ACCEPTED,
    )
    return dict(
        Task.objects.filter(study=study)
        .annotate(load=Count("assignments", filter=counting))
        .values_list("pk", "load")
    )


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
    if study.status == Study.Status.PAUSED:
        raise StudyError(
            "This study is paused and takes no new participants right now. Please return it "
            "on Prolific; thank you."
        )
    if study.status != Study.Status.OPEN:
        raise StudyError("This study is closed. Please return it on Prolific; thank you.")
    if not Item.objects.filter(study=study).exists():
        raise StudyError("This study has no items yet.")


def has_room(study: Study) -> bool:
    release_stale(study)
    return pick_task(study) is not None


@dataclass
class Arrival:
    """What a returning or new participant should see."""

    assignment: Assignment | None
    state: str  # "new", "resume", "completed", "excluded", "timed_out"


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
    if assignment.status == Assignment.Status.ACTIVE:
        return Arrival(assignment, "resume")
    return Arrival(assignment, "timed_out")


@transaction.atomic
def start_assignment(
    study: Study, *, pid: str = "", user=None, prolific_study_id: str = "", session_id: str = ""
) -> Assignment:
    """Give an arriving participant a task, or their own one back.

    The study row is locked so that two arrivals at once cannot both take the
    last place of a task."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    check_can_arrive(study)
    release_stale(study)
    arrival = find_arrival(study, pid=pid, user=user)
    if arrival.state in ("resume", "completed"):
        return arrival.assignment
    if arrival.state == "excluded":
        raise StudyError("You can no longer take part in this study. Thank you for your time.")
    if arrival.state == "timed_out":
        return _reopen(study, arrival.assignment)
    task = pick_task(study)
    if task is None:
        raise QuotaFull(
            "All places in this study are taken. Please return it on Prolific; thank you."
        )
    participant = Participant.objects.create(study=study, prolific_pid=pid, user=user)
    item_ids = list(task.items.values_list("pk", flat=True).order_by("pk"))
    seed = secrets.randbits(62)
    random.Random(seed).shuffle(item_ids)
    assignment = Assignment.objects.create(
        participant=participant,
        task=task,
        item_order=item_ids,
        shuffle_seed=seed,
        prolific_study_id=prolific_study_id[:64],
        prolific_session_id=session_id[:64],
    )
    audit(study, "assigned", participant=participant, detail=f"task {task.label}")
    return assignment


def _reopen(study: Study, assignment: Assignment) -> Assignment:
    """A participant whose work was released comes back: they continue if
    their task still has room, so none of their ratings is wasted."""
    load = task_loads(study).get(assignment.task_id, 0)
    if load >= study.raters_per_task:
        raise StudyError(
            "Your time for this study ran out and your place was given to someone else. "
            "Please return the study on Prolific; your ratings so far are kept."
        )
    assignment.status = Assignment.Status.ACTIVE
    assignment.started_at = timezone.now()
    assignment.save(update_fields=["status", "started_at"])
    audit(study, "reopened", participant=assignment.participant)
    return assignment


# --- Rating -----------------------------------------------------------------------------------


def parse_score(raw) -> int:
    text = str(raw).strip() if raw is not None else ""
    if not re.fullmatch(r"\d{1,2}", text) or not 1 <= int(text) <= 10:
        raise StudyError(f"A score must be a whole number from 1 to 10, not {text or 'nothing'!r}.")
    return int(text)


def parse_seconds(raw) -> float:
    try:
        seconds = float(raw) if raw not in (None, "") else 0.0
    except (TypeError, ValueError):
        raise StudyError("The time spent must be a number of seconds.") from None
    if seconds != seconds or seconds < 0:
        raise StudyError("The time spent must be a positive number of seconds.")
    return min(seconds, MAX_SECONDS_PER_VISIT)


def item_at(assignment: Assignment, position: int) -> Item | None:
    if not 1 <= position <= len(assignment.item_order):
        return None
    return Item.objects.filter(pk=assignment.item_order[position - 1]).first()


def submit_rating(assignment: Assignment, position: int, score_raw, seconds_raw=0) -> Rating:
    """Save (or change) the rating of the item at `position` of this assignment.

    A double submit stores one rating: the database allows one per item, and
    the second write becomes an update."""
    if assignment.status != Assignment.Status.ACTIVE:
        raise StudyError("This task is no longer open for ratings.")
    score = parse_score(score_raw)
    seconds = parse_seconds(seconds_raw)
    item_id = assignment.item_order[position - 1]
    with transaction.atomic():
        try:
            with transaction.atomic():
                rating = Rating.objects.create(
                    assignment=assignment, item_id=item_id, score=score, seconds=seconds
                )
        except IntegrityError:
            rating = Rating.objects.select_for_update().get(assignment=assignment, item_id=item_id)
            rating.score = score
            rating.seconds += seconds
            rating.save(update_fields=["score", "seconds", "updated_at"])
        Assignment.objects.filter(pk=assignment.pk).update(last_seen_at=timezone.now())
    return rating


def missing_positions(assignment: Assignment) -> list[int]:
    rated = set(assignment.ratings.values_list("item_id", flat=True))
    return [i for i, item_id in enumerate(assignment.item_order, 1) if item_id not in rated]


@transaction.atomic
def complete_assignment(assignment: Assignment) -> str:
    """Close a fully rated task and return the participant's completion code."""
    assignment = (
        Assignment.objects.select_for_update()
        .select_related("task__study", "participant")
        .get(pk=assignment.pk)
    )
    study = assignment.task.study
    if assignment.status == Assignment.Status.COMPLETED:
        return assignment.completion_code
    if assignment.status != Assignment.Status.ACTIVE:
        raise StudyError("This task is no longer open.")
    missing = missing_positions(assignment)
    if missing:
        raise StudyError(f"Please rate every item first: {', '.join(map(str, missing))} left.")
    checks = [
        (r.score, r.item.expected_min, r.item.expected_max)
        for r in assignment.ratings.select_related("item").filter(item__response__isnull=True)
    ]
    passed = all(low <= score <= high for score, low, high in checks) if checks else None
    code = study.completion_code
    if passed is False and study.failed_attention_code:
        code = study.failed_attention_code
    assignment.status = Assignment.Status.COMPLETED
    assignment.completed_at = timezone.now()
    assignment.completion_code = code
    assignment.attention_passed = passed
    assignment.save()
    audit(
        study,
        "completed",
        participant=assignment.participant,
        detail=f"attention checks: {'none' if passed is None else passed}",
    )
    from annotator.quality import auto_flag  # quality reads services' data, not the reverse

    auto_flag(assignment.participant)
    sync_study_judgments(study)
    return code


# --- Quality control and exclusion ------------------------------------------------------------


@transaction.atomic
def exclude_participant(participant: Participant, actor, reason: str) -> None:
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("Give a reason for the exclusion (it is kept in the audit log).")
    if participant.status == Participant.Status.EXCLUDED:
        return
    participant.status = Participant.Status.EXCLUDED
    participant.exclusion_reason = reason
    participant.save(update_fields=["status", "exclusion_reason"])
    audit(participant.study, "excluded", participant=participant, actor=actor, detail=reason)
    sync_study_judgments(participant.study)


@transaction.atomic
def reinstate_participant(participant: Participant, actor, reason: str = "") -> None:
    if participant.status != Participant.Status.EXCLUDED:
        return
    participant.status = Participant.Status.ACCEPTED
    participant.exclusion_reason = ""
    participant.save(update_fields=["status", "exclusion_reason"])
    audit(participant.study, "reinstated", participant=participant, actor=actor, detail=reason)
    sync_study_judgments(participant.study)


@transaction.atomic
def set_study_open(study: Study, is_open: bool, actor=None) -> None:
    if is_open and not Item.objects.filter(study=study).exists():
        raise StudyError(f"Study '{study.name}' has no items yet: build them first.")
    study.status = Study.Status.OPEN if is_open else Study.Status.CLOSED
    study.save(update_fields=["status"])
    audit(study, "opened" if is_open else "closed", actor=actor)


@transaction.atomic
def mark_returned(study: Study, pid: str, status: str) -> bool:
    """Prolific says a participant returned the study or timed out: release their place."""
    assignment = (
        Assignment.objects.filter(
            participant__study=study, participant__prolific_pid=pid, status=Assignment.Status.ACTIVE
        )
        .select_related("participant")
        .first()
    )
    if assignment is None:
        return False
    assignment.status = (
        Assignment.Status.RETURNED if status == "RETURNED" else Assignment.Status.TIMED_OUT
    )
    assignment.save(update_fields=["status"])
    audit(study, "released", participant=assignment.participant, detail=f"Prolific: {status}")
    return True


# --- Ratings as judgments ---------------------------------------------------------------------


@transaction.atomic
def sync_study_judgments(study: Study) -> int:
    """Make the study's completed, accepted ratings the judgments of its
    evaluator ("crowd human (NAME)" or "gold human (NAME)"), one per rater, so
    that the analysis reads them like any other score. Attention checks and
    unfinished or excluded work are left out."""
    kind = (
        Evaluator.Kind.GOLD_HUMAN if study.kind == Study.Kind.GOLD else Evaluator.Kind.CROWD_HUMAN
    )
    evaluator, _ = Evaluator.objects.get_or_create(
        name=study.evaluator_name,
        defaults={
            "kind": kind,
            "description": f"Ratings of study '{study.name}'.",
            "config": {"study_id": study.pk},
        },
    )
    Judgment.objects.filter(evaluator=evaluator).delete()
    ratings = Rating.objects.filter(
        item__study=study,
        item__response__isnull=False,
        assignment__status=Assignment.Status.COMPLETED,
        assignment__participant__status=Participant.Status.ACCEPTED,
    ).values_list(
        "item__response_id",
        "assignment__participant__prolific_pid",
        "assignment__participant__user_id",
        "score",
    )
    judgments = [
        Judgment(
            evaluator=evaluator,
            response_id=response_id,
            rater=pid or f"user:{user_id}",
            score=score,
            raw_score=score,
            raw_scale_min=1,
            raw_scale_max=10,
        )
        for response_id, pid, user_id, score in ratings
    ]
    Judgment.objects.bulk_create(judgments, batch_size=2000)
    return len(judgments)


# --- Prolific ---------------------------------------------------------------------------------


def prolific_study_url(study: Study, base_url: str) -> str:
    """The study URL to give Prolific: Prolific fills in the three parameters."""
    from django.urls import reverse

    path = reverse("annotator:study_entry", args=[study.public_id])
    return (
        f"{base_url.rstrip('/')}{path}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def prolific_draft(study: Study, base_url: str) -> dict:
    from annotator.prolific import reward_in_pence

    places = Task.objects.filter(study=study).count() * study.raters_per_task
    codes = [
        {
            "code": study.completion_code,
            "code_type": "COMPLETED",
            "actions": [{"action": "MANUALLY_REVIEW"}],
        }
    ]
    if study.failed_attention_code:
        codes.append(
            {
                "code": study.failed_attention_code,
                "code_type": "FAILED_ATTENTION_CHECK",
                "actions": [{"action": "MANUALLY_REVIEW"}],
            }
        )
    return {
        "name": study.name,
        "internal_name": f"concord-study-{study.pk}",
        "description": "Rate how well answers to questions about a work meeting match the "
        "correct answers, on a 1-10 scale.",
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
    if study.prolific_study_id:
        raise StudyError(
            f"Study '{study.name}' is already on Prolific ({study.prolific_study_id})."
        )
    if not Task.objects.filter(study=study).exists():
        raise StudyError("Build the study's items before creating it on Prolific.")
    created = client.create_study(prolific_draft(study, base_url))
    study.prolific_study_id = str(created["id"])
    study.save(update_fields=["prolific_study_id"])
    audit(study, "prolific_created", actor=actor, detail=study.prolific_study_id)
    return study.prolific_study_id


def publish_on_prolific(study: Study, client, actor=None) -> None:
    if not study.prolific_study_id:
        raise StudyError("Create the study on Prolific first.")
    client.publish_study(study.prolific_study_id)
    audit(study, "prolific_published", actor=actor, detail=study.prolific_study_id)


def sync_prolific_submissions(study: Study, client) -> dict[str, int]:
    """Read the study's submissions: remember each participant's submission id,
    and release at once the places of those who returned or timed out."""
    from annotator.prolific import RELEASED_STATUSES

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
        "prolific_approved" if approve else "prolific_rejected",
        participant=participant,
        actor=actor,
        detail=message,
    )
