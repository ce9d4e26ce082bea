"""The report as a member of two projects reads it, in Chromium, from the
console only: the console's report link opens the report of the project that
holds the data (not a 400 asking which), the page has the console's
navigation and an export link for each format of the selection shown, and
the builder has a project field. A selection that names no project (an old
bookmark) is refused with the same field, set to the data's project."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from analysis.report.query import data_project
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.models import HUMAN_KINDS
from tests.browsing import sign_in
from users.models import Membership, Project, User, default_project

pytestmark = pytest.mark.browser


def two_project_researcher(tmp_path) -> User:
    """The synthetic meetings in the default project, an empty "team-b", and
    "rita", a researcher of both."""
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    team_b = Project.objects.create(name="Team B", slug="team-b")
    rita = User.objects.create_user("rita", password="pw-rita-123", role="researcher")
    rita.memberships.all().delete()
    Membership.objects.create(project=default_project(), user=rita, role="researcher")
    Membership.objects.create(project=team_b, user=rita, role="researcher")
    return rita


def test_a_member_of_two_projects_opens_and_exports_the_report_from_the_console(
    browser, live_server, transactional_db, tmp_path
):
    rita = two_project_researcher(tmp_path)
    data = default_project().slug
    assert data_project(rita) == data  # the project with the responses, not the first by name

    page = sign_in(browser, live_server, path="/console/")
    page.wait_for_selector("#reports-title")
    # 1. the console's report link names the project and opens the report
    page.click("#reports-title ~ p a[data-format=html] >> nth=0")
    page.wait_for_selector("#scope")
    assert parse_qs(urlsplit(page.url).query)["project"] == [data]
    assert "36 responses" in page.inner_text("#scope")
    # the builder offers both projects, the report's chosen
    options = page.locator("#builder-project option")  # in the closed builder box
    assert sorted(options.all_text_contents()) == sorted([default_project().name, "Team B"])
    assert page.locator("#builder-project").input_value() == data

    # 2. an export of the selection shown, by its link on the page
    assert page.locator("#report-exports a.export").all_inner_texts() == [
        "JSON",
        "CSV (long)",
        "CSV (wide)",
        "LaTeX",
    ]
    with page.expect_download() as download:
        page.click("#report-exports a:has-text('JSON')")
    exported = json.loads(Path(download.value.path()).read_text())
    assert exported["stamp"]["selection"]["project"] == data
    assert exported["counts"]["responses"] == 36

    # 3. the console's navigation, here as on every console page
    assert page.locator("#report-topbar a[aria-current=page]").inner_text() == "Report"
    page.click("#report-topbar a:has-text('Runs')")
    page.wait_for_url(re.compile(r"/console/runs/$"))
    # and back by the nav's Report link (no selection): the data's project again
    page.click("nav a:has-text('Report')")
    page.wait_for_selector("#scope")
    assert parse_qs(urlsplit(page.url).query)["project"] == [data]

    # 4. a selection naming no project: refused with the project field to choose it
    answer = page.goto(f"{live_server.url}/analysis/report/?split=test2&mode=st")
    assert answer.status == 400
    assert "project: name one of yours" in page.inner_text("#refusal")
    assert page.locator("#builder-project").input_value() == data
    page.click("#builder button[type=submit]")
    page.wait_for_selector("#scope")
    assert parse_qs(urlsplit(page.url).query)["project"] == [data]


def test_the_builder_offers_only_human_evaluators_as_the_humans(researcher_client, two_meetings):
    answer = researcher_client.get("/analysis/report/", follow=True)
    assert answer.status_code == 200, answer.content[:500]
    builder = answer.context["builder"]
    kinds = builder["evaluator_kinds"]
    assert builder["human_names"]
    assert {kinds[name] for name in builder["human_names"]} <= set(HUMAN_KINDS)
    # an LLM judge or a metric is offered as a judge only
    machine = [name for name, kind in kinds.items() if kind not in HUMAN_KINDS]
    assert machine and set(machine) <= set(builder["judge_names"])
    assert not set(machine) & set(builder["human_names"])
    # one project: no project field
    assert builder["projects"] == []


def test_the_builder_offers_the_systems_of_the_setting_with_their_counts(
    researcher_client, two_meetings
):
    setting = {"split": "test2", "mode": "st", "dataset_version": "qa"}
    builder = researcher_client.get("/analysis/report/", setting).context["builder"]
    assert builder["system_responses"] == {
        "Synthetic-Echo": 12,
        "Synthetic-Hedge": 12,
        "Synthetic-Terse": 12,
    }
    assert builder["systems"] == sorted(builder["system_responses"])
    # a setting that holds nothing offers no system, and says why
    answer = researcher_client.get("/analysis/report/", setting | {"language": "cs"})
    assert answer.context["builder"]["systems"] == []
    assert "No system has responses in this setting" in answer.content.decode()
    # the splits offered are the chosen benchmark's
    other = researcher_client.get("/analysis/report/", setting | {"benchmark": "no-such"})
    assert [o.value for o in other.context["builder"]["splits"]] == [""]
