"""The walk that once moved the reference, in Chromium: a researcher opens
the report, creates a gold study of the responses the judges disagree on
most, opens it, an expert rates it, and the researcher reloads the same
report. The reference stays the evaluator covering the whole selection and
the report says which it is; PPI on the picked items is weighted by their
inclusion probabilities; a crowd participant who failed the attention check
is out by default and listed as such."""

from __future__ import annotations

import re

import pytest

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment
from annotator.models import Study
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.models import Judgment
from tests.annotator.conftest import make_study, rate_as_a_person
from tests.browsing import create_study_from_report, sign_in
from users.models import User

pytestmark = pytest.mark.browser


def test_a_disagreement_picked_study_never_moves_the_reference(
    browser, live_server, transactional_db, tmp_path, django_user_model
):
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    django_user_model.objects.create_user("rita", password="pw-rita-123", role="researcher")
    django_user_model.objects.create_user("gina", password="pw-gina-123", role="gold_annotator")
    gold = dict(
        Judgment.objects.filter(evaluator__name="gold-human-eval").values_list(
            "response_id", "score"
        )
    )
    # a crowd study with attention checks: one careful rater, one who fails the checks
    crowd = make_study(
        name="Crowd with checks", raters=3, attention_checks=True, failed_attention_code="NOPE42"
    )
    careful = check_start_assignment(crowd, pid="CAREFUL")
    rate_as_a_person(
        careful,
        lambda item: item.expected_min if item.kind == "attention" else int(gold[item.response_id]),
        seconds=300,
    )
    check_complete_assignment(careful)
    careless = check_start_assignment(crowd, pid="CARELESS")
    rate_as_a_person(careless, lambda item: 1 if item.kind == "attention" else 5, seconds=300)
    assert check_complete_assignment(careless) == "NOPE42"

    # 1. the report as it opens: the reference, in words
    page = sign_in(browser, live_server, path="/analysis/report/")
    page.wait_for_selector("#scope")
    report_url = page.url
    assert "gold-human-eval: 36 of 36 responses" in page.inner_text("#scope")
    left_out = page.inner_text("#raters-left-out")
    assert "CARELESS" in left_out and "failed an attention check" in left_out
    assert "never counts" in left_out and "CAREFUL" not in left_out

    # 2. a gold study of the 8 responses the judges disagree on most, from the report
    create_study_from_report(
        page,
        count=8,
        method="disagreement",
        kind="gold",
        name="Second expert on disputed answers",
        raters=1,
    )
    study = Study.objects.get(name="Second expert on disputed answers")
    assert study.sampling == "disagreement" and study.inclusion_probabilities.count() == 36
    # this expert is quick by design; the test is about the report, not the speed flag
    Study.objects.filter(pk=study.pk).update(min_median_seconds=0)
    # the expert who will rate it (assigned on the study's API or admin page; tests/users)
    study.gold_annotators.add(User.objects.get(username="gina"))
    page.goto(f"{live_server.url}/console/studies/{study.pk}/")
    page.click("#open-study")
    page.wait_for_selector("#pause-study")

    # 3. the expert rates the 8 items
    expert = sign_in(browser, live_server, "gina", "pw-gina-123", path="/gold/")
    expert.wait_for_url(re.compile(r"/gold/$"))
    expert.click("button:has-text('Start')")
    expert.wait_for_url(re.compile(r"/item/1/$"))
    for position, score in enumerate("35786492", 1):  # not one score everywhere
        expert.keyboard.press(score)
        expert.wait_for_selector(f"#status:has-text('Saved: {score}')")
        expert.keyboard.press("Enter")
        expert.wait_for_url(
            re.compile(r"/finish/$" if position == 8 else rf"/item/{position + 1}/$")
        )
    expert.click("#finish")
    expert.wait_for_selector("text=Your gold ratings are saved")
    study.refresh_from_db()
    evaluator = study.evaluator.name
    assert Judgment.objects.filter(evaluator__name=evaluator).count() == 8

    # 4. the same report again: the reference stays, and says so
    page.goto(report_url)
    page.wait_for_selector("#scope")
    scope = page.inner_text("#scope")
    assert "gold-human-eval: 36 of 36 responses" in scope
    assert "the human evaluator scoring the most responses of the selection" in scope
    assert evaluator in page.inner_text("#trust + p")  # a human evaluator now, not the reference
    assert page.locator("#answer li").count() >= 1

    # 5. PPI on the picked items: weighted by their inclusion probabilities
    page.click("#builder-box > summary")  # the builder, folded under the answer
    page.locator("#builder select[name=ppi_labels]").select_option(evaluator)
    page.locator("#builder button[type=submit]").click()
    page.wait_for_selector("#ppi")
    assert "ppi_labels=" in page.url
    assert "weighted by 1 / its inclusion probability" in page.inner_text("#ppi ~ p")
    # and the failed-check participant is still out by default
    assert "CARELESS" in page.inner_text("#raters-left-out")
