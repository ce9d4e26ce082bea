"""Researcher actions driven in the admin with headless Chromium, each checked
by its effect: excluding a participant (reason asked, place reopened, ratings
out of the analysis) and pausing a study (newcomers refused, work in progress
goes on)."""

from __future__ import annotations

import re

import pytest

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.errors import QuotaFull
from annotator.models import AuditEvent, Participant, Study
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.models import Judgment
from tests.annotator.conftest import entry_url, make_study

pytestmark = [pytest.mark.browser]


@pytest.fixture
def study(transactional_db, tmp_path):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    return make_study(raters=1)


@pytest.fixture
def admin_page(browser, live_server, django_user_model):
    django_user_model.objects.create_superuser("boss", "boss@example.org", "pw-boss-123")
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(live_server.url + "/admin/login/")
    page.fill("#id_username", "boss")
    page.fill("#id_password", "pw-boss-123")
    page.click("input[type=submit]")
    page.wait_for_url(re.compile(r"/admin/$"))
    return page


def finished(study: Study, pid: str):
    assignment = check_start_assignment(study, pid=pid)
    for position in range(1, len(assignment.item_order) + 1):
        check_rate_item(assignment, position, score=7)
    check_complete_assignment(assignment)
    return assignment


def choose_action(page, label: str) -> None:
    page.select_option("select[name=action]", label=label)
    page.click("button[name=index]")


def test_excluding_a_participant_in_the_admin(admin_page, live_server, study):
    sloppy = finished(study, "SLOPPY")
    finished(study, "STEADY")
    with pytest.raises(QuotaFull):  # both meetings have their one rater
        check_start_assignment(study, pid="TOO-LATE")
    page = admin_page
    page.goto(live_server.url + "/admin/annotator/participant/")
    page.check(f"input[name=_selected_action][value='{sloppy.participant_id}']")
    choose_action(page, "Exclude selected participants (asks for a reason)")
    page.wait_for_selector("text=Exclude participants")
    page.fill("textarea[name=reason]", "r = -0.40 with gold, 0.1 s per item")
    page.click("input[type=submit][value=Confirm]")
    page.wait_for_selector("text=Excluded 1 participant(s)")
    assert "No action selected" not in page.content()
    participant = Participant.objects.get(pk=sloppy.participant_id)
    assert participant.status == Participant.Status.EXCLUDED
    assert participant.exclusion_reason == "r = -0.40 with gold, 0.1 s per item"
    assert not Judgment.objects.filter(rater="SLOPPY").exists()
    assert Judgment.objects.filter(rater="STEADY").exists()
    # the place is open again: the study page says so and a newcomer gets that meeting
    page.goto(live_server.url + f"/admin/annotator/study/{study.pk}/change/")
    assert "excluded" in page.inner_text("#study-progress")
    newcomer = check_start_assignment(study, pid="NEWCOMER")
    assert newcomer.task_id == sloppy.task_id
    assert AuditEvent.objects.filter(action="excluded", actor__username="boss").count() == 1


def test_pausing_a_study_in_the_admin(admin_page, browser, live_server, study):
    # arrived earlier from the same Prolific submission (entry_url's SESSION_ID)
    working = check_start_assignment(study, pid="WORKING", session_id="SESSION1")
    page = admin_page
    page.goto(live_server.url + "/admin/annotator/study/")
    page.check(f"input[name=_selected_action][value='{study.pk}']")
    choose_action(page, "Pause: no new arrivals; work in progress may finish")
    page.wait_for_selector("text=now paused")
    study.refresh_from_db()
    assert study.status == Study.Status.PAUSED

    worker = browser.new_context().new_page()
    worker.goto(live_server.url + entry_url(study, "NEWCOMER"))
    assert "paused" in worker.content()
    assert not Participant.objects.filter(prolific_pid="NEWCOMER").exists()
    worker.goto(live_server.url + entry_url(study, "WORKING"))  # work in progress goes on
    worker.wait_for_url(re.compile(r"/item/1/$"))
    worker.click("label.score:has-text('6')")
    worker.wait_for_selector("#status:has-text('Saved: 6')")
    assert working.ratings.get().score == 6

    page.goto(live_server.url + "/admin/annotator/study/")
    page.check(f"input[name=_selected_action][value='{study.pk}']")
    choose_action(page, "Open (or reopen) for participants")
    page.wait_for_selector("text=now open")
    worker.goto(live_server.url + entry_url(study, "NEWCOMER"))
    assert worker.locator("#consent").count() == 1
