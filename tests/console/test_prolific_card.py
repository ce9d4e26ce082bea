"""The study monitor's Prolific card through Django's test client, against
the local server that speaks Prolific's API: a bonus for the qualified raters
is set up (nothing paid), paid once however often Pay or the form is sent, a
lost answer is settled by hand, and a message reaches the participants."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotator.actions.arrival import check_start_assignment
from annotator.actions.prolific_sync import check_create_on_prolific
from annotator.actions.rating import check_complete_assignment
from annotator.models import AuditEvent, BonusPayment
from annotator.prolific_api import ProlificClient
from tests.analysis.test_scope import gold_score
from tests.annotator.conftest import rate_as_a_person

pytestmark = pytest.mark.django_db


@pytest.fixture
def prolific(fake_prolific, settings):
    """fake_prolific, with the settings that point Concord at it."""
    settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL = fake_prolific.token, fake_prolific.url
    return fake_prolific


def follow_text(answer) -> str:
    return answer.content.decode()


def test_bonus_pay_once_settle_and_message_from_the_monitor(
    researcher_client, crowd_study, prolific
):
    study_id = check_create_on_prolific(
        crowd_study, ProlificClient(prolific.token, prolific.url), "https://c.example.org"
    )
    for pid in ("ANNA", "BORIS"):  # careful raters, not flagged
        assignment = check_start_assignment(crowd_study, pid=pid)
        rate_as_a_person(assignment, gold_score, seconds=300)
        check_complete_assignment(assignment)
        prolific.add_submission(study_id, pid, "AWAITING REVIEW")
    page = follow_text(researcher_client.get(reverse("console:study", args=[crowd_study.pk])))
    assert "On Prolific: bonuses and messages" in page and "2 qualified raters" in page
    key = re.search(r'name="key" value="(\w+)"', page)[1]
    form = {"key": key, "amount": "1.50", "reason": "careful work"}
    answer = researcher_client.post(
        reverse("console:study_bonus", args=[crowd_study.pk]), form, follow=True
    )
    text = follow_text(answer)
    assert "set up on Prolific for 2 participants: GBP 4.00 with fees" in text
    assert prolific.paid == []
    # the same form again (a double click): one payment
    again = researcher_client.post(
        reverse("console:study_bonus", args=[crowd_study.pk]), form, follow=True
    )
    assert "was set up already" in follow_text(again)
    payment = BonusPayment.objects.get()
    assert f'data-bonus="{payment.pk}"' in follow_text(again)
    pay = reverse("console:bonus_pay", args=[payment.pk])
    assert "is paid" in follow_text(researcher_client.post(pay, follow=True))
    assert "Only a bonus set up" in follow_text(researcher_client.post(pay, follow=True))
    assert len(prolific.paid) == 2
    # a second bonus whose pay answer is lost, settled by hand
    form = {"key": "second", "amount": "0.50", "reason": "follow-up"}
    researcher_client.post(reverse("console:study_bonus", args=[crowd_study.pk]), form)
    second = BonusPayment.objects.get(request_key="second")
    prolific.drop_next = 1
    lost = follow_text(
        researcher_client.post(reverse("console:bonus_pay", args=[second.pk]), follow=True)
    )
    assert "may or may not have gone through" in lost and "Prolific shows it paid" in lost
    settle = reverse("console:bonus_settle", args=[second.pk])
    assert "recorded as paid" in follow_text(
        researcher_client.post(settle, {"outcome": "paid"}, follow=True)
    )
    assert len(prolific.paid) == 4  # the lost answer's payment, once
    # bad input: a clear message, nothing stored
    bad = {"key": "third", "amount": "30", "reason": "typo"}
    page = follow_text(
        researcher_client.post(
            reverse("console:study_bonus", args=[crowd_study.pk]), bad, follow=True
        )
    )
    assert "in pounds, not pence" in page
    assert not BonusPayment.objects.filter(request_key="third").exists()
    # a message to every participant
    note = {"to": "all", "body": "Thank you: a bonus is on its way."}
    sent = researcher_client.post(
        reverse("console:study_message", args=[crowd_study.pk]), note, follow=True
    )
    assert "Sent the message to 2 participants" in follow_text(sent)
    assert [m["to"] for m in prolific.messages] == ["ANNA", "BORIS"]
    assert AuditEvent.objects.filter(action="messaged").count() == 2
    # the card is for researchers only
    researcher_client.logout()
    outsider = researcher_client.post(reverse("console:bonus_pay", args=[payment.pk]))
    assert outsider.status_code == 302 and len(prolific.paid) == 4


def test_two_loads_of_the_form_make_one_bonus_and_a_repeat_needs_pay_again(
    researcher_client, crowd_study, prolific
):
    """Two page loads of the monitor (two tabs, a reload) carry one key, so the
    forms sent from both make one payment; a fresh form for the same amount
    to the same raters is refused until "Pay again" is ticked."""
    study_id = check_create_on_prolific(
        crowd_study, ProlificClient(prolific.token, prolific.url), "https://c.example.org"
    )
    for pid in ("ANNA", "BORIS"):
        assignment = check_start_assignment(crowd_study, pid=pid)
        rate_as_a_person(assignment, gold_score, seconds=300)
        check_complete_assignment(assignment)
        prolific.add_submission(study_id, pid, "AWAITING REVIEW")
    url = reverse("console:study", args=[crowd_study.pk])
    keys = [
        re.search(r'name="key" value="(\w+)"', follow_text(researcher_client.get(url)))[1]
        for _ in "ab"
    ]
    assert keys[0] == keys[1]
    bonus = reverse("console:study_bonus", args=[crowd_study.pk])
    for key in keys:
        researcher_client.post(bonus, {"key": key, "amount": "1.50", "reason": "careful work"})
    assert BonusPayment.objects.count() == 1
    fresh = re.search(r'name="key" value="(\w+)"', follow_text(researcher_client.get(url)))[1]
    assert fresh != keys[0]  # the next bonus is another request
    form = {"key": fresh, "amount": "1.50", "reason": "careful work"}
    refused = follow_text(researcher_client.post(bonus, form, follow=True))
    assert "The same bonus was recorded within 24 hours" in refused and "Pay again" in refused
    assert BonusPayment.objects.count() == 1
    researcher_client.post(bonus, form | {"again": "on"})
    assert BonusPayment.objects.count() == 2
