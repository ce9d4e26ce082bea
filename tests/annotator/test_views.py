"""The participant pages over HTTP: arrival, rating, security rules, completion."""

import csv
import io
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.actions.status import check_set_study_status
from annotator.models import Assignment, Participant, Rating, Study
from tests.annotator.conftest import entry_url, item_url

pytestmark = pytest.mark.django_db


def arrive(client, study, pid="PID001"):
    consent = client.get(entry_url(study, pid))
    assert consent.status_code == 200
    answer = client.post(
        entry_url(study, pid),
        {
            "PROLIFIC_PID": pid,
            "STUDY_ID": "PSTUDY",
            "SESSION_ID": "SESSION1",
            "consent": "yes",
        },
    )
    assert answer.status_code == 302
    return Assignment.objects.get(participant__prolific_pid=pid)


@pytest.mark.parametrize(
    "query",
    ["", "?STUDY_ID=X&SESSION_ID=Y", "?PROLIFIC_PID=", "?PROLIFIC_PID=bad%20id%3Cscript%3E"],
)
def test_arrival_without_valid_parameters_stores_nothing(client, crowd_study, query):
    answer = client.get(f"/s/{crowd_study.public_id}/{query}")
    assert answer.status_code == 400
    assert b"must be opened from Prolific" in answer.content
    assert not Participant.objects.exists()


def test_consent_page_stores_nothing_and_shows_guidelines(client, crowd_study):
    page = client.get(entry_url(crowd_study, "PID001")).content.decode()
    assert "Score 10: The response to evaluate is essentially equivalent" in page
    assert "What is the problem with the scientific committee?" in page  # the example
    assert not Participant.objects.exists()
    refused = client.post(entry_url(crowd_study, "PID001"), {"PROLIFIC_PID": "PID001"})
    assert refused.status_code == 400 and not Participant.objects.exists()


def test_closed_study_and_full_quota_store_nothing(client, crowd_study):
    check_set_study_status(crowd_study, Study.Status.CLOSED)
    closed = client.get(entry_url(crowd_study, "PID001"))
    assert closed.status_code == 400 and b"closed" in closed.content
    check_set_study_status(crowd_study, Study.Status.OPEN)
    for pid in ("A1", "A2", "A3", "A4"):
        check_start_assignment(crowd_study, pid=pid)
    count = Participant.objects.count()
    full = client.get(entry_url(crowd_study, "LATE"))
    assert b"All places in this study are taken" in full.content
    assert (
        client.post(
            entry_url(crowd_study, "LATE"), {"PROLIFIC_PID": "LATE", "consent": "yes"}
        ).status_code
        == 409
    )
    assert Participant.objects.count() == count


def test_unknown_study_is_404(client, crowd_study):
    assert client.get("/s/00000000-0000-0000-0000-000000000000/?PROLIFIC_PID=X").status_code == 404


def test_rate_resume_and_finish(client, crowd_study):
    assignment = arrive(client, crowd_study)
    assert assignment.prolific_session_id == "SESSION1" and assignment.prolific_study_id == "PSTUDY"
    page = client.get(reverse("annotator:resume", args=[assignment.token]), follow=True)
    assert page.request["PATH_INFO"] == item_url(assignment, 1)
    assert "Item 1 of 18" in page.content.decode()
    saved = client.post(item_url(assignment, 1), {"score": "7", "seconds": "4.5"})
    assert saved.status_code == 302 and saved["Location"] == item_url(assignment, 2)
    json_save = client.post(
        item_url(assignment, 2), {"score": "10", "seconds": "1"}, HTTP_ACCEPT="application/json"
    )
    body = json_save.json()
    assert (body["saved"], body["position"], body["score"], body["choice"]) == (True, 2, 10, "")
    # a reload, a second tab, or coming back from Prolific: resume at item 3
    resumed = client.get(entry_url(crowd_study, "PID001"), follow=True)
    assert resumed.request["PATH_INFO"] == item_url(assignment, 3)
    other_tab = Client().get(reverse("annotator:resume", args=[assignment.token]), follow=True)
    assert other_tab.request["PATH_INFO"] == item_url(assignment, 3)
    # going back shows the saved score
    back = client.get(item_url(assignment, 1)).content.decode()
    assert 'value="7" checked' in back
    client.get(item_url(assignment, 4))  # delivered now; the rating comes 90 s later
    Assignment.objects.filter(pk=assignment.pk).update(
        served_at=timezone.now() - timedelta(seconds=90)
    )
    for position in range(3, 19):
        # a forged client figure (shown_at=-1e12 once stored 3600 s) is not the time
        client.post(item_url(assignment, position), {"score": "5", "shown_at": "-1e12"})
    timed = Rating.objects.get(assignment=assignment, item_id=assignment.item_order[3])
    assert timed.seconds == pytest.approx(90, abs=2)  # measured on the server
    finish = client.get(reverse("annotator:finish", args=[assignment.token]))
    assert b"All 18 items rated" in finish.content
    done = client.post(reverse("annotator:finish", args=[assignment.token]), follow=True)
    html = done.content.decode()
    assert "https://app.prolific.com/submissions/complete?cc=C0DE1234" in html
    assert 'id="completion-code">C0DE1234<' in html
    assert client.post(item_url(assignment, 1), {"score": "2"}).status_code == 302  # to done
    assert Rating.objects.get(assignment=assignment, item_id=assignment.item_order[0]).score == 7


