"""Style-controlled rankings in Chromium, by a researcher of a project that is
not the default one (test_panels_browser's team_data: Rita researches
team-b, whose runs hold 3 synthetic meetings, and views the default
project): she ticks Style-controlled rankings in the builder and
reads each evaluator's ranking with the length and the answers' markdown
held fixed; the elements no two answers differ in are named as left out."""

from __future__ import annotations

import numpy as np
import pytest

from generation.models import Response
from judging.models import Judgment
from tests.browsing import sign_in
from tests.console.test_panels_browser import team_data  # noqa: F401 (the fixture)

pytestmark = pytest.mark.browser


@pytest.mark.usefixtures("team_data")
def test_a_researcher_of_a_second_project_reads_style_controlled_rankings(browser, live_server):
    # the synthetic judge prefers one system always (no finite rating): its scores
    # drawn afresh, so that every system wins some and loses some
    rng = np.random.default_rng(3)
    judged = list(Judgment.objects.filter(evaluator__name="gpt-4-eval"))
    for judgment in judged:
        judgment.score = float(rng.integers(1, 11))
    Judgment.objects.bulk_update(judged, ["score"])
    # every other answer becomes a list of two items; none has a header or bold
    for number, response in enumerate(Response.objects.order_by("pk")):
        if number % 2:
            response.text = f"- {response.text}\n- and that is all"
            response.save(update_fields=["text"])

    page = sign_in(browser, live_server, path="/analysis/report/?project=team-b")
    page.set_default_timeout(120_000)  # a ranking per evaluator, each with its resamples
    page.wait_for_selector("#scope")
    page.click("#builder-box > summary")
    assert page.input_value("#builder-project") == "team-b"
    page.check("#builder input[name=style_control]")
    page.click("#builder button[type=submit]")
    page.wait_for_selector("#style-controlled")
    assert "style_control=1" in page.url
    judge = page.locator("details.ranking", has_text="gpt-4-eval (style-controlled)")
    judge.locator("summary").click()
    part = judge.inner_text()
    assert "The length difference's weight" in part
    assert "The lists difference's weight" in part
    assert "Left out: headers, bold (no two answers that met differ in it)." in part
    # the box stays ticked in the builder, so the link reproduces the report
    if not page.is_visible("#builder input[name=style_control]"):
        page.click("#builder-box > summary")
    assert page.is_checked("#builder input[name=style_control]")
