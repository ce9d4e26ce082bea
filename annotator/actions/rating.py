"""Rating: an item page delivered, an item rated (a score, or A/B/tie; a
comment, a flag), the qualification round settled, a task completed."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotator.actions.audit import Action, audit
from annotator.actions.judgments import do_sync_rater_judgments
from annotator.actions.locks import lock_assignment, lock_study
from annotator.actions.participants import do_mark_failed_check
from annotator.errors import StudyError
from annotator.models import Assignment, Item, Rating, Study
from annotator.quality import auto_flag
from annotator.selectors import completed_per_task, may_continue, missing_positions
from annotator.signals import study_completed, task_completed

MAX_SECONDS_PER_VISIT = 3600.0
MAX_COMMENT = 2000


def parse_score(raw: str | int | None, scale_max: int = 10) -> int:
    text = str(raw).strip() if raw is not None else ""
    if not re.fullmatch(r"\d{1,2}", text) or not 1 <= int(text) <= scale_max:
        raise StudyError(
            f"A score must be a whole number from 1 to {scale_max}, not {text or 'nothing'!r}."
        )
    return int(text)


def parse_choice(raw: str | None) -> str:
    text = str(raw).strip() if raw is not None else ""
    if text not in Rating.Choice.values:
        raise StudyError(f"Choose A, B or tie, not {text or 'nothing'!r}.")
    return text


def parse_seconds(raw: str | float | None) -> float:
    try:
        seconds = float(raw) if raw is not None and raw != "" else 0.0
    except (TypeError, ValueError):
        raise StudyError("The time spent must be a number of seconds.") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise StudyError("The time spent must be a positive number of seconds.")
    return min(seconds, MAX_SECONDS_PER_VISIT)


def parse_flag(raw: str | None) -> str:
    text = str(raw or "").strip()
    if text not in Rating.Flag.values:
        raise StudyError(f"Unknown flag {text!r}.")
    return text


def _clean_comment(raw: str) -> str:
    """Browsers send new lines as CRLF: stored as plain new lines, trimmed, capped."""
    return str(raw).replace("\r\n", "\n").replace("\r", "\n").strip()[:MAX_COMMENT]


def do_note_item_served(assignment: Assignment, position: int) -> None:
    """The item page at `position` was delivered now: time on the item is
    measured from here to its rating, on the server.

    Needs no lock: one UPDATE of the assignment's row, which changes nothing
    unless the assignment is still active."""
    if not 1 <= position <= len(assignment.item_order):
        return
    Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.ACTIVE).update(
        served_item_id=assignment.item_order[position - 1], served_at=timezone.now()
    )


# --- Rating an item -----------------------------------------------------------------------------


@dataclass
class RatingResult:
    rating: Rating
    item: Item
    practice_feedback: str = ""
    practice_ok: bool | None = None
    qualification: str = ""  # "", "passed", "failed"


@transaction.atomic
def check_rate_item(
    assignment: Assignment,
    position: int,
    *,
    score: str | int | None = None,
    client_seconds: str | float | None = None,
    choice: str | None = None,
    comment: str | None = None,
    flag: str | None = None,
) -> RatingResult:
    """Save (or change) the rating of the item at `position`. Takes the
    assignment's row lock only (see annotator.actions), checks that the task and
    the study take ratings and what was sent, then do_rate_item.

    A double submit stores one rating: the second write, waiting for the
    assignment's lock, finds the first and becomes an update (and the database
    allows one rating per item whatever happens). `comment` and `flag`, when
    given, replace the stored ones (a comment alone, without a score, is saved
    on an item already rated)."""
    assignment = lock_assignment(assignment.pk, "participant", "task__study")
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
    changes: dict[str, Any] = {}
    if given and pairwise:
        changes = {"choice": parse_choice(choice), "score": None}
        changes["swapped"] = item.pk in assignment.swapped_item_ids
    elif given:
        changes = {"score": parse_score(score, study.scale_max), "choice": ""}
    hint = parse_seconds(client_seconds)
    if comment_text is not None:
        changes["comment"] = comment_text
    if flag_value is not None:
        changes["flag"] = flag_value
    # The assignment's row lock serialises every write of this assignment's
    # ratings (a second tab waits here), so a plain read decides insert or update.
    rating = Rating.objects.filter(assignment=assignment, item=item).first()
    if rating is None and not given:
        raise StudyError("Choose A, B or tie first." if pairwise else "Choose a score first.")
    if rating is not None and item.is_practice and given and changes.get("score") != rating.score:
        raise StudyError("A practice answer cannot change once its feedback was shown.")
    return do_rate_item(study, assignment, item, rating, changes, hint)


def do_rate_item(
    study: Study,
    assignment: Assignment,
    item: Item,
    rating: Rating | None,
    changes: dict[str, Any],
    client_seconds: float,
) -> RatingResult:
    """Create the item's rating with `changes` (field values), or apply them to
    `rating`; add the time on the item (the server's: delivery of the item page
    to now, summed over visits and capped per visit; `client_seconds`, the
    browser's figure, is kept as a hint); after the last practice item, settle
    the qualification round.

    Needs the assignment's row lock (check_rate_item takes it)."""
    now = timezone.now()
    seconds = 0.0
    if assignment.served_item_id == item.pk and assignment.served_at is not None:
        seconds = min(max((now - assignment.served_at).total_seconds(), 0.0), MAX_SECONDS_PER_VISIT)
    if rating is None:
        rating = Rating.objects.create(
            assignment=assignment,
            item=item,
            seconds=seconds,
            client_seconds=client_seconds,
            **changes,
        )
    else:
        rating.seconds += seconds
        rating.client_seconds += client_seconds
        for key, value in changes.items():
            setattr(rating, key, value)
        rating.save()
    # The next visit of this page counts from now, not from its first delivery.
    assignment.served_at = now if assignment.served_item_id == item.pk else assignment.served_at
    assignment.last_seen_at = now
    assignment.save(update_fields=["served_at", "last_seen_at"])
    result = RatingResult(rating, item)
    if item.is_practice:
        result.practice_ok = item.in_expected_range(rating.score)
        result.practice_feedback = item.feedback
        result.qualification = do_settle_qualification(study, assignment)
    return result


def do_settle_qualification(study: Study, assignment: Assignment) -> str:
    """After the last practice item: pass (go on) or fail (the task ends with the
    failed-check code and the place is released). "" before the last one.

    Needs the assignment's row lock (check_rate_item takes it)."""
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
    passed = sum(r.item.in_expected_range(r.score) for r in ratings)
    assignment.practice_passed = passed >= study.practice_pass
    fields = ["practice_passed"]
    if not assignment.practice_passed:
        full = Study.objects.get(pk=study.pk)
        do_mark_failed_check(assignment.participant)
        assignment.status = Assignment.Status.NOT_QUALIFIED
        # screened out on Prolific (a fixed payment, the place freed), or the
        # failed-check code for a person to review
        screened = full.screen_out_pence and full.prolific_study_id
        assignment.completion_code = (
            full.screen_out_code if screened else full.failed_attention_code
        )
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


# --- Completing a task --------------------------------------------------------------------------


@transaction.atomic
def check_complete_assignment(assignment: Assignment) -> str:
    """Close a fully rated task and return the participant's completion code
    (a task closed already: its code again). Takes the study lock, then the
    assignment's; refuses a task no longer open, a closed study or a task with
    items left; then do_complete_assignment."""
    study = lock_study(
        Assignment.objects.values_list("task__study", flat=True).get(pk=assignment.pk)
    )
    assignment = lock_assignment(assignment.pk)
    if assignment.status in (Assignment.Status.COMPLETED, Assignment.Status.NOT_QUALIFIED):
        return assignment.completion_code
    if assignment.status != Assignment.Status.ACTIVE:
        raise StudyError("This task is no longer open.")
    if not may_continue(study):
        raise StudyError("This study is closed: it takes no more work.")
    missing = missing_positions(assignment)
    if missing:
        raise StudyError(f"Please rate every item first: {', '.join(map(str, missing))} left.")
    return do_complete_assignment(study, assignment)


def do_complete_assignment(study: Study, assignment: Assignment) -> str:
    """Score the attention checks, close the task with the completion code (the
    failed-check code when a check failed), flag the rater if quality control
    finds cause, and turn their ratings into judgments.

    Needs the study lock, then the assignment's (check_complete_assignment
    takes them)."""
    checks = [
        (r.score, r.choice, r.item.expected_min, r.item.expected_max)
        for r in assignment.ratings.select_related("item").filter(item__kind=Item.Kind.ATTENTION)
    ]
    # Checks' expected ranges are on the common 1-10 scale.
    passed = (
        all(
            score is not None
            and low is not None
            and high is not None
            and low <= study.to_common_scale(score) <= high
            for score, _, low, high in checks
        )
        if checks
        else None
    )
    code = study.completion_code
    if passed is False:
        code = study.failed_attention_code or study.completion_code
        do_mark_failed_check(assignment.participant)
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
    auto_flag(assignment.participant)
    do_sync_rater_judgments(study, assignment.participant)
    # this completion took its task to the places it wants, and every other task is there
    done = completed_per_task(study)
    if done.get(assignment.task_id) == study.raters_per_task and all(
        n >= study.raters_per_task for n in done.values()
    ):
        study_completed.send(sender=Study, study_id=study.pk)
    # after the commit: an adaptive study may have its answer now (adaptive.signals)
    study_id = study.pk
    transaction.on_commit(lambda: task_completed.send(sender=Study, study_id=study_id))
    return code