@pytest.mark.parametrize("bad", ["0", "11", "abc", "7.5", ""])
def test_bad_score_answers_400_and_stores_nothing(client, crowd_study, bad):
    assignment = arrive(client, crowd_study)
    answer = client.post(item_url(assignment, 1), {"score": bad}, HTTP_ACCEPT="application/json")
    assert answer.status_code == 400
    expected = "whole number from 1 to 10" if bad else "Choose a score first"
    assert expected in answer.json()["error"]
    html = client.post(item_url(assignment, 1), {"score": bad})
    assert html.status_code == 400 and expected.encode() in html.content
    assert not Rating.objects.exists()


def test_other_items_and_tokens_are_404(client, crowd_study):
    mine = arrive(client, crowd_study, "MINE")
    other = check_start_assignment(crowd_study, pid="OTHER")
    assert client.get(item_url(mine, 19)).status_code == 404
    assert client.get(item_url(mine, 0)).status_code == 404
    assert client.get(reverse("annotator:item", args=["not-a-token", 1])).status_code == 404
    assert client.post(item_url(mine, 19), {"score": 5}).status_code == 404
    assert other.token != mine.token and len(mine.token) >= 32
    assert not Rating.objects.exists()


def test_csrf_is_enforced(crowd_study):
    strict = Client(enforce_csrf_checks=True)
    assignment = check_start_assignment(crowd_study, pid="PID001")
    assert strict.post(item_url(assignment, 1), {"score": "5"}).status_code == 403
    assert (
        strict.post(
            entry_url(crowd_study, "NEW"), {"PROLIFIC_PID": "NEW", "consent": "yes"}
        ).status_code
        == 403
    )
    assert (
        not Rating.objects.exists() and not Participant.objects.filter(prolific_pid="NEW").exists()
    )


def test_crowd_pages_reveal_no_system_and_no_admin(client, crowd_study):
    assignment = arrive(client, crowd_study)
    for position in range(1, 19):
        html = client.get(item_url(assignment, position)).content.decode()
        assert "Synthetic-" not in html and "/admin" not in html and "OTHER" not in html


def test_query_count_is_constant_per_request(client, crowd_study, django_assert_num_queries):
    assignment = arrive(client, crowd_study)
    for position in (1, 2, 17):
        with django_assert_num_queries(4):  # assignment, item, its ratings, delivery time
            client.get(item_url(assignment, position))
    for position in (1, 2, 17):
        # assignment, its row lock, the item, its rating (none yet), insert, delivery /
        # last seen, and a savepoint pair (BEGIN/COMMIT outside a test's transaction)
        with django_assert_num_queries(8):
            client.post(
                item_url(assignment, position),
                {"score": "5", "seconds": "1"},
                HTTP_ACCEPT="application/json",
            )
    with django_assert_num_queries(8):  # a changed rating: the same, an update for the insert
        client.post(
            item_url(assignment, 2), {"score": "6", "seconds": "1"}, HTTP_ACCEPT="application/json"
        )


def test_gold_annotator_flow(client, gold_study, gold_annotator, django_user_model):
    gold_study.gold_annotators.add(gold_annotator)
    assert client.get("/gold/").status_code == 302  # login first
    client.force_login(gold_annotator)
    home = client.get("/gold/").content.decode()
    assert "Gold pass" in home and "0 of 36 items rated" in home
    started = client.post(reverse("annotator:gold_start", args=[gold_study.pk]))
    assignment = Assignment.objects.get(participant__user=gold_annotator)
    assert started.status_code == 302
    client.post(item_url(assignment, 1), {"score": "9"})
    assert "1 of 36 items rated" in client.get("/gold/").content.decode()
    stranger = Client()
    stranger.force_login(django_user_model.objects.create_user("eve", role="gold_annotator"))
    assert stranger.get(item_url(assignment, 1)).status_code == 404
    assert Client().get(item_url(assignment, 1)).status_code == 404
    for position in range(2, 37):
        client.post(item_url(assignment, position), {"score": "8"})
    done = client.post(reverse("annotator:finish", args=[assignment.token]), follow=True)
    assert b"gold ratings are saved" in done.content and b"prolific.com" not in done.content
    from judging.models import Judgment

    assert Judgment.objects.filter(evaluator__name="gold human (Gold pass)").count() == 36


def test_crowd_worker_account_cannot_rate_gold(client, gold_study, django_user_model):
    user = django_user_model.objects.create_user("plain", role="researcher", is_active=False)
    client.force_login(user)
    assert client.get("/gold/").status_code in (302, 403)


def test_exports(client, crowd_study, django_user_model):
    assignment = check_start_assignment(crowd_study, pid="P1")
    for position in range(1, 19):
        check_rate_item(assignment, position, score=6, client_seconds=2)
    check_complete_assignment(assignment)
    check_rate_item(check_start_assignment(crowd_study, pid="P2"), 1, score=3, client_seconds=1)
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(admin)
    url = reverse("admin:annotator_study_changelist")
    tidy = client.post(url, {"action": "export_tidy", "_selected_action": [crowd_study.pk]})
    rows = list(csv.DictReader(io.StringIO(tidy.content.decode())))
    assert len(rows) == 19
    assert set(rows[0]) >= {
        "study",
        "meeting",
        "question_id",
        "question_type",
        "answer_position",
        "system",
        "response_id",
        "participant",
        "score",
        "seconds",
        "created_at",
        "assignment_status",
        "excluded",
    }
    assert {r["assignment_status"] for r in rows} == {"completed", "active"}
    wide = client.post(url, {"action": "export_wide", "_selected_action": [crowd_study.pk]})
    wide_rows = list(csv.DictReader(io.StringIO(wide.content.decode())))
    assert len(wide_rows) == 18 + 1  # P2 (second arrival, other meeting) rated one item
    assert {"P1", "P2"} <= set(wide_rows[0])
