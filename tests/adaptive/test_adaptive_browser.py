"""A researcher runs an adaptive study from the console in headless Chromium
(Debian's): states the goal and the budget, reads the plan, starts it, and
watches the monitor update itself while simulated participants rate (the
loop advances after each completed task, as on the worker) until the study
stops itself and shows its answer."""

from __future__ import annotations

import re

import numpy as np
import pytest

from adaptive import loop
from adaptive.models import AdaptiveStudy
from annotator.models import Study
from demo.bots import rate_as_bots
from tests.conftest import tasks_run_eagerly

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def paper(paper_committed):
    """The live server's threads read committed data: this test imports its own
    (it cannot share the other modules' rolled-back transaction)."""
    return paper_committed


def test_a_researcher_runs_an_adaptive_study_to_its_answer(browser, live_server, researcher, paper):
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(live_server.url + "/accounts/login/?next=/console/adaptive/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", "pw-rita-123")
    page.click("#sign-in")
    page.wait_for_url(re.compile(r"/console/adaptive/$"))
    page.click("#new-adaptive")
    page.fill("#id_name", "Adaptive in the browser")
    page.select_option("#id_goal", "means")
    page.fill("#id_half_width", "1.0")
    page.select_option("#id_dataset", str(paper["dataset"].pk))
    for system in paper["systems"]:
        page.check(f"#field-systems input[value='{system.pk}']")
    page.select_option("#id_judge", str(paper["judge"].pk))
    page.select_option("#id_uncertainty_judge", str(paper["other"].pk))
    page.select_option("#id_prior_humans", str(paper["silver"].pk))
    page.fill("#id_budget_gbp", "300")
    page.fill("#id_draws_per_wave", "80")
    page.fill("#id_min_labels", "20")
    page.fill("#id_deadline", "2099-01-01T12:00")
    page.click("#submit")
    page.wait_for_selector("#plan-summary")
    assert "Expected" in page.inner_text("#plan-summary")
    assert "%" in page.inner_text("#plan-chance")
    assert page.inner_text("#adaptive-status") == "Planned: nothing spent"
    adaptive = AdaptiveStudy.objects.get(name="Adaptive in the browser")
    assert adaptive.created_by == researcher

    with tasks_run_eagerly():  # the loop's step runs where the worker would run it
        page.click("#start-adaptive")
        page.wait_for_selector("#adaptive-status:has-text('Running')")
        rng = np.random.default_rng(5)
        for _ in range(40):
            open_ = [s for s in loop.batches(adaptive) if s.status == Study.Status.OPEN]
            if not open_:
                break
            for study in open_:
                rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0.1)
        # the monitor polls every 5 s: it shows the end without a reload
        page.wait_for_selector("#adaptive-status:has-text('Finished')", timeout=30000)
    assert page.inner_text("#stop-reason") == "Stopped: the goal is met"
    assert page.inner_text("#adaptive-answer").startswith("Answered: GPT-4")
    assert page.locator("#adaptive-estimates tbody tr").count() == 3
    plot = page.request.get(live_server.url + page.get_attribute("#adaptive-plot", "src"))
    assert plot.ok and plot.headers["content-type"] == "image/svg+xml"
    page.wait_for_function(
        "() => { const img = document.querySelector('#adaptive-plot');"
        " return img.complete && img.naturalWidth > 0; }"
    )
    decisions = page.inner_text("#adaptive-decisions")
    assert "Started" in decisions and "Wave sent" in decisions and "Finished" in decisions
