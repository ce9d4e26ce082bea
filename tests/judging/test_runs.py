"""Automatic-metric judging runs: command, admin, Celery task, idempotence."""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging.judging_runs import create_judging_run, ensure_metric_evaluators, run_metric_judging
from judging.models import Evaluator, JudgingRun, Judgment
from tests.conftest import tasks_run_eagerly

pytestmark = pytest.mark.django_db


def test_metric_run_scores_every_response(two_meetings, capsys):
    call_command("judge", "--evaluator", "metric: f1", "--split", "test2", "--now")
    assert "36/36 judged, 0 failed (done)" in capsys.readouterr().out  # no key, no call
    judgments = Judgment.objects.filter(evaluator__name="metric: f1")
    assert judgments.count() == 36
    # Synthetic-Terse answers the first word of the reference: "The lecture recordings" ->
    # "The": normalised to nothing vs "lecture recordings" -> F1 0
    echo = judgments.filter(response__run__system__name="Synthetic-Echo").first()
    assert 0 < echo.raw_score <= 1 and echo.score == pytest.approx(1 + 9 * echo.raw_score)
    assert (echo.raw_scale_min, echo.raw_scale_max) == (0, 1)
    before = list(judgments.order_by("pk").values_list("pk", "score"))
    run = JudgingRun.objects.get()
    JudgingRun.objects.filter(pk=run.pk).update(status="queued")
    run_metric_judging(run.pk)  # a redelivered task: nothing duplicated, nothing changed
    assert list(judgments.order_by("pk").values_list("pk", "score")) == before


def test_systems_and_bad_input(two_meetings):
    with pytest.raises(CommandError, match="No evaluator 'metric: bleu'"):
        call_command("judge", "--evaluator", "metric: bleu", "--split", "test2")
    with pytest.raises(CommandError, match="Unknown system"):
        call_command("judge", "--evaluator", "metric: f1", "--split", "test2", "--systems", "X")
    with pytest.raises(CommandError, match="No such dataset"):
        call_command("judge", "--evaluator", "metric: f1", "--split", "dev")
    with pytest.raises(CommandError, match="No mt responses"):
        call_command("judge", "--evaluator", "metric: f1", "--split", "test2", "--mode", "mt")
    with pytest.raises(CommandError, match="runs take automatic metrics and LLM judges"):
        call_command("judge", "--evaluator", "gpt-4-eval", "--split", "test2")
    assert JudgingRun.objects.count() == 0  # refused runs leave nothing behind
    call_command(
        "judge",
        "--evaluator",
        "metric: exact match",
        "--split",
        "test2",
        "--systems",
        "Synthetic-Echo",
        "--now",
    )
    assert Judgment.objects.filter(evaluator__name="metric: exact match").count() == 12


def test_admin_starts_a_run_through_celery(
    two_meetings, client, django_user_model, django_capture_on_commit_callbacks
):
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(admin)
    assert 'value="metric:rouge"' in client.get(reverse("admin:judging_judgingrun_add")).text
    from corpus.models import Dataset
    from users.models import Project, default_project

    default = default_project()

    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    with tasks_run_eagerly(), django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            reverse("admin:judging_judgingrun_add"),
            {"evaluator": "metric:rouge", "dataset": dataset.pk, "mode": "st",
             "project": default.pk},
        )  # fmt: skip
    assert answer.status_code == 302
    rouge = Evaluator.objects.get(name="metric: rouge")  # made when the run started
    run = JudgingRun.objects.get()
    assert (run.status, run.done, run.total, run.project) == ("done", 36, 36, default)
    # the project is the one chosen: a project without responses has nothing to judge
    lab = Project.objects.create(slug="lab", name="Lab")
    refused = client.post(
        reverse("admin:judging_judgingrun_add"),
        {"evaluator": rouge.pk, "dataset": dataset.pk, "mode": "st", "project": lab.pk},
        follow=True,
    )
    assert "Not started: No st responses" in refused.content.decode()
    assert JudgingRun.objects.count() == 1
    listing = client.get(reverse("admin:judging_judgingrun_changelist"))
    assert b"36/36" in listing.content


