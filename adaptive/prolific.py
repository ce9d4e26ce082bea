"""An adaptive study's batches on Prolific: each batch study is created,
published, paused and stopped there as its state in Concord says, and at the
end the participants whose work was accepted get the study's bonus and
everyone its closing message.

Reconciling (what Concord wants against what Prolific says it has) instead
of sending each change once makes every step safe to repeat: a request that
failed or got no answer is simply tried again at the next step. Bonuses go
through annotator.actions.bonuses, which pays at most once.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from adaptive.loop import decide
from adaptive.models import AdaptiveStudy, Decision
from adaptive.waves import batches
from annotator.actions.bonuses import check_pay_bonuses, check_record_bonuses, check_set_up_bonuses
from annotator.actions.locks import lock_study
from annotator.actions.messages import check_message_participants
from annotator.actions.participants import do_refill_quota, prolific_places_wanted
from annotator.actions.prolific_sync import (
    check_sync_prolific_submissions,
    do_create_on_prolific,
)
from annotator.errors import StudyError
from annotator.models import Assignment, Participant, Study, Task
from annotator.prolific_api import ProlificClient, ProlificError, prolific_client_or_none
from annotator.prolific_records import BonusPayment

# what the study should be on Prolific, by its state in Concord
WANTED: dict[str, str] = {
    Study.Status.OPEN: "ACTIVE",
    Study.Status.PAUSED: "PAUSED",
    Study.Status.CLOSED: "COMPLETED",
}
# (Prolific's state, wanted) -> the transition that gets there
MOVES = {
    ("UNPUBLISHED", "ACTIVE"): "PUBLISH",
    ("ACTIVE", "PAUSED"): "PAUSE",
    ("PAUSED", "ACTIVE"): "START",
    ("ACTIVE", "COMPLETED"): "STOP",
    ("PAUSED", "COMPLETED"): "STOP",
}


def base_url() -> str:
    return settings.CONCORD_PUBLIC_URL or "http://127.0.0.1:8000"


@transaction.atomic
def sync_batch(study: Study, client: ProlificClient) -> str | None:
    """One batch brought to its wanted state; the transition made, if any.
    Under the batch study's lock: two workers stepping at once must not both
    create or move it (the second reads what the first did, and does nothing)."""
    study = lock_study(study)
    if not study.prolific_study_id:
        if study.status != Study.Status.OPEN:
            return None  # never recruited: nothing to stop there
        do_create_on_prolific(study, client, base_url())
    there = client.study(study.prolific_study_id)
    state = str(there.get("status", ""))
    move = MOVES.get((state, WANTED[study.status]))
    if move is not None:
        client.transition_study(study.prolific_study_id, move)
    if state != "UNPUBLISHED":
        check_sync_prolific_submissions(study, client)  # releases returned places
    if study.status == Study.Status.OPEN and state in ("ACTIVE", "PAUSED"):
        # an excluded participant's ratings no longer count: their draws wait
        # again, and Prolific needs a place for someone else to rate them
        tasks = Task.objects.filter(study=study).count()
        if int(there.get("total_available_places") or 0) < prolific_places_wanted(study, tasks):
            do_refill_quota(study, None, client)
    return move


def sync_on_prolific(adaptive_id: int, client: ProlificClient | None = None) -> list[str]:
    """Every batch to its wanted state; at the end, bonus and message once.
    Errors are decisions on the record (and retried at the next step)."""
    adaptive = AdaptiveStudy.objects.get(pk=adaptive_id)
    if not adaptive.on_prolific:
        return []
    client = client or prolific_client_or_none()
    if client is None:  # not a decision: nothing was tried (the monitor says so)
        return ["PROLIFIC_API_TOKEN is not set: the batches are not on Prolific."]
    errors = []
    for study in batches(adaptive):
        try:
            sync_batch(study, client)
        except (ProlificError, StudyError) as failure:
            errors.append(f"{study.name}: {failure}")
    if adaptive.status == AdaptiveStudy.Status.FINISHED and not errors:
        # one worker at a time (two finishing steps may both get here): the claim
        # is one conditional UPDATE; what failed is handed back for the next step
        claimed = AdaptiveStudy.objects.filter(pk=adaptive.pk, closed_out_at__isnull=True).update(
            closed_out_at=timezone.now()
        )
        if claimed:
            errors += close_out(adaptive, client)
            if errors:
                AdaptiveStudy.objects.filter(pk=adaptive.pk).update(closed_out_at=None)
    for error in errors:
        decide(adaptive, Decision.Action.PROLIFIC, error[:2000])
    return errors


def accepted_participants(study: Study) -> list[Participant]:
    return list(
        Participant.objects.filter(
            study=study,
            status=Participant.Status.ACCEPTED,
            assignment__status=Assignment.Status.COMPLETED,
        ).exclude(prolific_pid="")
    )


def close_out(adaptive: AdaptiveStudy, client: ProlificClient) -> list[str]:
    """The finished study's bonus (at most once per batch: the request key) and
    closing message (once: recorded as a decision)."""
    errors = []
    for study in batches(adaptive):
        people = accepted_participants(study)
        if not people:
            continue
        try:
            if adaptive.bonus_pence:
                amount = f"{adaptive.bonus_pence / 100:.2f}"
                payment, _ = check_record_bonuses(
                    study,
                    {p: amount for p in people},
                    "adaptive study finished: work accepted",
                    f"adaptive-{adaptive.pk}-bonus-{study.pk}",
                )
                if payment.status == BonusPayment.Status.DRAFT:
                    payment = check_set_up_bonuses(payment, client)
                if payment.status == BonusPayment.Status.SET_UP:
                    payment = check_pay_bonuses(payment, client)
                    if payment.status == BonusPayment.Status.PAID:
                        decide(
                            adaptive,
                            Decision.Action.BONUS,
                            f"GBP {amount} to each of {len(people)} participants of {study.name}",
                        )
            sent = f"closing message to {len(people)} participants of {study.name}"
            message = Decision.Action.MESSAGE
            if (
                adaptive.closing_message
                and not adaptive.decisions.filter(action=message)
                .filter(detail__endswith=f" participants of {study.name}")
                .exists()
            ):
                check_message_participants(study, people, adaptive.closing_message, client)
                decide(adaptive, message, sent)
        except (ProlificError, StudyError) as error:
            errors.append(f"{study.name}: {error}")
    return errors
