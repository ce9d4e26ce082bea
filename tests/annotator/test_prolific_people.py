"""Bonuses, messages, study transitions and participant groups on Prolific,
against the local server that speaks its API (demo/fake_prolific.py),
where paying a bonus twice pays twice, as on Prolific."""

from decimal import Decimal

import pytest

from annotator.actions.arrival import check_start_assignment
from annotator.actions.bonuses import (
    check_pay_bonuses,
    check_record_bonuses,
    check_set_up_bonuses,
    check_settle_bonuses,
)
from annotator.actions.groups import (
    check_add_to_group,
    check_create_participant_group,
    check_filter_study,
    check_remove_from_group,
    excluded_raters,
    qualified_raters,
)
from annotator.actions.messages import check_message_participants, check_transition_on_prolific
from annotator.actions.participants import check_exclude_participant
from annotator.actions.prolific_sync import check_create_on_prolific, prolific_draft
from annotator.errors import StudyConflict, StudyError
from annotator.models import Assignment, AuditEvent, BonusPayment, ParticipantGroupMember
from annotator.prolific_api import ProlificClient, ProlificError
from tests.annotator.conftest import make_study

pytestmark = pytest.mark.django_db
BASE = "https://concord.example.org"


@pytest.fixture
def api(fake_prolific):
    return ProlificClient(fake_prolific.token, fake_prolific.url)


@pytest.fixture
def on_prolific(crowd_study, fake_prolific, api):
    """The study on Prolific with three participants who took part there."""
    study_id = check_create_on_prolific(crowd_study, api, BASE)
    people = {}
    for pid in ("ANNA", "BORIS", "CLARA"):
        people[pid] = check_start_assignment(crowd_study, pid=pid).participant
        fake_prolific.add_submission(study_id, pid, "AWAITING REVIEW")
    return crowd_study, people


def test_a_bonus_is_set_up_then_paid_once(on_prolific, fake_prolific, api):
    study, people = on_prolific
    payment, new = check_record_bonuses(
        study, {people["ANNA"]: "1.50", people["BORIS"]: Decimal("0.75")}, "careful work", "k1"
    )
    assert new and payment.status == BonusPayment.Status.DRAFT
    again, new = check_record_bonuses(study, {people["ANNA"]: "1.50"}, "careful work", "k1")
    assert not new and again.pk == payment.pk  # the form sent twice: one payment
    payment = check_set_up_bonuses(payment, api)
    assert payment.status == "set_up" and payment.total_pence == 225 + 75
    assert fake_prolific.paid == []  # set up is not paid
    payment = check_pay_bonuses(payment, api)
    assert payment.status == "paid" and payment.paid_at is not None
    assert sorted((pid, amount) for _, pid, amount in fake_prolific.paid) == [
        ("ANNA", Decimal("1.50")),
        ("BORIS", Decimal("0.75")),
    ]
    with pytest.raises(StudyConflict, match="Only a bonus set up"):
        check_pay_bonuses(payment, api)
    assert len(fake_prolific.paid) == 2
    actions = list(AuditEvent.objects.filter(study=study).values_list("action", flat=True))
    assert "bonus_set_up" in actions and "bonus_paid" in actions


def test_a_pay_request_without_an_answer_is_never_paid_again_by_itself(
    on_prolific, fake_prolific, api
):
    study, people = on_prolific
    payment, _ = check_record_bonuses(study, {people["CLARA"]: "2.00"}, "qualified", "k2")
    payment = check_set_up_bonuses(payment, api)
    fake_prolific.drop_next = 1  # Prolific pays, the answer is lost
    payment = check_pay_bonuses(payment, api)
    assert payment.status == "paying"
    assert "may or may not have gone through" in payment.error
    assert len(fake_prolific.paid) == 1
    with pytest.raises(StudyConflict):
        check_pay_bonuses(payment, api)  # a second click pays nothing
    assert len(fake_prolific.paid) == 1
    researcher = gold_study_user(study)
    payment = check_settle_bonuses(payment, paid=True, actor=researcher)
    assert payment.status == "paid"
    assert AuditEvent.objects.filter(study=study, action="bonus_unknown").count() == 1


