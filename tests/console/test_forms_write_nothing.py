"""Opening a form writes nothing: the judging-run forms (console and admin)
offer every metric before its shared evaluator exists, and the evaluator is
made when a run is started with it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from corpus.models import Dataset
from judging.models import Evaluator, JudgingRun
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("page", ["console:judging_run_new", "admin:judging_judgingrun_add"])
def test_opening_a_judging_run_form_writes_nothing_and_offers_the_metrics(
    client, admin_user, two_meetings, page
):
    client.force_login(admin_user)
    assert not Evaluator.objects.filter(kind="metric").exists()
    before = database_snapshot()
    html = client.get(reverse(page)).content.decode()
    assert database_snapshot() == before
    assert 'value="metric:f1"' in html and "metric: f1" in html


def test_a_run_started_with_an_offered_metric_makes_its_shared_evaluator(
    researcher_client, two_meetings
):
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    answer = researcher_client.post(
        reverse("console:judging_run_new"),
        {"evaluator": "metric:f1", "dataset": dataset.pk, "mode": "st"},
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    f1 = Evaluator.objects.get(name="metric: f1")
    assert f1.project is None and JudgingRun.objects.get().evaluator == f1
    # once made, it is offered as itself
    html = researcher_client.get(reverse("console:judging_run_new")).content.decode()
    assert f'value="{f1.pk}"' in html and 'value="metric:f1"' not in html
    # a metric that is not registered is refused
    refused = researcher_client.post(
        reverse("console:judging_run_new"),
        {"evaluator": "metric:nonsense", "dataset": dataset.pk, "mode": "st"},
    )
    assert refused.status_code == 200 and JudgingRun.objects.count() == 1
