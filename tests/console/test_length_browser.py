"""The scores-by-length page in Chromium, as a researcher of a project other
than the default: from the benchmark report's button to the page, its
figure, and its CSV download, on RULER made at 1K and 2K tokens and
answered (right at 1K, wrong at 2K) in that project."""

from __future__ import annotations

import csv
import json

import pytest
from django.core.management import call_command

from corpus.models import Dataset, QuestionText
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator
from tests.browsing import sign_in
from users.models import Project

pytestmark = pytest.mark.browser


def test_the_length_page_from_the_report_to_its_csv(
    browser, live_server, team_researcher, tmp_path
):
    call_command(
        "make_ruler", "--output", str(tmp_path / "ruler"), "--tasks", "niah_multikey_3",
        "--lengths", "1024,2048", "--samples", "4", "--import", stdout=None,
    )  # fmt: skip
    records = [
        {"system": "mine", "task": t.dataset.task, "response": t.reference_answer
         if t.dataset.task.endswith("-1024") else "no idea",
         "document_id": t.question.document.external_id, "question_id": t.question.external_id}
        for t in QuestionText.objects.select_related("dataset", "question__document")
    ]  # fmt: skip
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(answers), "--benchmark", "ruler", "--split", "validation",
        "--project", "team-b", stdout=None,
    )  # fmt: skip
    ensure_metric_evaluators()
    metric = Evaluator.objects.get(name="metric: ruler.string_match_all")
    team = Project.objects.get(slug="team-b")
    for dataset in Dataset.objects.filter(benchmark__slug="ruler"):
        judge_run(create_judging_run(metric, dataset, "st", project=team).pk)

    page = sign_in(browser, live_server, path="/analysis/benchmark/ruler/?split=validation")
    page.click("#by-length")
    page.wait_for_selector("#length-scores")
    assert "RULER's `length`" in page.inner_text("main")
    rows = page.locator("#length-scores tbody tr").all_inner_texts()
    assert len(rows) == 2 and "1024" in rows[0] and "100.00" in rows[0]
    assert "2048" in rows[1] and "0.00" in rows[1]
    (effective,) = page.locator("#effective-length tbody tr").all_inner_texts()
    assert effective.split("\t")[2:] == ["100.00", "90.00", effective.split("\t")[4], "2048"]
    assert 900 < int(effective.split("\t")[4]) <= 1024  # the longest line made at 1K
    page.wait_for_function(  # the figure, drawn for the page's request, shows
        "() => { const img = document.querySelector('#by-length-figure');"
        " return img.complete && img.naturalWidth > 0; }",
        timeout=60_000,
    )
    with page.expect_download() as download:
        page.click("a[data-format=csv]")
    table = list(csv.DictReader(download.value.path().open(encoding="utf-8")))
    assert [(r["bucket"], float(r["mean"])) for r in table] == [("1024", 100.0), ("2048", 0.0)]