def test_a_server_error_leaves_it_unknown_until_settled_then_it_may_be_paid(
    on_prolific, fake_prolific, api
):
    study, people = on_prolific
    payment, _ = check_record_bonuses(study, {people["ANNA"]: "1.00"}, "reason", "k3")
    payment = check_set_up_bonuses(payment, api)
    fake_prolific.fail_next = 1  # a 500: Prolific may have done it or not
    payment = check_pay_bonuses(payment, api)
    assert payment.status == "paying" and fake_prolific.paid == []
    payment = check_settle_bonuses(payment, paid=False, actor=None)
    assert payment.status == "set_up"
    payment = check_pay_bonuses(payment, api)
    assert payment.status == "paid" and len(fake_prolific.paid) == 1


def test_a_set_up_without_an_answer_stays_a_draft(on_prolific, fake_prolific, api):
    study, people = on_prolific
    payment, _ = check_record_bonuses(study, {people["ANNA"]: "1.00"}, "reason", "k9")
    fake_prolific.fail_next = 1
    payment = check_set_up_bonuses(payment, api)
    assert payment.status == "draft" and "set it up again" in payment.error
    payment = check_set_up_bonuses(payment, api)
    assert payment.status == "set_up" and payment.error == ""


def test_prolific_refusing_the_set_up_pays_nothing(on_prolific, fake_prolific, api):
    study, people = on_prolific
    stranger = check_start_assignment(study, pid="NOSUBMISSION").participant
    payment, _ = check_record_bonuses(study, {stranger: "1.00"}, "reason", "k4")
    payment = check_set_up_bonuses(payment, api)
    assert payment.status == "refused"
    assert "Participants not in the study" in payment.error
    with pytest.raises(StudyConflict):
        check_pay_bonuses(payment, api)
    assert fake_prolific.paid == []


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("30", "in pounds, not pence"),
        ("0", "more than 0"),
        ("-1", "more than 0"),
        ("1.234", "whole pence"),
        ("one pound", "not an amount"),
        ("NaN", "more than 0"),
        ("Infinity", "more than 0"),
    ],
)
def test_bad_amounts_are_refused_and_nothing_is_stored(on_prolific, amount, message):
    study, people = on_prolific
    with pytest.raises(StudyError, match=message):
        check_record_bonuses(study, {people["ANNA"]: amount}, "reason", f"bad-{amount}")
    assert not BonusPayment.objects.exists()


def test_who_and_why_are_checked(on_prolific, gold_study):
    study, people = on_prolific
    with pytest.raises(StudyError, match="Say why"):
        check_record_bonuses(study, {people["ANNA"]: "1"}, "  ", "k5")
    gold = check_start_assignment(gold_study, user=gold_study_user(gold_study)).participant
    with pytest.raises(StudyError, match="not a participant of this study"):
        check_record_bonuses(study, {gold: "1"}, "reason", "k6")
    with pytest.raises(StudyError, match="create the study there first"):
        check_record_bonuses(gold_study, {gold: "1"}, "reason", "k7")
    other = make_study(name="Another crowd study")
    check_record_bonuses(study, {people["ANNA"]: "1"}, "reason", "k8")
    with pytest.raises(StudyConflict, match="another study"):
        check_record_bonuses(other, {people["ANNA"]: "1"}, "reason", "k8")
    assert BonusPayment.objects.count() == 1


def gold_study_user(study):
    """A signed-in person (an expert, or the researcher settling a payment)."""
    from users.models import User

    return User.objects.create_user(f"person-{User.objects.count()}", password="x")


def test_ids_that_would_smuggle_a_csv_line_never_leave(fake_prolific, api):
    with pytest.raises(ProlificError, match="Not a Prolific id"):
        api.set_up_bonuses("study", [("ANNA,100\nBORIS", Decimal("1.00"))])
    with pytest.raises(ProlificError, match="twice"):
        api.message_participants("study", ["ANNA", "ANNA"], "hello")
    assert fake_prolific.requests == []


