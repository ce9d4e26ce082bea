"""Bonuses to a study's participants on Prolific: set up (Prolific checks the
participants and says what it will cost), then paid, at most once.

Prolific pays a bulk bonus payment again for every pay request with the same
id. So the payment is marked PAYING, and that committed, before the request
goes out: a request that gets an answer moves it to PAID (or back to SET_UP
when Prolific refused, so nothing was paid); one that gets none (a timeout,
a lost connection, a crash) leaves it PAYING, and nothing pays it again until
a researcher has looked on Prolific and recorded what happened
(check_settle_bonuses). A form sent twice makes one payment (`request_key`).
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal, InvalidOperation

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.actions.audit import Action, audit
from annotator.actions.locks import lock_bonus_payment, lock_study
from annotator.errors import StudyConflict, StudyError
from annotator.models import BonusLine, BonusPayment, Participant, Study
from annotator.prolific_api import ProlificClient, ProlificError
from users.models import User

# Prolific's own limit per bulk payment, and a cap per participant that catches
# an amount typed in pence (30 pays GBP 30.00, as Prolific's docs warn).
MOST_LINES = 200
MOST_PER_PARTICIPANT = Decimal("20.00")
Status = BonusPayment.Status
# A bonus of the same amount to the same participant of the same study within
# this many hours is taken for the same bonus sent twice (a command run again
# without --key, two open forms) unless the caller says "pay again".
REPEAT_WINDOW_HOURS = 24


def parse_amount(value: object) -> Decimal:
    """A bonus in the study's currency: more than 0, at most
    MOST_PER_PARTICIPANT, in whole pence."""
    try:
        amount = Decimal(str(value).strip())
    except (InvalidOperation, ValueError) as error:
        raise StudyError(f"A bonus of {value!r} is not an amount (e.g. 1.50).") from error
    if not amount.is_finite() or amount <= 0:
        raise StudyError(f"A bonus must be more than 0 (got {value!r}).")
    if amount != amount.quantize(Decimal("0.01")):
        raise StudyError(f"A bonus is paid in whole pence (got {value!r}).")
    if amount > MOST_PER_PARTICIPANT:
        raise StudyError(
            f"A bonus of {amount} is over {MOST_PER_PARTICIPANT} per participant: amounts are "
            "in pounds, not pence (30 pays GBP 30.00)."
        )
    return amount


@transaction.atomic
def check_record_bonuses(
    study: Study,
    amounts: dict[Participant, object],
    reason: str,
    request_key: str,
    actor: User | None = None,
    *,
    again: bool = False,
) -> tuple[BonusPayment, bool]:
    """Record a bonus payment (DRAFT) for participants of the study; the
    payment and whether it is new. The same `request_key` again returns the
    payment it made; a bonus of the same amount to a participant who had one
    in this study within REPEAT_WINDOW_HOURS (not refused by Prolific) is
    refused unless `again` (a second key is not a second intent). Takes the
    study lock, then do_record_bonuses."""
    if not request_key or len(request_key) > 64:
        raise StudyError("A bonus request needs a key of 1 to 64 characters.")
    if (existing := _made_with(request_key, study)) is not None:
        return existing, False
    study = lock_study(study)
    # the same key sent twice at once: the second waited for the lock
    if (existing := _made_with(request_key, study)) is not None:
        return existing, False
    if not study.prolific_study_id:
        raise StudyError("Bonuses are paid on Prolific: create the study there first.")
    reason = (reason or "").strip()
    if not reason:
        raise StudyError("Say why the bonus is paid (the researchers' record).")
    if not amounts:
        raise StudyError("Choose the participants to pay a bonus.")
    if len(amounts) > MOST_LINES:
        raise StudyError(f"At most {MOST_LINES} participants per bonus payment.")
    lines = []
    for participant, value in amounts.items():
        if participant.study_id != study.pk:
            raise StudyError(f"{participant} is not a participant of this study.")
        if not participant.prolific_pid:
            raise StudyError(f"{participant} has no Prolific id (a gold annotator).")
        lines.append((participant, parse_amount(value)))
    if not again:
        refuse_repeated_bonuses(study, lines)
    return do_record_bonuses(study, lines, reason[:300], request_key, actor), True


def refuse_repeated_bonuses(study: Study, lines: list[tuple[Participant, Decimal]]) -> None:
    """StudyConflict naming the participants who had a bonus of the same
    amount in this study within REPEAT_WINDOW_HOURS (a refused one paid
    nothing and does not count)."""
    since = timezone.now() - timedelta(hours=REPEAT_WINDOW_HOURS)
    wanted = {(participant.pk, amount) for participant, amount in lines}
    earlier = (
        BonusLine.objects.filter(
            payment__study=study,
            payment__created_at__gte=since,
            participant__in=[participant for participant, _ in lines],
        )
        .exclude(payment__status=Status.REFUSED)
        .select_related("participant", "payment")
        .order_by("payment__created_at", "pk")
    )
    repeated = [line for line in earlier if (line.participant_id, line.amount) in wanted]
    if not repeated:
        return
    named = ", ".join(
        f"{line.participant.prolific_pid} (GBP {line.amount} in bonus {line.payment_id})"
        for line in repeated[:5]
    )
    more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
    raise StudyConflict(
        f"The same bonus was recorded within {REPEAT_WINDOW_HOURS} hours for {named}{more}: "
        "nothing new was recorded. To pay it again on purpose, say so (console: tick "
        '"Pay again"; command: --again).'
    )


def do_record_bonuses(
    study: Study,
    lines: list[tuple[Participant, Decimal]],
    reason: str,
    request_key: str,
    actor: User | None,
) -> BonusPayment:
    """Needs the study lock (check_record_bonuses takes it): two requests with
    one key must make one payment."""
    try:
        with transaction.atomic():
            payment = BonusPayment.objects.create(
                study=study, reason=reason, request_key=request_key, created_by=actor
            )
    except IntegrityError as error:
        raise StudyConflict("This request key was used for a bonus already.") from error
    BonusLine.objects.bulk_create(
        BonusLine(payment=payment, participant=participant, amount=amount)
        for participant, amount in lines
    )
    return payment


def check_set_up_bonuses(
    payment: BonusPayment, client: ProlificClient, actor: User | None = None
) -> BonusPayment:
    """Set a recorded payment up on Prolific (nothing is paid): Prolific checks
    that every participant took part and says the total with its fees. A
    refusal marks it REFUSED with Prolific's reason; no answer leaves it a
    draft. Then do_set_up_bonuses."""
    payment.refresh_from_db()
    if payment.status != Status.DRAFT:
        raise StudyConflict(f"This bonus is {payment.get_status_display().lower()} already.")
    lines = list(payment.lines.select_related("participant"))
    try:
        answer = client.set_up_bonuses(
            payment.study.prolific_study_id,
            [(line.participant.prolific_pid, line.amount) for line in lines],
        )
    except ProlificError as error:
        if error.refused:
            return do_refuse_bonuses(payment, str(error), actor)
        # no answer: a payment set up on Prolific unpaid costs nothing, so it
        # stays a draft that may be set up again
        BonusPayment.objects.filter(pk=payment.pk).update(
            error=f"No answer from Prolific ({error}): set it up again."[:2000]
        )
        payment.refresh_from_db()
        return payment
    return do_set_up_bonuses(payment, answer, actor)


def do_set_up_bonuses(payment: BonusPayment, answer: dict, actor: User | None) -> BonusPayment:
    """Needs no lock: one UPDATE from DRAFT (a second set-up finds none)."""
    total = answer.get("total_amount")
    changed = BonusPayment.objects.filter(pk=payment.pk, status=Status.DRAFT).update(
        status=Status.SET_UP,
        error="",
        prolific_id=str(answer.get("id", ""))[:64],
        total_pence=int(total) if isinstance(total, int | float) else None,
    )
    payment.refresh_from_db()
    if changed:
        audit(payment.study, Action.BONUS_SET_UP, actor=actor, detail=_summary(payment))
    return payment


def do_refuse_bonuses(payment: BonusPayment, error: str, actor: User | None) -> BonusPayment:
    """Needs no lock: one UPDATE from DRAFT."""
    BonusPayment.objects.filter(pk=payment.pk, status=Status.DRAFT).update(
        status=Status.REFUSED, error=error[:2000]
    )
    payment.refresh_from_db()
    audit(payment.study, Action.BONUS_REFUSED, actor=actor, detail=f"{_summary(payment)}: {error}")
    return payment


def check_pay_bonuses(
    payment: BonusPayment, client: ProlificClient, actor: User | None = None
) -> BonusPayment:
    """Pay a payment that is set up, at most once: marks it PAYING (committed)
    before the request, then do_finish_paying with what came back. The mark is
    one conditional UPDATE, so of two clicks at once (on any database) one
    pays and the other is refused."""
    claimed = BonusPayment.objects.filter(pk=payment.pk, status=Status.SET_UP).update(
        status=Status.PAYING, error=""
    )
    locked = BonusPayment.objects.get(pk=payment.pk)
    if not claimed:
        raise StudyConflict(
            f"Only a bonus set up on Prolific can be paid; this one is "
            f"{locked.get_status_display().lower()}."
        )
    try:
        client.pay_bonuses(locked.prolific_id)
    except ProlificError as error:
        return do_finish_paying(locked, paid=False, error=error, actor=actor)
    return do_finish_paying(locked, paid=True, error=None, actor=actor)


def do_finish_paying(
    payment: BonusPayment, *, paid: bool, error: ProlificError | None, actor: User | None
) -> BonusPayment:
    """Needs no lock: one UPDATE from PAYING. Paid: PAID. Refused by Prolific
    (an answer saying no): back to SET_UP, nothing was paid. No answer: stays
    PAYING, with what to do."""
    if paid:
        BonusPayment.objects.filter(pk=payment.pk, status=Status.PAYING).update(
            status=Status.PAID, paid_at=timezone.now()
        )
        payment.refresh_from_db()
        audit(payment.study, Action.BONUS_PAID, actor=actor, detail=_summary(payment))
        return payment
    assert error is not None
    if error.refused:
        BonusPayment.objects.filter(pk=payment.pk, status=Status.PAYING).update(
            status=Status.SET_UP, error=f"Prolific refused the payment: {error}"[:2000]
        )
        payment.refresh_from_db()
        audit(
            payment.study,
            Action.BONUS_REFUSED,
            actor=actor,
            detail=f"{_summary(payment)}: {error}",
        )
        return payment
    BonusPayment.objects.filter(pk=payment.pk, status=Status.PAYING).update(
        error=(
            f"No answer from Prolific ({error}): the payment may or may not have gone "
            "through. Look at the study's bonuses on Prolific, then record what happened; "
            "Concord does not pay it again by itself."
        )[:2000]
    )
    payment.refresh_from_db()
    audit(payment.study, Action.BONUS_UNKNOWN, actor=actor, detail=_summary(payment))
    return payment


@transaction.atomic
def check_settle_bonuses(
    payment: BonusPayment, paid: bool, actor: User | None = None
) -> BonusPayment:
    """A researcher records what Prolific shows for a payment left PAYING:
    paid, or not paid (then it is SET_UP again and may be paid). Takes the
    payment's row lock."""
    locked = lock_bonus_payment(payment)
    if locked.status != Status.PAYING:
        raise StudyConflict("Only a bonus whose pay request got no answer can be settled.")
    locked.status = Status.PAID if paid else Status.SET_UP
    locked.paid_at = timezone.now() if paid else None
    locked.error = "" if paid else "Not paid, as Prolific showed: it may be paid again."
    locked.save(update_fields=["status", "paid_at", "error"])
    audit(
        locked.study,
        Action.BONUS_PAID if paid else Action.BONUS_REFUSED,
        actor=actor,
        detail=f"{_summary(locked)} (recorded by hand after no answer)",
    )
    return locked


def _made_with(request_key: str, study: Study) -> BonusPayment | None:
    existing = BonusPayment.objects.filter(request_key=request_key).first()
    if existing is not None and existing.study_id != study.pk:
        raise StudyConflict("This request key was used for another study's bonus.")
    return existing


def _summary(payment: BonusPayment) -> str:
    lines = list(payment.lines.all())
    total = sum((line.amount for line in lines), Decimal(0))
    return f"bonus {payment.pk}: {len(lines)} participant(s), {total:.2f} in all ({payment.reason})"
