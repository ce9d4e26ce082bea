"""Messages to a study's participants on Prolific (one or many at once), and
the study's own state there: paused (no new places taken), started again, or
stopped for good. Each is an audit event; the message's text is kept in it."""

from __future__ import annotations

from annotator.actions.audit import Action, audit
from annotator.errors import StudyError
from annotator.models import Participant, Study
from annotator.prolific_api import STUDY_TRANSITIONS, ProlificClient
from users.models import User

MOST_CHARACTERS = 5000


def check_message_participants(
    study: Study,
    participants: list[Participant],
    body: str,
    client: ProlificClient,
    actor: User | None = None,
) -> int:
    """Send `body` to these participants of the study on Prolific; how many.
    Refuses an empty or overlong message, someone not in the study or without
    a Prolific id, and a study not on Prolific. Then do_message_participants."""
    body = (body or "").strip()
    if not body:
        raise StudyError("Write the message to send.")
    if len(body) > MOST_CHARACTERS:
        raise StudyError(f"A message has at most {MOST_CHARACTERS} characters.")
    if not study.prolific_study_id:
        raise StudyError("Messages go through Prolific: create the study there first.")
    if not participants:
        raise StudyError("Choose the participants to message.")
    for participant in participants:
        if participant.study_id != study.pk or not participant.prolific_pid:
            raise StudyError(f"{participant} is not a Prolific participant of this study.")
    do_message_participants(study, participants, body, client, actor)
    return len(participants)


def do_message_participants(
    study: Study,
    participants: list[Participant],
    body: str,
    client: ProlificClient,
    actor: User | None,
) -> None:
    """Needs no lock: nothing stored changes but audit events."""
    client.message_participants(
        study.prolific_study_id, [p.prolific_pid for p in participants], body
    )
    for participant in participants:
        audit(study, Action.MESSAGED, participant=participant, actor=actor, detail=body)


def check_transition_on_prolific(
    study: Study, action: str, client: ProlificClient, actor: User | None = None
) -> None:
    """PAUSE, START or STOP the study on Prolific (its own state in Concord is
    annotator.actions.status). Refuses a study not on Prolific, then
    do_transition_on_prolific."""
    if action not in STUDY_TRANSITIONS or action == "PUBLISH":
        raise StudyError("On Prolific a study can be paused (PAUSE), started (START) or stopped.")
    if not study.prolific_study_id:
        raise StudyError("This study is not on Prolific.")
    do_transition_on_prolific(study, action, client, actor)


def do_transition_on_prolific(
    study: Study, action: str, client: ProlificClient, actor: User | None
) -> None:
    """Needs no lock: nothing stored changes but an audit event (Prolific refuses
    a transition its study cannot make)."""
    client.transition_study(study.prolific_study_id, action)
    audit(study, Action.PROLIFIC_TRANSITION, actor=actor, detail=action)