def test_messages_and_study_transitions(on_prolific, fake_prolific, api):
    study, people = on_prolific
    sent = check_message_participants(
        study, [people["ANNA"], people["BORIS"]], "Thank you: a bonus follows.", api
    )
    assert sent == 2
    assert [(m["to"], m["body"]) for m in fake_prolific.messages] == [
        ("ANNA", "Thank you: a bonus follows."),
        ("BORIS", "Thank you: a bonus follows."),
    ]
    assert AuditEvent.objects.filter(action="messaged").count() == 2
    with pytest.raises(StudyError, match="Write the message"):
        check_message_participants(study, [people["ANNA"]], "   ", api)
    with pytest.raises(StudyError, match="at most"):
        check_message_participants(study, [people["ANNA"]], "x" * 5001, api)
    for action, status in (("PAUSE", "PAUSED"), ("START", "ACTIVE"), ("STOP", "COMPLETED")):
        check_transition_on_prolific(study, action, api)
        assert fake_prolific.studies[study.prolific_study_id]["status"] == status
    with pytest.raises(StudyError):
        check_transition_on_prolific(study, "PUBLISH", api)


def test_participant_groups_carry_raters_to_the_next_study(on_prolific, fake_prolific, api):
    study, people = on_prolific
    Assignment.objects.filter(participant__in=[people["ANNA"], people["BORIS"]]).update(
        status=Assignment.Status.COMPLETED
    )
    check_exclude_participant(people["CLARA"], None, "straight-lined every item")
    assert {p.prolific_pid for p in qualified_raters(study)} == {"ANNA", "BORIS"}
    assert [p.prolific_pid for p in excluded_raters(study)] == ["CLARA"]
    with pytest.raises(StudyError, match="PROLIFIC_WORKSPACE_ID"):
        check_create_participant_group("Qualified raters", "allow", api, "")
    allow = check_create_participant_group("Qualified raters", "allow", api, "ws1")
    block = check_create_participant_group("Excluded raters", "block", api, "ws1")
    with pytest.raises(StudyConflict):
        check_create_participant_group("Qualified raters", "allow", api, "ws1")
    assert check_add_to_group(allow, qualified_raters(study), "qualified in the pilot", api) == 2
    assert check_add_to_group(allow, qualified_raters(study), "again", api) == 0
    assert check_add_to_group(block, excluded_raters(study), "excluded", api) == 1
    assert fake_prolific.groups[allow.prolific_id]["members"] == {"ANNA", "BORIS"}
    assert fake_prolific.groups[block.prolific_id]["members"] == {"CLARA"}
    # the next study recruits through the allowlist and around the blocklist
    follow_up = make_study(name="Follow-up")
    check_filter_study(follow_up, allow)
    check_filter_study(follow_up, block)
    filters = prolific_draft(follow_up, BASE)["filters"]
    assert filters == [
        {"filter_id": "participant_group_allowlist", "selected_values": [allow.prolific_id]},
        {"filter_id": "participant_group_blocklist", "selected_values": [block.prolific_id]},
    ]
    created = check_create_on_prolific(follow_up, api, BASE)
    assert fake_prolific.studies[created]["filters"] == filters
    with pytest.raises(StudyError, match="before the study is created"):
        check_filter_study(follow_up, allow)
    # a rater reinstated on reflection leaves the blocklist
    assert check_remove_from_group(block, ["CLARA"], api) == 1
    assert fake_prolific.groups[block.prolific_id]["members"] == set()
    assert not ParticipantGroupMember.objects.filter(group=block).exists()
    assert AuditEvent.objects.filter(action="group_removed", participant=people["CLARA"]).exists()


def test_the_prolific_command(on_prolific, fake_prolific, settings):
    from io import StringIO

    from django.core.management import CommandError, call_command

    study, people = on_prolific
    settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL = fake_prolific.token, fake_prolific.url
    Assignment.objects.filter(participant__in=[people["ANNA"], people["BORIS"]]).update(
        status=Assignment.Status.COMPLETED
    )

    def run(*args: str) -> str:
        out = StringIO()
        call_command("prolific", *args, stdout=out)
        return out.getvalue()

    bonus = ("bonus", str(study.pk), "--amount", "1.50", "--qualified", "--reason", "careful")
    paid = run(*bonus, "--key", "pilot", "--pay")
    assert f"Bonus {BonusPayment.objects.get().pk}: Paid, 400 pence with fees" in paid
    assert "nothing new" in run(*bonus, "--key", "pilot", "--pay")  # run twice: paid once
    assert len(fake_prolific.paid) == 2 and BonusPayment.objects.count() == 1
    with pytest.raises(CommandError, match="in pounds, not pence"):
        run("bonus", str(study.pk), "--amount", "150", "--participants", "ANNA", "--reason", "r")
    with pytest.raises(CommandError, match="Not participants"):
        run("message", str(study.pk), "--participants", "ANNA,ZED", "--body", "hi")
    assert "to 3 participant(s)" in run("message", str(study.pk), "--all", "--body", "Thanks!")
    # submissions known from a sync are approved in one request
    from annotator.actions.prolific_sync import check_sync_prolific_submissions

    check_sync_prolific_submissions(study, ProlificClient(fake_prolific.token, fake_prolific.url))
    assert "Approved 2 completed submission(s)" in run("approve", str(study.pk))
    approved = {
        s["participant_id"] for s in fake_prolific.submissions.values() if s["status"] == "APPROVED"
    }
    assert approved == {"ANNA", "BORIS"}
    assert "PAUSE" in run("pause", str(study.pk))
    settings.PROLIFIC_API_TOKEN = ""
    with pytest.raises(CommandError, match="PROLIFIC_API_TOKEN"):
        run("approve", str(study.pk))


