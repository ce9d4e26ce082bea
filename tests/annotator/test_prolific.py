"""The Prolific flow against a local server that speaks the same API."""

import pytest
from django.urls import reverse

from annotator.actions.arrival import check_start_assignment
from annotator.actions.prolific_sync import (
    check_create_on_prolific,
    check_publish_on_prolific,
    check_review_on_prolific,
    check_sync_prolific_submissions,
)
from annotator.actions.rating import check_rate_item
from annotator.errors import StudyError
from annotator.models import Assignment, AuditEvent
from annotator.prolific_api import ProlificClient, ProlificError
from annotator.selectors import task_loads

pytestmark = pytest.mark.django_db

REASON = "Your ratings were given in under two seconds each and ignore the correct answers; " * 2


@pytest.fixture
def client_for(fake_prolific):
    return ProlificClient(fake_prolific.token, fake_prolific.url)


def test_create_publish_sync_review(crowd_study, fake_prolific, client_for):
    study_id = check_create_on_prolific(crowd_study, client_for, "https://concord.example.org")
    sent = fake_prolific.studies[study_id]
    assert sent["external_study_url"] == (
        f"https://concord.example.org/s/{crowd_study.public_id}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert sent["total_available_places"] == 2 * 2
    assert sent["reward"] == 450  # GBP 9/hour for 30 minutes, in pence
    assert sent["completion_codes"][0]["code"] == "C0DE1234"
    assert sent["prolific_id_option"] == "url_parameters"
    with pytest.raises(StudyError, match="already on Prolific"):
        check_create_on_prolific(crowd_study, client_for, "https://concord.example.org")
    check_publish_on_prolific(crowd_study, client_for)
    assert fake_prolific.studies[study_id]["status"] == "ACTIVE"

    keeper = check_start_assignment(crowd_study, pid="KEEPER")
    leaver = check_start_assignment(crowd_study, pid="LEAVER")
    check_start_assignment(crowd_study, pid="SLEEPER")
    check_rate_item(leaver, 1, score=4)
    ids = {
        pid: fake_prolific.add_submission(study_id, pid, status)
        for pid, status in (("KEEPER", "ACTIVE"), ("LEAVER", "RETURNED"), ("SLEEPER", "TIMED-OUT"))
    }
    counts = check_sync_prolific_submissions(crowd_study, client_for)
    assert counts == {"submissions": 3, "released": 2}  # read over two pages
    statuses = dict(Assignment.objects.values_list("participant__prolific_pid", "status"))
    assert statuses == {"KEEPER": "active", "LEAVER": "returned", "SLEEPER": "timed_out"}
    assert sum(task_loads(crowd_study).values()) == 1  # only KEEPER holds a place
    keeper.refresh_from_db()
    assert keeper.prolific_session_id == ids["KEEPER"]
    # approve and reject
    check_review_on_prolific(keeper.participant, client_for, approve=True)
    assert fake_prolific.submissions[ids["KEEPER"]]["status"] == "APPROVED"
    leaver.refresh_from_db()
    with pytest.raises(ProlificError, match="at least 100 characters"):
        check_review_on_prolific(leaver.participant, client_for, False, None, "short", "OTHER")
    check_review_on_prolific(leaver.participant, client_for, False, None, REASON, "LOW_EFFORT")
    assert fake_prolific.submissions[ids["LEAVER"]]["status"] == "REJECTED"
    assert AuditEvent.objects.filter(action="prolific_rejected").count() == 1


def test_api_errors_are_clear(crowd_study, fake_prolific, client_for):
    fake_prolific.fail_next = 1
    with pytest.raises(ProlificError, match="Prolific answered 500"):
        check_create_on_prolific(crowd_study, client_for, "https://x.example.org")
    crowd_study.refresh_from_db()
    assert crowd_study.prolific_study_id == ""
    with pytest.raises(ProlificError, match="answered 401"):
        check_create_on_prolific(
            crowd_study, ProlificClient("wrong", fake_prolific.url), "https://x"
        )
    with pytest.raises(ProlificError, match="could not be reached"):
        ProlificClient("t", "http://127.0.0.1:9/api/v1/").submissions("abc")
    with pytest.raises(ProlificError, match="Set PROLIFIC_API_TOKEN"):
        ProlificClient("")


def test_admin_actions_use_the_api(crowd_study, fake_prolific, settings, client, django_user_model):
    settings.PROLIFIC_API_TOKEN = fake_prolific.token
    settings.PROLIFIC_API_URL = fake_prolific.url
    settings.CONCORD_PUBLIC_URL = "https://concord.example.org"
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(admin)
    url = reverse("admin:annotator_study_changelist")
    page = client.post(
        url, {"action": "prolific_create_action", "_selected_action": [crowd_study.pk]}, follow=True
    )
    assert "created on Prolific as" in page.content.decode()
    crowd_study.refresh_from_db()
    assert crowd_study.prolific_study_id in fake_prolific.studies
    sync = {"action": "prolific_sync_action", "_selected_action": [crowd_study.pk]}
    page = client.post(url, sync, follow=True)
    assert "0 submissions, 0 places released" in page.content.decode()
    settings.PROLIFIC_API_TOKEN = ""
    page = client.post(
        url,
        {"action": "prolific_publish_action", "_selected_action": [crowd_study.pk]},
        follow=True,
    )
    assert "Set PROLIFIC_API_TOKEN" in page.content.decode()
