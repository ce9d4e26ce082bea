"""What the console's run page shows, the API shows too: the time the server
asked a run to wait until (Retry-After) and how many answers came without
token usage (counted by Concord)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from corpus.models import Dataset
from generation.models import GenerationRun
from judging.judging_runs import create_judging_run, ensure_metric_evaluators
from judging.models import JudgingRun

pytestmark = pytest.mark.django_db


def test_runs_show_waiting_until_and_counted_usage(two_meetings, researcher):
    ensure_metric_evaluators()
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    judging = create_judging_run(
        JudgingRun._meta.get_field("evaluator").related_model.objects.get(name="metric: f1"),
        dataset,
        "st",
    )
    generation = GenerationRun.objects.filter(dataset=dataset, mode="st").first()
    until = timezone.now() + timedelta(seconds=30)
    for model, run in ((JudgingRun, judging), (GenerationRun, generation)):
        model.objects.filter(pk=run.pk).update(waiting_until=until, counted_usage=7)
    api = APIClient()
    api.force_login(researcher)
    for path, run in (("judging-runs", judging), ("runs", generation)):
        body = api.get(f"/api/{path}/{run.pk}/").json()
        assert body["counted_usage"] == 7, path
        assert body["waiting_until"].startswith(until.strftime("%Y-%m-%dT%H:%M:%S")), path
