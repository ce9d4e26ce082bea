"""The leaderboard files from a run's page, in Chromium, as a researcher of a
project other than the default: an L-Eval run downloads as its
`<task>.pred.jsonl`, a ZeroSCROLLS run as the submission CSV of its system's
ten tasks, a LooGLE run as the Output file its authors published; a run short
of an answer stays on its page, which says why."""

from __future__ import annotations

import json

import pytest

from generation.models import GenerationRun, Response
from tests.browsing import sign_in
from tests.generation.test_loogle import import_published as import_loogle
from tests.judging.test_leaderboard_exports import (
    EXPECTED,
    import_published,
    import_zeroscrolls,
    safe_read_csv,
    verify,
)
from tests.judging.test_loogle_metrics import DATA

pytestmark = pytest.mark.browser


def test_the_run_page_downloads_the_leaderboard_files(
    browser, live_server, team_researcher, tmp_path
):
    excerpt = next(e["file"] for e in EXPECTED["excerpts"] if "codeU" in e["file"])
    leval, lines, key = import_published(tmp_path / "leval", excerpt, project="team-b")
    truth = import_zeroscrolls(tmp_path / "zs", project="team-b")
    page = sign_in(browser, live_server, path=f"/console/runs/generation/{leval.pk}/")
    link = page.locator("a[data-leaderboard-file]")
    assert link.inner_text() == "L-Eval predictions (codeU.pred.jsonl)"
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == "codeU.pred.jsonl"
    text = download.value.path().read_text(encoding="utf-8")
    got = [json.loads(line) for line in text.splitlines()]
    assert [g["gpt4-32k_pred"] for g in got] == [line[key] for line in lines]

    qasper = GenerationRun.objects.get(dataset__task="qasper")
    page.goto(f"{live_server.url}/console/runs/generation/{qasper.pk}/")
    with page.expect_download() as download:
        page.click("a:has-text('ZeroSCROLLS submission')")
    assert download.value.suggested_filename == "zero_scrolls_predictions.csv"
    table = safe_read_csv(download.value.path())
    verify(table, truth)
    assert dict(zip(table.ID, table.Prediction, strict=True)) == {
        i: p for answers in truth.values() for i, p in answers.items()
    }

    # an answer missing: the page stays, with the reason
    Response.objects.filter(run=leval).order_by("pk").first().delete()
    page.goto(f"{live_server.url}/console/runs/generation/{leval.pk}/")
    page.click("a[data-leaderboard-file]")
    page.wait_for_selector("#messages")
    assert "has answered 14 of 15 questions" in page.inner_text("#messages")
    assert page.url.endswith(f"/console/runs/generation/{leval.pk}/")


def test_a_loogle_run_downloads_as_the_file_its_authors_published(
    browser, live_server, team_researcher, tmp_path
):
    published = DATA / "Output" / "shortdep_qa_gpt-3.5-turbo-16k.jsonl"
    run, lines = import_loogle(tmp_path / "loogle", published, project="team-b")
    page = sign_in(browser, live_server, path=f"/console/runs/generation/{run.pk}/")
    link = page.locator("a[data-leaderboard-file]")
    assert link.inner_text().startswith("LooGLE predictions (shortdep_qa_<model>.jsonl")
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == published.name
    text = download.value.path().read_text(encoding="utf-8")
    assert [json.loads(line) for line in text.splitlines()] == lines
