"""A crowd's rater-model labels as the report's reference, in Chromium: a
researcher ticks Rater models in the builder, finds the crowd's
"crowd:offsets" among the references offered, builds the report with it,
and reads the judges against the offset-corrected scores."""

from __future__ import annotations

import pytest

from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.models import Evaluator, Judgment
from tests.browsing import sign_in
from users.models import User

pytestmark = pytest.mark.browser


def test_a_researcher_takes_the_crowds_offset_corrected_scores_as_the_reference(
    browser, live_server, transactional_db, tmp_path
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    gold = dict(
        Judgment.objects.filter(evaluator__name="gold-human-eval").values_list(
            "response_id", "score"
        )
    )
    crowd = Evaluator.objects.create(name="crowd", kind="crowd_human")
    Judgment.objects.bulk_create(
        Judgment(
            evaluator=crowd,
            response_id=response,
            rater=rater,
            score=min(10.0, max(1.0, value + shift)),
            raw_score=min(10.0, max(1.0, value + shift)),
            raw_scale_min=1,
            raw_scale_max=10,
        )
        for response, value in gold.items()
        for rater, shift in (("fair", 0), ("harsh", -3), ("kind", 2))
    )
    page = sign_in(browser, live_server, path="/analysis/report/")
    # a report with rater models fits crowd-kit's three models: about 10 s on an
    # idle 2-core machine, and it passed Playwright's 30 s once under the
    # parallel suite's load (speed is the benchmarks' business, not this test's)
    page.set_default_timeout(120_000)
    page.wait_for_selector("#scope")
    reference = page.locator("#builder select[name=reference]")
    assert "crowd:offsets" not in reference.inner_text()  # not before the models are fitted
    page.click("#builder-box > summary")
    page.check("#builder input[name=rater_models]")
    page.click("#builder button[type=submit]")
    page.wait_for_selector("#aggregate-evaluators")
    assert "crowd:offsets" in page.inner_text("#aggregate-evaluators")
    if not page.is_visible("#builder select[name=reference]"):
        page.click("#builder-box > summary")
    page.select_option("#builder select[name=reference]", "crowd:offsets")
    page.click("#builder button[type=submit]")
    page.wait_for_selector("#scope")
    assert "reference=crowd%3Aoffsets" in page.url or "reference=crowd:offsets" in page.url
    assert "crowd:offsets" in page.inner_text("#scope")
    assert page.input_value("#builder select[name=reference]") == "crowd:offsets"
