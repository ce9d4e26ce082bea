"""The study on Prolific, through its API (annotator.prolific_api): the study
link Prolific sends participants to, the draft study, publishing it, reading
its submissions (returned and timed-out places are released), approving or
rejecting a submission. Where participants go back to Prolific when done is
annotator.completion."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.urls import reverse

from annotator.actions.audit import Action, audit
from annotator.actions.groups import group_filters
from annotator.actions.locks import lock_study
from annotator.actions.participants import check_mark_returned
from annotator.errors import StudyError
from annotator.models import Assignment, Participant, Study, Task
from annotator.prolific_api import RELEASED_STATUSES, ProlificClient, reward_in_pence
from users.models import User


def prolific_study_url(study: Study, base_url: str) -> str:
    """The study URL to give Prolific: Prolific fills in the three parameters."""
    path = reverse("annotator:study_entry", args=[study.public_id])
    return (
        f"{base_url.rstrip('/')}{path}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def is_local_url(base_url: str) -> bool:
    """Prolific's participants cannot reach a study URL on this machine."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("localhost", "::1", "0.0.0.0", "") or host.startswith("127.")


def prolific_draft(study: Study, base_url: str) -> dict[str, Any]:
    """The draft study Prolific's API is sent (POST studies/)."""
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
    if study.screen_out_pence and study.practice_items:
        # Prolific's in-study screening: a fixed payment, at most `slots` times
        codes.append(
            {
                "code": study.screen_out_code,
                "code_type": "FIXED_SCREENOUT",
                "actions": [
                    {
                        "action": "FIXED_SCREEN_OUT_PAYMENT",
                        "fixed_screen_out_reward": study.screen_out_pence,
                        "slots": places,
                    }
                ],
            }
        )
    what = "which of two answers" if study.is_pairwise else "how well answers"
    draft = {
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
    # recruited through or around participant groups (annotator.actions.groups)
    if filters := group_filters(study):
        draft["filters"] = filters
    return draft


@transaction.atomic
def check_create_on_prolific(
    study: Study, client: ProlificClient, base_url: str, actor: User | None = None
) -> str:
    """Create the study on Prolific as a draft; its Prolific id. Takes the study
    lock, refuses a study on Prolific already or without items, then
    do_create_on_prolific."""
    study = lock_study(study)
    if study.prolific_study_id:
        raise StudyError(
            f"Study '{study.name}' is already on Prolific ({study.prolific_study_id})."
        )
    if not Task.objects.filter(study=study).exists():
        raise StudyError("Build the study's items before creating it on Prolific.")
    return do_create_on_prolific(study, client, base_url, actor)


def do_create_on_prolific(
    study: Study, client: ProlificClient, base_url: str, actor: User | None = None
) -> str:
    """Needs the study lock (check_create_on_prolific takes it): two creations at
    once would make two studies on Prolific."""
    created = client.create_study(prolific_draft(study, base_url))
    study.prolific_study_id = str(created["id"])
    study.save(update_fields=["prolific_study_id"])
    audit(study, Action.PROLIFIC_CREATED, actor=actor, detail=study.prolific_study_id)
    return study.prolific_study_id


def check_publish_on_prolific(
    study: Study, client: ProlificClient, actor: User | None = None
) -> None:
    """Publish the study on Prolific: refuses a study not created there, then
    do_publish_on_prolific."""
    if not study.prolific_study_id:
        raise StudyError("Create the study on Prolific first.")
    do_publish_on_prolific(study, client, actor)


def do_publish_on_prolific(study: Study, client: ProlificClient, actor: User | None = None) -> None:
    """Needs no lock: nothing stored changes but an audit event (Prolific refuses
    a second publication itself)."""
    client.publish_study(study.prolific_study_id)
    audit(study, Action.PROLIFIC_PUBLISHED, actor=actor, detail=study.prolific_study_id)


def check_sync_prolific_submissions(study: Study, client: ProlificClient) -> dict[str, int]:
    """Read the study's submissions: remember each participant's submission id
    (do_note_submission), and release at once the places of those who returned
    or timed out (check_mark_returned, which takes the study lock for each).
    Refuses a study not on Prolific."""
    if not study.prolific_study_id:
        raise StudyError("This study is not on Prolific.")
    counts = {"submissions": 0, "released": 0}
    for submission in client.submissions(study.prolific_study_id):
        counts["submissions"] += 1
        pid, status = submission.get("participant_id", ""), submission.get("status", "")
        do_note_submission(study, pid, str(submission.get("id", "")))
        if status in RELEASED_STATUSES and check_mark_returned(study, pid, status):
            counts["released"] += 1
    return counts


def do_note_submission(study: Study, pid: str, submission_id: str) -> None:
    """The participant's Prolific submission id, where none is known yet.

    Needs no lock: one UPDATE that fills an empty SESSION_ID only."""
    Assignment.objects.filter(
        participant__study=study, participant__prolific_pid=pid, prolific_session_id=""
    ).update(prolific_session_id=submission_id[:64])


def check_review_on_prolific(
    participant: Participant,
    client: ProlificClient,
    approve: bool,
    actor: User | None = None,
    message: str = "",
    category: str = "",
) -> None:
    """Approve or reject the participant's submission on Prolific: refuses a
    participant whose submission is not known, then do_review_on_prolific."""
    assignment = getattr(participant, "assignment", None)
    if assignment is None or not assignment.prolific_session_id:
        raise StudyError(
            f"{participant}: no Prolific submission is known (sync submissions first)."
        )
    do_review_on_prolific(participant, assignment, client, approve, actor, message, category)


def do_review_on_prolific(
    participant: Participant,
    assignment: Assignment,
    client: ProlificClient,
    approve: bool,
    actor: User | None = None,
    message: str = "",
    category: str = "",
) -> None:
    """Needs no lock: nothing stored changes but an audit event (Prolific decides
    whether a submission may still be reviewed)."""
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


def check_approve_completed(study: Study, client: ProlificClient, actor: User | None = None) -> int:
    """Approve on Prolific, in one request, the submissions of every accepted
    participant whose work is complete (excluded and failed-check participants
    are left for a person to review); how many. Refuses a study not on
    Prolific, then do_approve_completed."""
    if not study.prolific_study_id:
        raise StudyError("This study is not on Prolific.")
    done = list(
        Participant.objects.filter(
            study=study,
            status=Participant.Status.ACCEPTED,
            assignment__status=Assignment.Status.COMPLETED,
        )
        .exclude(assignment__prolific_session_id="")
        .select_related("assignment")
    )
    if not done:
        return 0
    do_approve_completed(study, done, client, actor)
    return len(done)


def do_approve_completed(
    study: Study, participants: list[Participant], client: ProlificClient, actor: User | None
) -> None:
    """Needs no lock: nothing stored changes but audit events (Prolific skips
    submissions approved already)."""
    client.bulk_approve(
        study.prolific_study_id, [p.assignment.prolific_session_id for p in participants]
    )
    for participant in participants:
        audit(study, Action.PROLIFIC_APPROVED, participant=participant, actor=actor)