def test_a_throttled_request_is_asked_again_and_a_throttled_payment_pays_once(
    on_prolific, fake_prolific, api
):
    from annotator.prolific_api import RATE_LIMIT_TRIES, retry_after

    study, people = on_prolific
    before = len(fake_prolific.requests)
    fake_prolific.limit_next = RATE_LIMIT_TRIES - 1  # throttled twice, then done
    assert api.study(study.prolific_study_id)["status"] == "UNPUBLISHED"
    assert len(fake_prolific.requests) - before == RATE_LIMIT_TRIES
    payment, _ = check_record_bonuses(study, {people["ANNA"]: "1.00"}, "careful work", "k9")
    payment = check_set_up_bonuses(payment, api)
    fake_prolific.limit_next = RATE_LIMIT_TRIES  # throttled every time: nothing was paid
    payment = check_pay_bonuses(payment, api)
    assert payment.status == "set_up" and "limiting the rate" in payment.error
    assert fake_prolific.paid == []
    payment = check_pay_bonuses(payment, api)  # later: paid, once
    assert payment.status == "paid" and len(fake_prolific.paid) == 1
    # Prolific's Retry-After, read safely
    assert retry_after("2") == 2 and retry_after(None) == 1 and retry_after("soon") == 1
    assert retry_after("nan") == 1 and retry_after("-3") == 1 and retry_after("1e9") == 10


def test_the_same_bonus_without_a_key_is_paid_once_unless_asked_again(
    on_prolific, fake_prolific, settings
):
    """`prolific bonus ... --pay` run twice without --key made a fresh key each
    time and paid twice: a bonus of the same amount to the same participant
    of the study within 24 hours now needs --again."""
    from io import StringIO

    from django.core.management import CommandError, call_command

    study, people = on_prolific
    settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL = fake_prolific.token, fake_prolific.url

    def run(*args: str) -> str:
        out = StringIO()
        call_command("prolific", *args, stdout=out)
        return out.getvalue()

    bonus = ("bonus", str(study.pk), "--amount", "1.50", "--participants", "ANNA,BORIS",
             "--reason", "careful", "--pay")  # fmt: skip
    run(*bonus)
    with pytest.raises(CommandError, match=r"ANNA \(GBP 1.50 in bonus \d+\).*--again"):
        run(*bonus)
    assert len(fake_prolific.paid) == 2 and BonusPayment.objects.count() == 1
    # another amount, or another participant, is another bonus
    run("bonus", str(study.pk), "--amount", "0.50", "--participants", "ANNA", "--reason", "x")
    run("bonus", str(study.pk), "--amount", "1.50", "--participants", "CLARA", "--reason", "x")
    assert BonusPayment.objects.count() == 3
    # asked for: paid again
    assert "Paid" in run(*bonus, "--again")
    assert len(fake_prolific.paid) == 4
    # a bonus Prolific refused paid nothing: it does not count
    refused = BonusPayment.objects.order_by("pk").last()
    BonusPayment.objects.filter(pk=refused.pk).update(status=BonusPayment.Status.REFUSED)
    first = BonusPayment.objects.order_by("pk").first()
    BonusPayment.objects.filter(pk=first.pk).update(status=BonusPayment.Status.REFUSED)
    run(*bonus)
    assert len(fake_prolific.paid) == 6