def test_cancelled_run_stops(two_meetings):
    from judging.judging_runs import cancel_run

    evaluator = ensure_metric_evaluators()[0]
    from corpus.models import Dataset

    run = create_judging_run(
        evaluator, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    cancel_run(run)
    assert run_metric_judging(run.pk).status == "cancelled"
    assert not Judgment.objects.filter(evaluator=evaluator).exists()


def test_evaluator_configurations_are_checked_and_frozen(two_meetings, client, django_user_model):
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(admin)
    url = reverse("admin:judging_evaluator_add")
    form = {
        "name": "custom judge",
        "kind": "llm_rubric",
        "description": "",
        "raw_scale_min": 1,
        "raw_scale_max": 10,
        "config": '{"protocol": "custom", "template": "{response} {transcript}", '
        '"base_url": "http://127.0.0.1:9/v1"}',
    }
    page = client.post(url, form)
    assert "Unknown placeholder {transcript}" in page.content.decode()
    assert not Evaluator.objects.filter(name="custom judge").exists()
    form["config"] = '{"server": "openai", "top_k": 5, "base_url": "http://127.0.0.1:9/v1"}'
    assert "does not accept top_k" in client.post(url, form).content.decode()
    gpt4 = Evaluator.objects.get(name="gpt-4-eval")
    change = reverse("admin:judging_evaluator_change", args=[gpt4.pk])
    page = client.post(
        change,
        {
            "name": "gpt-4-eval",
            "kind": "imported",
            "description": "",
            "raw_scale_min": 1,
            "raw_scale_max": 10,
            "config": '{"x": 1}',
        },
    )
    assert "its configuration is frozen" in page.content.decode()
    gpt4.refresh_from_db()
    assert "x" not in gpt4.config


def test_runs_and_evaluators_through_the_api(
    two_meetings, researcher, gold_annotator, django_capture_on_commit_callbacks
):
    from rest_framework.test import APIClient

    from corpus.models import Dataset

    api = APIClient()
    api.force_login(researcher)
    bad = api.post(
        "/api/evaluators/",
        {"name": "j", "kind": "llm_rubric", "config": {"server": "openai", "top_k": 3}},
        format="json",
    )
    assert bad.status_code == 400 and "does not accept top_k" in str(bad.json())
    ensure_metric_evaluators()
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    with tasks_run_eagerly(), django_capture_on_commit_callbacks(execute=True):
        created = api.post(
            "/api/judging-runs/",
            {
                "evaluator": "metric: f1",
                "dataset": dataset.pk,
                "mode": "st",
                "systems": ["Synthetic-Echo"],
            },
            format="json",
        )
    assert created.status_code == 201, created.json()
    run = api.get(f"/api/judging-runs/{created.json()['id']}/").json()
    assert (run["status"], run["done"], run["total"]) == ("done", 12, 12)
    assert api.post(f"/api/judging-runs/{run['id']}/resume/").status_code == 409
    refused = api.post(
        "/api/judging-runs/",
        {"evaluator": "metric: f1", "dataset": dataset.pk, "mode": "mt"},
        format="json",
    )
    assert refused.status_code == 400 and "No mt responses" in refused.json()["detail"]
    gold = APIClient()
    gold.force_login(gold_annotator)
    assert gold.get("/api/judging-runs/").status_code == 403


def test_a_queued_run_whose_evaluator_cannot_be_read_fails_saying_why(two_meetings):
    from judging.judging_runs import judge_run
    from runs.signals import run_finished

    ensure_metric_evaluators()
    f1 = Evaluator.objects.get(name="metric: f1")
    run = create_judging_run(f1, two_meetings_dataset(), "st")
    assert run.status == "queued"
    # the evaluator's stored settings name a metric this install no longer has
    Evaluator.objects.filter(pk=f1.pk).update(config={"metric": "bleu"})
    ended = []

    def record(sender, pk, status, **kwargs):
        ended.append((pk, status))

    run_finished.connect(record)
    try:
        judged = judge_run(run.pk)
    finally:
        run_finished.disconnect(record)
    run.refresh_from_db()
    assert (judged.status, run.status) == ("failed", "failed")
    assert run.message.startswith("metric: f1: Unknown metric 'bleu'")
    assert run.finished_at is not None and run.lease_owner == ""
    assert (run.pk, "failed") in ended
    assert not Judgment.objects.filter(evaluator=f1).exists()


def two_meetings_dataset():
    from corpus.models import Dataset

    return Dataset.objects.get(version="qa", language="en", split="test2")
