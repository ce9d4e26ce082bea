"""The researcher console through Django's test client: who may open it, what
each page shows, and that each action calls the service and answers with the
new state (htmx: the fragment; plain POST: a redirect and a message)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.actions.arrival import check_start_assignment
from annotator.actions.status import check_set_study_status
from annotator.models import AuditEvent, Participant, Study
from corpus.models import Document
from judging.judging_runs import create_judging_run, ensure_metric_evaluators
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment
from tests.annotator.conftest import finished, make_study
from tests.corpus.fixtures import qa_test2

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


PAGES = [
    ("console:home", {}),
    ("console:runs", {}),
    ("console:workers", {}),
    ("console:documents", {}),
    ("console:study_new", {}),
    ("console:judging_run_new", {}),
    ("console:generation_run_new", {}),
]


# What Chromium sends when it opens a page.
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


# --- who may open it ---------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_sign_in(client, two_meetings):
    for name, kwargs in PAGES:
        answer = client.get(reverse(name, kwargs=kwargs))
        assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


def test_gold_annotators_asking_for_the_console_or_a_report_land_on_their_gold_studies(
    client, gold_annotator, two_meetings
):
    client.force_login(gold_annotator)
    for url in (reverse("console:home"), reverse("analysis-report") + "?split=test2"):
        answer = client.get(url, follow=True, headers={"Accept": BROWSER_ACCEPT})
        assert answer.redirect_chain[-1][0] == reverse("annotator:gold_home"), url
        assert answer.status_code == 200
        # not a browser's page request (a figure, a script): the 403
        assert client.get(url).status_code == 403


def test_signing_in_with_next_console_lands_a_gold_annotator_on_gold(client, gold_annotator):
    answer = client.post(
        reverse("login") + "?next=/console/",
        {"username": gold_annotator.username, "password": "pw-gina-123", "next": "/console/"},
        follow=True,
        headers={"Accept": BROWSER_ACCEPT},
    )
    assert answer.redirect_chain[-1][0] == reverse("annotator:gold_home")


def test_an_action_posted_by_a_gold_annotator_gets_the_styled_403(client, gold_annotator):
    client.force_login(gold_annotator)
    answer = client.post(reverse("console:study_status", args=[1, "pause"]))
    assert answer.status_code == 403
    html = answer.content.decode()
    assert "The console is for researchers and admins." in html
    assert "concord/concord.css" in html and "favicon.svg" in html  # the product's page


def test_start_page_sends_each_role_where_it_works(client, researcher, gold_annotator):
    assert client.get("/")["Location"].startswith("/accounts/login/")
    client.force_login(gold_annotator)
    assert client.get("/")["Location"] == reverse("annotator:gold_home")
    client.force_login(researcher)
    assert client.get("/")["Location"] == reverse("console:home")


def test_signing_in_lands_a_researcher_on_the_console(client, researcher):
    answer = client.post(
        reverse("login"), {"username": "rita", "password": "pw-rita-123"}, follow=True
    )
    assert answer.redirect_chain[-1][0] == reverse("console:home")


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_every_page_opens_for_a_researcher(researcher_client, two_meetings, name, kwargs):
    answer = researcher_client.get(reverse(name, kwargs=kwargs))
    assert answer.status_code == 200
    html = answer.content.decode()
    assert "vendor/htmx-2.0.11.min.js" in html and 'id="console-to-admin"' in html


def test_favicon_and_not_found_page(client):
    answer = client.get("/favicon.ico")
    assert answer.status_code == 301 and answer["Location"].endswith("/static/favicon.ico")
    missing = client.get("/no-such-page/")
    assert missing.status_code == 404
    assert "concord/concord.css" in missing.content.decode()


def test_api_root_describes_the_api(researcher_client):
    answer = researcher_client.get("/api/", HTTP_ACCEPT="text/html")
    html = answer.content.decode()
    assert "The default basic root view" not in html
    assert "Concord&#x27;s REST API" in html or "Concord's REST API" in html


def test_admin_links_to_the_console_and_view_site_leads_there(client, django_user_model):
    boss = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(boss)
    html = client.get(reverse("admin:index")).content.decode()
    assert 'id="admin-to-console"' in html and 'href="/console/">View site' in html
    assert "Django administration" not in html and "concord/admin.css" in html


# --- home and runs -----------------------------------------------------------------------------


def test_home_lists_studies_runs_and_report_exports(researcher_client, crowd_study):
    ensure_metric_evaluators()
    run = create_judging_run(Evaluator.objects.get(name="metric: f1"), qa_test2(), "st")
    html = researcher_client.get(reverse("console:home")).content.decode()
    assert crowd_study.name in html and reverse("console:study", args=[crowd_study.pk]) in html
    assert reverse("console:run", args=["judging", run.pk]) in html
    for fmt in ("html", "json", "csv", "csv-wide", "latex"):
        assert f'data-format="{fmt}"' in html
    assert f"study={crowd_study.pk}&amp;format=csv-wide" in html


def llm_run(name="judge", systems=()):
    evaluator = Evaluator.objects.create(
        name=name,
        kind="llm_rubric",
        config={
            "protocol": "rubric",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "server": "vllm",
            "seeds": [1],
            "price_input_per_million": 1.0,
        },
    )
    return create_judging_run(evaluator, qa_test2(), "st", systems)


def test_run_monitor_groups_failures_by_cause_with_the_first_message(
    researcher_client, two_meetings
):
    run = llm_run()
    items = list(JudgeItem.objects.filter(run=run).order_by("pk"))
    JudgeItem.objects.filter(pk__in=[i.pk for i in items[:3]]).update(
        outcome="api_error", detail="APIConnectionError: Connection error."
    )
    JudgeItem.objects.filter(pk=items[3].pk).update(
        outcome="api_error", detail="RateLimitError: Error code: 429 - slow down"
    )
    JudgeItem.objects.filter(pk__in=[items[4].pk, items[5].pk]).update(
        status="needs_human", outcome="parse_failure", detail="no \\boxed{} score"
    )
    JudgingRun.objects.filter(pk=run.pk).update(status="failed", done=10, failed=6)
    html = researcher_client.get(reverse("console:run", args=["judging", run.pk])).content.decode()
    assert "3 × API errors</strong>: APIConnectionError" in html
    assert "first: APIConnectionError: Connection error." in html
    assert "1 × API errors</strong>: RateLimitError" in html
    assert "2 × Answers without a readable score" in html and "needs-a-human list" in html
    assert "every system of the dataset" in html  # not "GPT-4 / None selected"
    assert 'id="resume-run"' in html and 'id="retry-failed"' in html
    assert 'id="cancel-run"' not in html


def test_run_monitor_names_the_chosen_systems(researcher_client, two_meetings):
    from generation.models import System

    run = llm_run(systems=[System.objects.get(name="Synthetic-Echo")])
    html = researcher_client.get(reverse("console:run", args=["judging", run.pk])).content.decode()
    assert '<span id="systems">Synthetic-Echo</span>' in html


def test_cancel_and_resume_from_the_console(
    researcher_client, two_meetings, django_capture_on_commit_callbacks
):
    run = llm_run()
    JudgingRun.objects.filter(pk=run.pk).update(status="running")
    url = reverse("console:run_action", args=["judging", run.pk, "cancel"])
    answer = researcher_client.post(url, **HTMX)
    run.refresh_from_db()
    assert run.status == "cancelled"
    html = answer.content.decode()
    assert 'id="run-live"' in html and "cancelled." in html and 'id="resume-run"' in html
    sent = []
    from runs import lifecycle

    original = lifecycle.enqueue
    lifecycle.enqueue = lambda r: sent.append(r.pk) or True
    try:
        plain = researcher_client.post(
            reverse("console:run_action", args=["judging", run.pk, "resume"])
        )
    finally:
        lifecycle.enqueue = original
    run.refresh_from_db()
    assert run.status == "queued" and sent == [run.pk]
    assert plain.status_code == 302
    page = researcher_client.get(plain["Location"]).content.decode()
    assert "queued on" in page  # the outcome as a message


def test_retry_failed_puts_the_items_back(researcher_client, two_meetings, monkeypatch):
    from runs import lifecycle

    monkeypatch.setattr(lifecycle, "enqueue", lambda run: True)
    run = llm_run()
    item = JudgeItem.objects.filter(run=run).first()
    JudgeItem.objects.filter(pk=item.pk).update(status="needs_human", outcome="parse_failure")
    JudgingRun.objects.filter(pk=run.pk).update(status="done")
    researcher_client.post(
        reverse("console:run_action", args=["judging", run.pk, "retry-failed"]), **HTMX
    )
    item.refresh_from_db()
    run.refresh_from_db()
    assert item.status == "pending" and run.status == "queued"


def test_unknown_run_action_and_kind_are_404(researcher_client, two_meetings):
    run = llm_run()
    assert (
        researcher_client.post(
            reverse("console:run_action", args=["judging", run.pk, "explode"])
        ).status_code
        == 404
    )
    assert researcher_client.get(reverse("console:run", args=["nope", run.pk])).status_code == 404
    assert (
        researcher_client.get(
            reverse("console:run_action", args=["judging", run.pk, "cancel"])
        ).status_code
        == 405
    )


def test_starting_a_metric_run_from_the_console(
    researcher_client, two_meetings, eager_celery, django_capture_on_commit_callbacks
):
    ensure_metric_evaluators()
    rouge = Evaluator.objects.get(name="metric: rouge")
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher_client.post(
            reverse("console:judging_run_new"),
            {"evaluator": rouge.pk, "dataset": qa_test2().pk, "mode": "st"},
        )
    run = JudgingRun.objects.get()
    assert answer["Location"] == reverse("console:run", args=["judging", run.pk])
    run.refresh_from_db()
    assert run.status == "done" and run.done == 36
    assert Judgment.objects.filter(evaluator=rouge).count() == 36


def test_a_refused_run_says_why_and_stores_nothing(researcher_client, two_meetings):
    ensure_metric_evaluators()
    rouge = Evaluator.objects.get(name="metric: rouge")
    answer = researcher_client.post(
        reverse("console:judging_run_new"),
        {"evaluator": rouge.pk, "dataset": qa_test2().pk, "mode": "mt"},
    )
    assert answer.status_code == 200
    assert "No mt responses" in answer.content.decode()
    assert JudgingRun.objects.count() == 0


# --- studies -----------------------------------------------------------------------------------


def test_creating_a_study_from_the_console(researcher_client, two_meetings):
    from generation.models import System

    answer = researcher_client.post(
        reverse("console:study_new"),
        {
            "name": "Console pilot",
            "kind": "crowd",
            "rating_type": "rubric",
            "dataset": qa_test2().pk,
            "mode": "st",
            "systems": [s.pk for s in System.objects.all()],
            "raters_per_task": 2,
            "scale_max": 10,
            "estimated_minutes": 30,
            "completion_code": "C0DE1234",
            "gold_evaluator": Evaluator.objects.get(name="gold-human-eval").pk,
        },
    )
    study = Study.objects.get(name="Console pilot")
    assert answer["Location"] == reverse("console:study", args=[study.pk])
    assert study.status == Study.Status.CLOSED and study.items.count() == 36
    assert study.tasks.count() == 2


def test_a_refused_study_says_why_and_stores_nothing(researcher_client, two_meetings):
    from generation.models import System

    answer = researcher_client.post(
        reverse("console:study_new"),
        {
            "name": "Nothing to rate",
            "kind": "crowd",
            "rating_type": "rubric",
            "dataset": qa_test2().pk,
            "mode": "mt",
            "systems": [s.pk for s in System.objects.all()],
            "raters_per_task": 2,
            "scale_max": 10,
            "estimated_minutes": 30,
            "completion_code": "C0DE1234",
        },
    )
    assert answer.status_code == 200 and "No multi-turn run on" in answer.content.decode()
    assert not Study.objects.filter(name="Nothing to rate").exists()


def test_study_monitor_shows_progress_quality_and_the_prolific_link(researcher_client, crowd_study):
    finished(crowd_study, "STEADY")
    check_start_assignment(crowd_study, pid="WORKING")
    html = researcher_client.get(reverse("console:study", args=[crowd_study.pk])).content.decode()
    assert f"/s/{crowd_study.public_id}/?PROLIFIC_PID=" in html and 'id="copy-prolific-url"' in html
    assert 'data-participant="STEADY"' in html and 'data-participant="WORKING"' in html
    assert "1 of 4 completed · 1 working" in html
    assert 'id="arrivals"' in html and "2 participants" in html
    assert 'hx-trigger="every 5s' in html  # live while open


def test_excluding_and_reinstating_from_the_console(researcher_client, crowd_study, researcher):
    sloppy = finished(crowd_study, "SLOPPY").participant
    url = reverse("console:exclude", args=[sloppy.pk])
    refused = researcher_client.post(url, {"reason": "  "}, **HTMX)
    assert "Give a reason" in refused.content.decode()
    sloppy.refresh_from_db()
    assert sloppy.status == Participant.Status.ACCEPTED
    answer = researcher_client.post(url, {"reason": "r = -0.4 with gold"}, **HTMX)
    html = answer.content.decode()
    assert "Excluded SLOPPY" in html and 'id="study-live"' in html
    sloppy.refresh_from_db()
    assert sloppy.status == Participant.Status.EXCLUDED
    assert sloppy.exclusion_reason == "r = -0.4 with gold"
    assert not Judgment.objects.filter(rater="SLOPPY").exists()
    event = AuditEvent.objects.get(action="excluded")
    assert event.actor == researcher and event.detail == "r = -0.4 with gold"
    researcher_client.post(reverse("console:reinstate", args=[sloppy.pk]), **HTMX)
    sloppy.refresh_from_db()
    assert sloppy.status == Participant.Status.ACCEPTED
    assert Judgment.objects.filter(rater="SLOPPY").exists()


def test_pause_open_close_and_refill_from_the_console(researcher_client, crowd_study):
    answer = researcher_client.post(
        reverse("console:study_status", args=[crowd_study.pk, "pause"]), **HTMX
    )
    crowd_study.refresh_from_db()
    assert crowd_study.status == Study.Status.PAUSED
    assert "is now paused" in answer.content.decode()
    researcher_client.post(reverse("console:study_status", args=[crowd_study.pk, "close"]))
    crowd_study.refresh_from_db()
    assert crowd_study.status == Study.Status.CLOSED
    refill = researcher_client.post(reverse("console:study_refill", args=[crowd_study.pk]), **HTMX)
    assert (
        "Refilled the quota: no unfinished work was old enough to release; 4 places are open "
        "to new participants." in refill.content.decode()
    )
    assert AuditEvent.objects.filter(action="quota_refilled").count() == 1
    assert (
        researcher_client.post(
            reverse("console:study_status", args=[crowd_study.pk, "explode"])
        ).status_code
        == 404
    )


def test_opening_a_study_without_items_is_refused_with_its_reason(researcher_client, two_meetings):
    study = make_study(name="Empty")
    study.items.all().delete()
    check_set_study_status(study, Study.Status.CLOSED)
    answer = researcher_client.post(
        reverse("console:study_status", args=[study.pk, "open"]), **HTMX
    )
    assert "has no items yet" in answer.content.decode()
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED


# --- documents ---------------------------------------------------------------------------------


def test_document_viewer_links_questions_to_their_answers(researcher_client, two_meetings):
    document = Document.objects.filter(split="test2").first()
    html = researcher_client.get(reverse("console:document", args=[document.pk])).content.decode()
    assert 'id="turn-0"' in html and 'class="speaker' in html
    assert "Middle third" in html and "Final third" in html
    assert 'class="passage-link"' in html  # some reference answers are worded in the transcript
    assert 'id="search-prev"' in html


def test_admin_pages_say_concord_and_lead_to_the_console(client, django_user_model, two_meetings):
    from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME

    boss = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(boss)
    study = make_study(name="Admin look")
    worker = finished(study, "SOMEONE").participant
    confirm = client.post(
        reverse("admin:annotator_participant_changelist"),
        {"action": "exclude_action", ACTION_CHECKBOX_NAME: [worker.pk]},
    ).content.decode()
    assert "Exclude participants" in confirm
    assert "Django administration" not in confirm and "Concord" in confirm
    run = llm_run()
    page = client.get(reverse("admin:judging_judgingrun_change", args=[run.pk])).content.decode()
    assert reverse("console:run", args=["judging", run.pk]) in page
    assert "every system of the dataset" in page and "None selected" not in page


def test_generation_run_monitor_and_its_actions(researcher_client, two_meetings):
    from generation.models import GenerationRun

    imported = GenerationRun.objects.filter(origin="imported").first()
    html = researcher_client.get(
        reverse("console:run", args=["generation", imported.pk])
    ).content.decode()
    assert imported.system.name in html and 'id="run-progress"' in html
    assert 'id="resume-run"' not in html  # an imported run has nothing to generate
    answer = researcher_client.post(
        reverse("console:run_action", args=["generation", imported.pk, "resume"]), **HTMX
    )
    assert "was imported: nothing to generate" in answer.content.decode()
    assert (
        researcher_client.post(
            reverse("console:run_action", args=["generation", imported.pk, "retry-failed"])
        ).status_code
        == 404
    )  # generation has no retry-failed
    GenerationRun.objects.filter(pk=imported.pk).update(status="running")
    researcher_client.post(
        reverse("console:run_action", args=["generation", imported.pk, "cancel"]), **HTMX
    )
    imported.refresh_from_db()
    assert imported.status == "cancelled"


def test_a_run_without_a_price_says_its_cost_is_unknown(client, researcher, two_meetings):
    """Never a bare $0: a judge with no price per million tokens has a cost
    Concord cannot know; a metric, and a priced judge, read as they are."""
    ensure_metric_evaluators()
    client.force_login(researcher)
    unpriced = Evaluator.objects.create(
        name="unpriced-judge", kind="llm_rubric", config={"server": "openai", "model": "m"}
    )
    priced = Evaluator.objects.create(
        name="priced-judge",
        kind="llm_rubric",
        config={"server": "openai", "model": "m", "price_input_per_million": 2.5},
    )
    pages = {}
    for evaluator in (unpriced, priced, Evaluator.objects.get(name="metric: rouge")):
        run = JudgingRun.objects.create(
            evaluator=evaluator, dataset=qa_test2(), mode="st", status="done"
        )
        pages[evaluator.name] = client.get(reverse("console:run", args=["judging", run.pk]))
    unknown = pages["unpriced-judge"].content.decode()
    assert 'id="cost">unknown' in unknown and "$0.0000" not in unknown
    assert "cost unknown: this judge has no price per million tokens" in unknown
    assert 'id="cost">$0.0000' in pages["priced-judge"].content.decode()
    assert 'id="cost-note"' not in pages["priced-judge"].content.decode()
    assert "no cost: a metric calls no model" in pages["metric: rouge"].content.decode()
