"""Every row lock of the human studies, in one place and taken in this order
(see annotator.actions), each inside a transaction:

1. the study's (`lock_study`);
2. then one participant's (`lock_participant`) or one assignment's
   (`lock_assignment`: a rating takes only this one);
3. a bonus payment's (`lock_bonus_payment`) and a participant group's
   (`lock_group`) stand alone: nothing else is locked with them.

Taking them in one order means two requests never wait for each other in a
circle (a deadlock PostgreSQL would break by failing one of them)."""

from __future__ import annotations

from annotator.models import Assignment, BonusPayment, Participant, ParticipantGroup, Study


def lock_study(study: Study | int) -> Study:
    """Take the study's row lock (SELECT ... FOR UPDATE) and return the study as
    stored now. A Study instance passed in is refreshed in place, so the caller's
    object never holds stale state that a later save() would write back."""
    locking = Study.objects.select_for_update()
    if isinstance(study, Study):
        study.refresh_from_db(from_queryset=locking)
        return study
    return locking.get(pk=study)


def lock_assignment(pk: int, *related: str) -> Assignment:
    """Take one assignment's row lock, with `related` (default: its participant and
    task) read in the same query. Caller holds the study lock, or only this lock
    for a rating."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .select_related(*(related or ("participant", "task")))
        .get(pk=pk)
    )


def lock_participant(participant: Participant | int) -> Participant:
    """One participant's row lock, the participant as stored now. Caller holds
    the study lock."""
    pk = participant.pk if isinstance(participant, Participant) else participant
    return Participant.objects.select_for_update().get(pk=pk)


def lock_bonus_payment(payment: BonusPayment | int) -> BonusPayment:
    """A bonus payment's row lock, the payment as stored now (no other lock held)."""
    pk = payment.pk if isinstance(payment, BonusPayment) else payment
    return BonusPayment.objects.select_for_update().get(pk=pk)


def lock_group(group: ParticipantGroup | int) -> ParticipantGroup:
    """A participant group's row lock, the group as stored now (no other lock held)."""
    pk = group.pk if isinstance(group, ParticipantGroup) else group
    return ParticipantGroup.objects.select_for_update().get(pk=pk)
