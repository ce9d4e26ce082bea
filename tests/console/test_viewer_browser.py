"""Roles that show, in Chromium: a viewer of a project reads its console
pages without one button he could not use; an action refused all the same (a
researcher made a viewer while his page was open) says why on the page
instead of failing silently; a direct POST gets the 403 page with the reason.
A new account's first project role is chosen by whoever creates it."""

from __future__ import annotations

import re

import pytest

from annotator.models import Study
from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from judging.importing import import_elitr_bench
from judging.judging_runs import ensure_metric_evaluators
from judging.models import Evaluator, JudgingRun
from runs.models import RunStatus
from tests.annotator.conftest import make_study
from tests.browsing import sign_in
from users.models import Membership, Project, User, default_project

pytestmark = pytest.mark.browser

VIEWER_REASON = "Viewers of a project may read it, not change it."


def a_study_and_a_running_run(tmp_path) -> tuple[Study, JudgingRun]:
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    ensure_metric_evaluators()
    study = make_study()
    run = JudgingRun.objects.create(
        evaluator=Evaluator.objects.get(name="metric: f1"),
        dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
        mode="st",
        status=RunStatus.RUNNING,
    )
    return study, run


def viewer(username: str) -> User:
    user = User.objects.create_user(username, password=f"pw-{username}-123", role="researcher")
    user.memberships.update(role="viewer")
    assert list(user.memberships.values_list("role", flat=True)) == ["viewer"]
    return user


def test_a_viewer_sees_no_action_he_cannot_take(browser, live_server, transactional_db, tmp_path):
    study, run = a_study_and_a_running_run(tmp_path)
    viewer("vera")
    page = sign_in(browser, live_server, "vera", "pw-vera-123", path="/console/")
    page.wait_for_selector("#read-only")
    for button in ("#new-study", "#new-judging-run", "#import-responses"):
        assert page.locator(button).count() == 0, button
    page.goto(f"{live_server.url}/console/runs/")
    assert page.locator("a:has-text('Judge responses')").count() == 0
    page.goto(f"{live_server.url}/console/adaptive/")
    assert page.locator("#new-adaptive").count() == 0
    # a study he reads: its state, no open / pause / close / refill
    page.goto(f"{live_server.url}/console/studies/{study.pk}/")
    page.wait_for_selector("#study-status")
    assert page.locator("#study-actions form").count() == 0
    # a running run he reads: its progress, no cancel
    page.goto(f"{live_server.url}/console/runs/judging/{run.pk}/")
    page.wait_for_selector("#run-actions")
    assert page.locator("#run-actions form").count() == 0

    # the same pages show a researcher of the project the actions (the checks
    # above look for what is there to be hidden)
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    page = sign_in(browser, live_server, path=f"/console/studies/{study.pk}/")
    page.wait_for_selector("#pause-study")
    assert page.locator("#study-actions form").count() >= 3  # pause, close, refill
    page.goto(f"{live_server.url}/console/runs/judging/{run.pk}/")
    page.wait_for_selector("#cancel-run")
    page.goto(f"{live_server.url}/console/")
    page.wait_for_selector("#new-study")
    assert page.locator("#read-only").count() == 0


def test_a_refused_action_says_why_on_the_page(browser, live_server, transactional_db, tmp_path):
    study, _ = a_study_and_a_running_run(tmp_path)
    rita = User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    page = sign_in(browser, live_server, path=f"/console/studies/{study.pk}/")
    page.wait_for_selector("#pause-study")
    # focused, the live part is not refreshed under the click (its hx-trigger)
    page.focus("#pause-study")
    rita.memberships.update(role="viewer")  # an owner changed her role meanwhile
    page.click("#pause-study")
    page.wait_for_selector("#action-refused")
    assert page.inner_text("#action-refused") == f"Not done: {VIEWER_REASON}"
    study.refresh_from_db()
    assert study.status == Study.Status.OPEN


def test_a_gold_annotator_signing_in_for_the_console_lands_on_gold(
    browser, live_server, transactional_db
):
    User.objects.create_user("gina", password="pw-gina-123", role="gold_annotator")
    page = sign_in(browser, live_server, "gina", "pw-gina-123", path="/console/")
    page.wait_for_url(re.compile(r"/gold/$"))
    assert page.locator("h1").first.inner_text() != "Not allowed"


def test_a_viewers_direct_post_gets_the_403_page_with_the_reason(client, two_meetings):
    study = make_study()
    client.force_login(viewer("vera"))
    for url in (
        f"/console/studies/{study.pk}/status/close/",
        f"/console/studies/{study.pk}/refill/",
    ):
        answer = client.post(url)
        assert answer.status_code == 403, url
        assert VIEWER_REASON in answer.content.decode()
    study.refresh_from_db()
    assert study.status == Study.Status.OPEN


def test_a_viewer_opening_a_create_form_is_told_why_he_may_not(client, two_meetings):
    client.force_login(viewer("vera"))
    for url in (
        "/console/studies/new/",
        "/console/runs/judging/new/",
        "/console/runs/generation/new/",
        "/console/runs/generation/import/",
        "/console/adaptive/new/",
        "/console/judges/panels/new/",
        "/console/judges/probes/new/",
    ):
        answer = client.get(url)
        assert answer.status_code == 403, url
        assert "You may create in none of your projects" in answer.content.decode(), url


def test_whoever_creates_an_account_chooses_its_first_role(admin_client, db):
    project = default_project()
    Project.objects.create(name="Team B", slug="team-b")
    form = {
        "username": "newcomer",
        "password1": "a-long-pass-9876",
        "password2": "a-long-pass-9876",
        "usable_password": "true",
        "role": "researcher",
        "project": project.pk,
        "project_role": "viewer",
    }
    answer = admin_client.post("/admin/users/user/add/", form)
    assert answer.status_code == 302, answer.content.decode()[:3000]
    made = User.objects.get(username="newcomer")
    assert list(made.memberships.values_list("project__slug", "role")) == [(project.slug, "viewer")]

    # a role without its project (or the reverse) is refused, and nothing is made
    refused = admin_client.post(
        "/admin/users/user/add/", form | {"username": "second", "project": ""}
    )
    assert refused.status_code == 200
    assert "Choose the project this role is in." in refused.content.decode()
    assert not User.objects.filter(username="second").exists()


def test_with_one_project_the_form_offers_it_and_no_project_is_a_choice(admin_client, db):
    project = default_project()
    page = admin_client.get("/admin/users/user/add/")
    assert page.context["adminform"].form.fields["project"].initial == project.pk
    answer = admin_client.post(
        "/admin/users/user/add/",
        {
            "username": "later",
            "password1": "a-long-pass-9876",
            "password2": "a-long-pass-9876",
            "usable_password": "true",
            "role": "researcher",
            "project": "",
            "project_role": "",
        },
    )
    assert answer.status_code == 302
    # not silently a researcher of the only project
    assert not Membership.objects.filter(user__username="later").exists()
