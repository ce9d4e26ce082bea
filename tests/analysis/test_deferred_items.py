"""What a deferring judge leaves to humans, made a study in one step (the
planner's method "deferred"): the responses whose spread exceeds the judge's
threshold for the target agreement, the most uncertain first; recorded as
"deferred" sampling with no inclusion probability, so that PPI never reads
them as a random sample. From the command, the API and the report page in
Chromium."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from analysis.planning.items_for_humans import create_study
from analysis.report.build import build_report
from analysis.report.deferral import deferred_spreads
from analysis.report.scope import resolve
from analysis.report.scores import response_scores
from analysis.report.selection import Selection, SelectionError
from annotator.models import InclusionProbability, Study
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.models import Evaluator
from tests.browsing import sign_in
from users.models import User

SELECTION = Selection(dataset_version="qa", split="test2", mode="st")
# a guarantee by meeting needs 7 calibration meetings: 13 labelled or more
MEETINGS = 14


@pytest.fixture
def fourteen_meetings(tmp_path, db):
    import_elitr_bench(
        write_synthetic_elitr(tmp_path / "data", meetings=MEETINGS), with_responses=True
    )


def make_panel() -> None:
    """A panel of the two judges: its confidence is their spread."""
    Evaluator.objects.create(
        name="panel",
        kind="panel",
        config={"members": ["gpt-4-eval", "prometheus-eval"], "rule": "mean"},
    )


def spreads(alpha: float = 0.2):
    scope = resolve(SELECTION)
    rs = response_scores(scope.table)
    wide = rs.pivot(index="response_id", columns="evaluator", values="score")
    wide.columns = [str(c) for c in wide.columns]
    return deferred_spreads(scope, rs, wide, "panel", alpha)


@pytest.mark.django_db
def test_the_study_rates_the_most_uncertain_of_what_the_judge_defers(fourteen_meetings, researcher):
    make_panel()
    deferred = spreads()
    report = build_report(SELECTION)
    level = next(x for x in report.deferral["panel"].levels if x.alpha == 0.2)
    assert len(deferred) == level.deferred  # the report's count, response by response
    study = create_study(
        SELECTION,
        method="deferred",
        count=5,
        kind="gold",
        name="What the panel leaves to us",
        raters_per_task=1,
        actor=researcher,
        judge="panel",
        alpha=0.2,
    )
    # the five largest spreads (ties: the smaller id)
    ranked = sorted(deferred.items(), key=lambda item: (-item[1], item[0]))[:5]
    assert sorted(study.responses.values_list("pk", flat=True)) == sorted(r for r, _ in ranked)
    assert len(deferred) > 5
    assert study.sampling == Study.Sampling.DEFERRED
    assert not InclusionProbability.objects.filter(study=study).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("judge", "alpha", "message"),
    [
        ("nobody", 0.2, "judge 'nobody': choose one of the selection's judges"),
        ("gpt-4-eval", 0.2, "no confidence signal"),
        ("panel", 0.25, "alpha 0.25: choose from 0.1, 0.2, 0.3"),
    ],
)
def test_a_judge_that_cannot_defer_is_refused_and_nothing_is_made(
    fourteen_meetings, researcher, judge, alpha, message
):
    make_panel()
    with pytest.raises(SelectionError, match=message):
        create_study(
            SELECTION,
            method="deferred",
            count=5,
            kind="gold",
            name="Refused",
            raters_per_task=1,
            actor=researcher,
            judge=judge,
            alpha=alpha,
        )
    assert not Study.objects.exists()


@pytest.mark.django_db
def test_the_api_takes_the_judge_and_the_target(fourteen_meetings, researcher):
    make_panel()
    client = APIClient()
    client.force_authenticate(researcher)
    answer = client.post(
        "/api/reports/select-items/",
        {
            "method": "deferred",
            "count": 4,
            "kind": "gold",
            "name": "Deferred by API",
            "judge": "panel",
            "alpha": 0.1,
            "dataset_version": "qa",
            "split": "test2",
            "mode": "st",
        },
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["method"] == "deferred" and len(answer.json()["responses"]) == 4


@pytest.mark.browser
def test_a_researcher_sends_the_panels_abstentions_to_an_expert(
    browser, live_server, transactional_db, tmp_path
):
    import_elitr_bench(
        write_synthetic_elitr(tmp_path / "data", meetings=MEETINGS), with_responses=True
    )
    User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    make_panel()
    page = sign_in(
        browser, live_server, path="/analysis/report/?dataset_version=qa&split=test2&mode=st"
    )
    page.wait_for_selector("#select-items")
    form = page.locator("#select-items")
    form.locator("input[name=count]").fill("3")
    form.locator("select[name=method]").select_option("deferred")
    form.locator("select[name=judge]").select_option("panel")
    form.locator("select[name=alpha]").select_option("0.2")
    form.locator("select[name=kind]").select_option("gold")
    form.locator("input[name=name]").fill("The panel's abstentions")
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#created")
    study = Study.objects.get(name="The panel's abstentions")
    assert study.sampling == "deferred" and study.responses.count() == 3
    assert "deferred" in page.inner_text("#created")
