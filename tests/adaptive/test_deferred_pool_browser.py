"""A researcher plans an adaptive study that sends what the judge defers, in
Chromium: a judge with no confidence signal is refused on the form with the
report's reason (nothing saved); gpt-4-eval, run with token probabilities,
is taken, and the plan says how draws are sent."""

from __future__ import annotations

import re

import pytest

from adaptive.models import AdaptiveStudy
from corpus.models import Dataset
from generation.models import System
from judging.models import Evaluator
from tests.adaptive.test_deferred_pool import import_sixteen_meetings
from tests.browsing import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_plans_a_study_of_what_the_judge_defers(
    browser, live_server, researcher, tmp_path
):
    import_sixteen_meetings(tmp_path)
    page = sign_in(browser, live_server, path="/console/adaptive/")
    page.set_default_timeout(60_000)  # the plan simulates every design on the pool
    page.click("#new-adaptive")
    page.fill("#id_name", "What the judge defers")
    page.select_option("#id_goal", "means")
    page.fill("#id_half_width", "1.0")
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    page.select_option("#id_dataset", str(dataset.pk))
    for system in System.objects.all():
        page.check(f"#field-systems input[value='{system.pk}']")
    page.select_option("#id_judge", str(Evaluator.objects.get(name="prometheus-eval").pk))
    page.select_option("#id_defer_at", "0.2")
    page.fill("#id_budget_gbp", "300")
    page.fill("#id_draws_per_wave", "80")
    page.fill("#id_min_labels", "20")
    page.fill("#id_deadline", "2099-01-01T12:00")
    page.click("#submit")
    page.wait_for_selector("#form-errors")
    assert "prometheus-eval cannot defer" in page.inner_text("#form-errors")
    assert "no confidence signal" in page.inner_text("#form-errors")
    assert not AdaptiveStudy.objects.exists()

    page.select_option("#id_judge", str(Evaluator.objects.get(name="gpt-4-eval").pk))
    page.click("#submit")
    page.wait_for_selector("#plan-summary")
    assert re.search(r"/console/adaptive/\d+/$", page.url)
    assumptions = page.inner_text("#plan-assumptions")
    assert "what gpt-4-eval defers to humans at 80% agreement" in assumptions
    assert AdaptiveStudy.objects.get().defer_at == 0.2
