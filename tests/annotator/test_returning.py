"""Who may take up a crowd worker's work again by the study link: the browser
that consented (or one admitted since), the first arrival's SESSION_ID, or,
once, another device a researcher allowed. Services as plain calls, then the
pages over HTTP, the console, the admin and the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotator.actions.arrival import (
    OTHER_DEVICE_HOURS,
    check_admit_return,
    check_allow_other_device,
    check_start_assignment,
)
from annotator.actions.participants import check_exclude_participant
from annotator.actions.rating import check_rate_item
from annotator.errors import SessionRefused, StudyError
from annotator.models import Assignment, AuditEvent, Participant, Rating
from annotator.selectors import admissible, device_access
from tests.annotator.conftest import entry_url, item_url

pytestmark = pytest.mark.django_db

BROWSER_A, BROWSER_B, BROWSER_C = "a" * 64, "b" * 64, "c" * 64


def row(assignment: Assignment) -> tuple:
    """Everything stored about the work (to show that a refusal changed nothing)."""
    return tuple(Assignment.objects.filter(pk=assignment.pk).values_list().get())


def started(study, pid="P1", session_id="SUB-1", browser=BROWSER_A) -> Assignment:
    return check_start_assignment(study, pid=pid, session_id=session_id, browser=browser)


# --- The rule ----------------------------------------------------------------------------------


def test_the_consenting_browser_is_remembered(crowd_study):
    assignment = started(crowd_study)
    assert assignment.browsers == [BROWSER_A]
    assert admissible(assignment, "", BROWSER_A) == "browser"
    assert admissible(assignment, "ANOTHER-SUB", BROWSER_A) == "browser"


def test_the_first_sessions_id_opens_it_from_any_browser(crowd_study):
    assignment = started(crowd_study)
    assert admissible(assignment, "SUB-1", BROWSER_B) == "session_id"
    assert admissible(assignment, " SUB-1 ", BROWSER_B) == "session_id"
    assert admissible(assignment, "SUB-2", BROWSER_B) == ""


def test_an_empty_session_id_is_no_key(crowd_study):
    """A first arrival without SESSION_ID, then one without: not the same person."""
    assignment = started(crowd_study, session_id="")
    assert admissible(assignment, "", BROWSER_B) == ""
    assert admissible(assignment, "   ", BROWSER_B) == ""
    assert admissible(assignment, "", "") == ""


def test_an_allowance_opens_it_until_it_expires(crowd_study):
    assignment = started(crowd_study)
    assignment.other_device_allowed_until = timezone.now() + timedelta(minutes=5)
    assert admissible(assignment, "", BROWSER_B) == "other_device"
    assignment.other_device_allowed_until = timezone.now() - timedelta(seconds=1)
    assert admissible(assignment, "", BROWSER_B) == ""


# --- admit_return -----------------------------------------------------------------------------


def test_a_refusal_changes_nothing_and_is_audited(crowd_study):
    assignment = started(crowd_study)
    check_rate_item(assignment, 1, score=7)
    before = row(assignment)
    assert check_admit_return(assignment, "SUB-X", BROWSER_B) is False
    assert check_admit_return(assignment, "", BROWSER_B) is False
    assert row(assignment) == before
    refusals = AuditEvent.objects.filter(action="session_refused", participant__prolific_pid="P1")
    assert refusals.count() == 2
    assert "SESSION_ID SUB-X from a browser that did not consent" in refusals.last().detail
    assert "(first SESSION_ID: SUB-1)" in refusals.last().detail
    assert Rating.objects.filter(assignment=assignment).count() == 1


def test_the_same_submission_on_another_device_is_remembered(crowd_study):
    assignment = started(crowd_study)
    assert check_admit_return(assignment, "SUB-1", BROWSER_B) is True
    assignment.refresh_from_db()
    assert assignment.browsers == [BROWSER_A, BROWSER_B]
    assert assignment.other_session_ids == []
    # that browser may come back later without the SESSION_ID
    assert check_admit_return(assignment, "", BROWSER_B) is True


def test_the_consenting_browser_with_a_new_session_is_recorded(crowd_study):
    assignment = started(crowd_study)
    assert check_admit_return(assignment, "SUB-2", BROWSER_A) is True
    assignment.refresh_from_db()
    assert (assignment.prolific_session_id, assignment.other_session_ids) == ("SUB-1", ["SUB-2"])
    assert AuditEvent.objects.filter(action="session_changed").count() == 1


def test_another_device_is_allowed_once(crowd_study, researcher):
    assignment = started(crowd_study)
    assert check_admit_return(assignment, "SUB-2", BROWSER_B) is False
    assert check_allow_other_device(assignment.participant, researcher, "switched to a laptop")
    assignment.refresh_from_db()
    window = assignment.other_device_allowed_until - timezone.now()
    assert timedelta(hours=OTHER_DEVICE_HOURS - 1) < window
    assert window <= timedelta(hours=OTHER_DEVICE_HOURS)
    allowed = AuditEvent.objects.get(action="other_device_allowed")
    assert allowed.actor == researcher and "switched to a laptop" in allowed.detail

    assert check_admit_return(assignment, "SUB-2", BROWSER_B) is True
    assignment.refresh_from_db()
    assert assignment.other_device_allowed_until is None  # used up
    assert assignment.browsers == [BROWSER_A, BROWSER_B]
    assert assignment.other_session_ids == ["SUB-2"]
    assert AuditEvent.objects.filter(action="other_device_used").count() == 1
    assert check_admit_return(assignment, "", BROWSER_B) is True  # remembered
    assert check_admit_return(assignment, "SUB-3", BROWSER_C) is False  # only once


def test_allowing_is_for_crowd_workers_who_are_not_excluded(crowd_study, gold_study, researcher):
    gold = check_start_assignment(gold_study, user=researcher)
    with pytest.raises(StudyError, match="gold annotator"):
        check_allow_other_device(gold.participant, researcher)
    excluded = started(crowd_study).participant
    check_exclude_participant(excluded, researcher, "left the study")
    with pytest.raises(StudyError, match="excluded: reinstate them first"):
        check_allow_other_device(excluded, researcher)
    assert not AuditEvent.objects.filter(action="other_device_allowed").exists()


def test_start_assignment_gives_nobody_else_the_work(crowd_study):
    """The guard for two arrivals with one PID at once: nothing changes, not even
    a timed-out task being reopened."""
    assignment = started(crowd_study)
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.TIMED_OUT)
    before = row(assignment)
    with pytest.raises(SessionRefused) as refusal:
        check_start_assignment(crowd_study, pid="P1", session_id="SUB-X", browser=BROWSER_B)
    assert refusal.value.assignment_id == assignment.pk and refusal.value.http_status == 403
    assert row(assignment) == before
    # the consenting browser gets it back
    again = check_start_assignment(crowd_study, pid="P1", session_id="", browser=BROWSER_A)
    assert again.pk == assignment.pk and again.status == Assignment.Status.ACTIVE


def test_device_access_for_the_monitor(crowd_study, researcher):
    first, second = started(crowd_study, "P1"), started(crowd_study, "P2", "SUB-9", BROWSER_C)
    check_admit_return(first, "SUB-X", BROWSER_B)
    check_admit_return(first, "SUB-Y", BROWSER_B)
    check_allow_other_device(second.participant, researcher)
    access = device_access(crowd_study)
    assert access[first.participant_id].refused == 2
    assert access[first.participant_id].allowed_until is None
    assert access[second.participant_id].refused == 0
    assert access[second.participant_id].allowed_until > timezone.now()


# --- The pages ---------------------------------------------------------------------------------


def consent(client, study, pid="PID001", session="SESSION1"):
    client.get(entry_url(study, pid, session))
    return client.post(
        entry_url(study, pid, session),
        {"PROLIFIC_PID": pid, "STUDY_ID": "PSTUDY", "SESSION_ID": session, "consent": "yes"},
    )


def test_another_browser_with_a_known_pid_gets_a_clear_page_and_no_token(client, crowd_study):
    assert consent(client, crowd_study).status_code == 302
    assignment = Assignment.objects.get(participant__prolific_pid="PID001")
    client.post(item_url(assignment, 1), {"score": "7"})
    before = row(assignment)
    stranger = Client()
    for session in ("OTHER", ""):
        answer = stranger.get(entry_url(crowd_study, "PID001", session))
        assert answer.status_code == 403
        page = answer.content.decode()
        assert "started in another browser and another Prolific session" in page
        assert assignment.token not in page and "Location" not in answer
        posted = stranger.post(
            entry_url(crowd_study, "PID001", session),
            {"PROLIFIC_PID": "PID001", "SESSION_ID": session, "consent": "yes"},
        )
        assert posted.status_code == 403 and assignment.token not in posted.content.decode()
    assert row(assignment) == before
    assert AuditEvent.objects.filter(action="session_refused").count() == 4
    # the worker's own browser still resumes, with or without the SESSION_ID
    for session in ("SESSION1", ""):
        resumed = client.get(entry_url(crowd_study, "PID001", session), follow=True)
        assert resumed.request["PATH_INFO"] == item_url(assignment, 2)


def test_a_completion_code_is_not_given_to_another_browser(client, crowd_study):
    consent(client, crowd_study)
    assignment = Assignment.objects.get(participant__prolific_pid="PID001")
    for position in range(1, len(assignment.item_order) + 1):
        client.post(item_url(assignment, position), {"score": "5"})
    client.post(reverse("annotator:finish", args=[assignment.token]))
    stranger = Client().get(entry_url(crowd_study, "PID001", "GUESS"), follow=True)
    assert stranger.status_code == 403 and "C0DE1234" not in stranger.content.decode()
    own = client.get(entry_url(crowd_study, "PID001"), follow=True)
    assert "C0DE1234" in own.content.decode()


def test_a_timed_out_task_is_not_reopened_for_another_browser(client, crowd_study):
    consent(client, crowd_study)
    assignment = Assignment.objects.get(participant__prolific_pid="PID001")
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.TIMED_OUT)
    before = row(assignment)
    posted = Client().post(
        entry_url(crowd_study, "PID001", "OTHER"),
        {"PROLIFIC_PID": "PID001", "SESSION_ID": "OTHER", "consent": "yes"},
    )
    assert posted.status_code == 403 and row(assignment) == before


def test_the_same_submission_on_a_phone_continues(client, crowd_study):
    consent(client, crowd_study)
    assignment = Assignment.objects.get(participant__prolific_pid="PID001")
    phone = Client()
    resumed = phone.get(entry_url(crowd_study, "PID001", "SESSION1"), follow=True)
    assert resumed.request["PATH_INFO"] == item_url(assignment, 1)


def test_a_double_click_on_start_without_session_id_stays_with_its_browser(client, crowd_study):
    client.get(entry_url(crowd_study, "PID001", ""))
    data = {"PROLIFIC_PID": "PID001", "SESSION_ID": "", "consent": "yes"}
    first = client.post(entry_url(crowd_study, "PID001", ""), data)
    second = client.post(entry_url(crowd_study, "PID001", ""), data)
    assignment = Assignment.objects.get(participant__prolific_pid="PID001")
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"] == f"/r/{assignment.token}/"
    assert Participant.objects.count() == 1


def test_a_researcher_allows_another_device_from_the_console(client, crowd_study, researcher):
    consent(client, crowd_study)
    assignment = Assignment.objects.get(participant__prolific_pid="PID001")
    laptop = Client()
    assert laptop.get(entry_url(crowd_study, "PID001", "NEW-SUB")).status_code == 403

    console = Client()
    console.force_login(researcher)
    monitor = console.get(reverse("console:study", args=[crowd_study.pk])).content.decode()
    assert "refused 1× from another browser" in monitor
    assert 'data-action="allow-other-device"' in monitor
    answer = console.post(
        reverse("console:allow_other_device", args=[assignment.participant_id]), follow=True
    )
    assert "may now continue once from another browser" in answer.content.decode()
    assert "another device allowed until" in answer.content.decode()

    resumed = laptop.get(entry_url(crowd_study, "PID001", "NEW-SUB"), follow=True)
    assert resumed.request["PATH_INFO"] == item_url(assignment, 1)
    assert laptop.get(entry_url(crowd_study, "PID001", ""), follow=True).status_code == 200
    assert Client().get(entry_url(crowd_study, "PID001", "NEW-SUB")).status_code == 403


def test_console_refuses_what_cannot_be_allowed(crowd_study, researcher):
    participant = check_start_assignment(crowd_study, pid="GONE").participant
    check_exclude_participant(participant, researcher, "no")
    console = Client()
    console.force_login(researcher)
    answer = console.post(reverse("console:allow_other_device", args=[participant.pk]), follow=True)
    assert "excluded: reinstate them first" in answer.content.decode()
    assert Client().post(
        reverse("console:allow_other_device", args=[participant.pk])
    ).status_code in (
        302,
        403,
    )  # not signed in: never allowed
    assert not AuditEvent.objects.filter(action="other_device_allowed").exists()


def test_the_api_allows_another_device_like_it_excludes(crowd_study, gold_study, researcher):
    api = APIClient()
    api.force_login(researcher)
    participant = check_start_assignment(crowd_study, pid="P7").participant
    answer = api.post(
        f"/api/participants/{participant.pk}/allow-other-device/",
        {"reason": "new phone"},
        format="json",
    )
    assert answer.status_code == 200
    body = answer.json()
    assert body["changed"] is True and body["other_device_allowed_until"]
    listed = api.get("/api/participants/", {"study": crowd_study.pk}).json()["results"]
    assert listed[0]["other_device_allowed_until"] == body["other_device_allowed_until"]
    gold = check_start_assignment(gold_study, user=researcher).participant
    refused = api.post(f"/api/participants/{gold.pk}/allow-other-device/", {}, format="json")
    assert refused.status_code == 400 and refused.json()["code"] == "study_refused"
    assert AuditEvent.objects.filter(action="other_device_allowed").count() == 1


def test_the_admin_allows_another_device(crowd_study, django_user_model):
    boss = Client()
    boss.force_login(django_user_model.objects.create_superuser("boss", "b@x.org", "pw-boss-123"))
    participant = check_start_assignment(crowd_study, pid="P8").participant
    answer = boss.post(
        reverse("admin:annotator_participant_changelist"),
        {"action": "allow_other_device_action", ACTION_CHECKBOX_NAME: [participant.pk]},
        follow=True,
    )
    shown = [str(m) for m in answer.context["messages"]]
    assert any("may now continue once from another browser" in m for m in shown)
    assert Assignment.objects.get(participant=participant).other_device_allowed_until is not None
