"""Events from the apps' own code paths: a judging run done, failed, stopped
on its budget; a study's places all taken, then all completed; an adaptive
study stopped on its budget."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment
from annotator.errors import QuotaFull
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator, JudgingRun
from runs import lifecycle
from tests.annotator.conftest import make_study, rate_as_a_person
from tests.corpus.fixtures import qa_test2
from tests.webhooks.conftest import endpoint_for, project_with
from webhooks import services
from webhooks.models import WebhookDelivery

ALL = [
    "run.finished",
    "run.failed",
    "run.cancelled",
    "budget.reached",
    "study.quota_filled",
    "study.completed",
]


def events(endpoint) -> list[str]:
    return list(endpoint.deliveries.order_by("pk").values_list("event_type", flat=True))


def delivered(receiver, delivery: WebhookDelivery) -> dict:
    """Send it, and what the receiver got (checked against the signature)."""
    assert services.attempt(delivery.pk) == "delivered"
    got = receiver.received[-1]
    assert got.verified and got.headers["Concord-Delivery"] == str(delivery.event_id)
    return got.json


@pytest.fixture
def metric_run(two_meetings, researcher):
    ensure_metric_evaluators()
    run = create_judging_run(Evaluator.objects.get(name="metric: f1"), qa_test2(), "st")
    return run


def test_a_judging_run_that_finishes_sends_run_finished(metric_run, researcher, receiver):
    endpoint_for(project_with(researcher, "elsewhere"), receiver, ALL)  # another project's
    endpoint = endpoint_for(metric_run.project, receiver, ["run.finished", "run.failed"])
    run = judge_run(metric_run.pk)
    assert run.status == "done"
    [delivery] = WebhookDelivery.objects.all()
    assert delivery.endpoint == endpoint
    body = delivered(receiver, delivery)
    assert body["type"] == "run.finished" and body["project"]["id"] == run.project_id
    data = body["data"]["run"]
    assert data["kind"] == "judging_run" and data["id"] == run.pk
    assert (data["status"], data["total"], data["done"]) == ("done", 36, 36)
    assert data["finished_at"] and data["name"] == str(run)


def test_a_judging_run_that_fails_sends_run_failed(metric_run, receiver, monkeypatch):
    endpoint = endpoint_for(metric_run.project, receiver, ["run.failed"])

    def broken(*args, **kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr("judging.metric_judging.sync_rows", broken)
    with pytest.raises(RuntimeError):
        judge_run(metric_run.pk)
    assert events(endpoint) == ["run.failed"]
    body = delivered(receiver, endpoint.deliveries.get())
    assert body["data"]["run"]["status"] == "failed"
    assert "RuntimeError: the disk is full" in body["data"]["run"]["message"]


def test_a_cancel_sends_run_cancelled_and_a_finish_after_it_nothing(metric_run, receiver):
    endpoint = endpoint_for(metric_run.project, receiver, ALL)
    lifecycle.cancel(metric_run)
    judge_run(metric_run.pk)  # its worker finds it cancelled: no second event
    assert events(endpoint) == ["run.cancelled"]


def test_a_run_ended_in_a_rolled_back_transaction_sends_nothing(metric_run, receiver):
    from django.db import transaction

    endpoint = endpoint_for(metric_run.project, receiver, ALL)
    JudgingRun.objects.filter(pk=metric_run.pk).update(status="running")
    with pytest.raises(RuntimeError), transaction.atomic():
        assert lifecycle.finish(metric_run, "done", "")
        raise RuntimeError("what came after failed")
    assert events(endpoint) == []
    metric_run.refresh_from_db()
    assert metric_run.status == "running"


def test_a_study_sends_quota_filled_then_completed_once_each(two_meetings, receiver):
    study = make_study(raters=1)
    endpoint = endpoint_for(study.project, receiver, ["study.quota_filled", "study.completed"])
    places = study.tasks.count()
    assert places == 2
    first = check_start_assignment(study, pid="P1")
    assert events(endpoint) == []
    second = check_start_assignment(study, pid="P2")
    assert events(endpoint) == ["study.quota_filled"]
    with pytest.raises(QuotaFull):
        check_start_assignment(study, pid="P3")
    body = delivered(receiver, endpoint.deliveries.get())
    assert body["data"]["study"] == {
        "id": study.pk,
        "name": study.name,
        "kind": "crowd",
        "rating_type": "rubric",
        "status": "open",
        "tasks": 2,
        "raters_per_task": 1,
        "places": 2,
    }

    def careful(item):
        return item.expected_min if item.expected_min is not None else 7

    for assignment in (first, second):
        rate_as_a_person(assignment, careful)
    check_complete_assignment(first)
    assert events(endpoint) == ["study.quota_filled"]
    check_complete_assignment(second)
    check_complete_assignment(second)  # again (a reload): nothing more
    assert events(endpoint) == ["study.quota_filled", "study.completed"]
    completed = delivered(receiver, endpoint.deliveries.order_by("pk").last())
    assert completed["type"] == "study.completed"
    assert completed["data"]["study"]["id"] == study.pk


def test_an_adaptive_study_stopped_on_its_budget_sends_budget_reached(two_meetings, receiver):
    from adaptive.loop import check_create, check_start
    from adaptive.models import AdaptiveStudy
    from generation.models import System

    adaptive = check_create(
        AdaptiveStudy(
            name="Adaptive on a shoestring",
            half_width=1.0,
            dataset=qa_test2(),
            mode="st",
            judge=Evaluator.objects.get(name="gpt-4-eval"),
            budget_pence=50,
            send_rate=1.0,
            deadline=timezone.now() + timedelta(days=1),
            draws_per_wave=10,
        ),
        list(System.objects.filter(runs__dataset=qa_test2(), runs__mode="st").distinct()),
    )
    endpoint = endpoint_for(adaptive.project, receiver, ["budget.reached"])
    check_start(adaptive)
    adaptive.refresh_from_db()
    assert adaptive.status == "stopping" and adaptive.stop_reason.startswith("budget spent")
    body = delivered(receiver, endpoint.deliveries.get())
    assert body["data"]["subject"] == "adaptive_study"
    assert body["data"]["adaptive_study"]["id"] == adaptive.pk
    assert body["data"]["adaptive_study"]["stop_reason"] == adaptive.stop_reason
    assert body["data"]["budget"] == {"limit": 0.5, "spent": 0.0, "currency": "GBP"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_celery")
def test_a_judging_run_stopped_on_its_budget_sends_budget_reached(two_meetings_committed, receiver):
    """End to end: once the run's end commits, its deliveries' tasks run (here
    in the process) and reach the receiver."""
    from judging.model_judging import run_llm_judging
    from tests.fakes.openai_server import FakeOpenAI
    from tests.judging.test_llm_runs import priced_judge

    with FakeOpenAI() as server:
        run = create_judging_run(
            priced_judge(server), qa_test2(), "st", budget=10, confirm_over_budget=True
        )
        endpoint = endpoint_for(run.project, receiver, ["budget.reached", "run.cancelled"])
        run = run_llm_judging(run.pk)
    assert run.status == "cancelled"
    assert sorted(events(endpoint)) == ["budget.reached", "run.cancelled"]
    assert set(endpoint.deliveries.values_list("status", flat=True)) == {"delivered"}
    by_type = {r.headers["Concord-Event"]: r.json for r in receiver.received}
    assert all(r.verified for r in receiver.received)
    budget = by_type["budget.reached"]["data"]
    assert budget["subject"] == "run" and budget["run"]["id"] == run.pk
    assert budget["budget"]["limit"] == 10 and budget["budget"]["currency"] == "USD"
    assert budget["budget"]["spent"] == pytest.approx(run.cost)
    assert by_type["run.cancelled"]["data"]["run"]["status"] == "cancelled"
