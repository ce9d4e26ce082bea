"""A crowd study's participants on Prolific, from its monitor: bonuses (set
up, then paid at most once; a pay request without an answer is settled by
hand), and messages. Each view calls annotator.actions and answers on the
monitor."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from annotator.actions.bonuses import (
    check_pay_bonuses,
    check_record_bonuses,
    check_set_up_bonuses,
    check_settle_bonuses,
)
from annotator.actions.groups import qualified_raters
from annotator.actions.messages import check_message_participants
from annotator.errors import StudyError
from annotator.models import BonusPayment, Participant, Study
from annotator.prolific_api import ProlificClient, ProlificError, prolific_client_or_none
from console.views.common import scoped_object
from console.views.studies import answer_study, bonus_key
from core.words import count
from users.decorators import researcher_required
from users.permissions import signed_in_user

RECIPIENTS = {"qualified": "the qualified raters", "all": "every participant"}


def _client(study: Study) -> ProlificClient:
    client = prolific_client_or_none()
    if client is None:
        raise StudyError("Set PROLIFIC_API_TOKEN to use Prolific's API.")
    if not study.prolific_study_id:
        raise StudyError("Create the study on Prolific first.")
    return client


def _recipients(study: Study, which: str) -> list[Participant]:
    if which == "qualified":
        return qualified_raters(study)
    if which == "all":
        return list(Participant.objects.filter(study=study).exclude(prolific_pid=""))
    raise StudyError(f"Send to {' or '.join(RECIPIENTS)}.")


@researcher_required
@require_POST
def study_bonus(request: HttpRequest, pk: int) -> HttpResponse:
    """Record a bonus of one amount for the qualified raters and set it up on
    Prolific (it is paid by study_bonus_pay, once the total is seen)."""
    study = scoped_object(request, Study.objects.all(), pk)
    try:
        client = _client(study)
        people = qualified_raters(study)
        payment, new = check_record_bonuses(
            study,
            dict.fromkeys(people, request.POST.get("amount", "")),
            request.POST.get("reason", ""),
            request.POST.get("key", "")[:64],
            signed_in_user(request),
            again=request.POST.get("again") == "on",
        )
        if new:  # the next bonus from this session is another request
            bonus_key(request, study, fresh=True)
        if payment.status == BonusPayment.Status.DRAFT:
            payment = check_set_up_bonuses(payment, client, signed_in_user(request))
    except (StudyError, ProlificError) as error:
        return answer_study(request, study, str(error), False)
    if payment.status == BonusPayment.Status.REFUSED:
        return answer_study(request, study, f"Prolific refused the bonus: {payment.error}", False)
    if payment.status != BonusPayment.Status.SET_UP:
        text = payment.error or f"Bonus {payment.pk} is {payment.get_status_display().lower()}."
        return answer_study(request, study, text, payment.status == BonusPayment.Status.PAID)
    total = payment.total_text or "an amount Prolific did not say"
    text = (
        f"Bonus {payment.pk} set up on Prolific for {count(len(people), 'participant')}: "
        f"{total} with fees. Nothing is paid until you press Pay."
        if new
        else f"This bonus was set up already (bonus {payment.pk})."
    )
    return answer_study(request, study, text, True)


@researcher_required
@require_POST
def study_bonus_pay(request: HttpRequest, pk: int) -> HttpResponse:
    payment = scoped_object(
        request, BonusPayment.objects.select_related("study"), pk, "study__project"
    )
    try:
        payment = check_pay_bonuses(payment, _client(payment.study), signed_in_user(request))
    except (StudyError, ProlificError) as error:
        return answer_study(request, payment.study, str(error), False)
    paid = payment.status == BonusPayment.Status.PAID
    text = f"Bonus {payment.pk} is paid." if paid else payment.error
    return answer_study(request, payment.study, text, paid)


@researcher_required
@require_POST
def study_bonus_settle(request: HttpRequest, pk: int) -> HttpResponse:
    """What Prolific shows for a pay request that got no answer."""
    payment = scoped_object(
        request, BonusPayment.objects.select_related("study"), pk, "study__project"
    )
    paid = request.POST.get("outcome") == "paid"
    try:
        payment = check_settle_bonuses(payment, paid, signed_in_user(request))
    except StudyError as error:
        return answer_study(request, payment.study, str(error), False)
    text = (
        f"Bonus {payment.pk} recorded as paid."
        if paid
        else f"Bonus {payment.pk} recorded as not paid: it may be paid again."
    )
    return answer_study(request, payment.study, text, True)


@researcher_required
@require_POST
def study_message(request: HttpRequest, pk: int) -> HttpResponse:
    study = scoped_object(request, Study.objects.all(), pk)
    which = request.POST.get("to", "")
    try:
        sent = check_message_participants(
            study,
            _recipients(study, which),
            request.POST.get("body", ""),
            _client(study),
            signed_in_user(request),
        )
    except (StudyError, ProlificError) as error:
        return answer_study(request, study, str(error), False)
    return answer_study(
        request, study, f"Sent the message to {count(sent, 'participant')} on Prolific.", True
    )
