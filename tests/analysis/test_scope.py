"""What a report covers is explicit: a bad parameter is a 400 that says what
is valid, the bare report URL is the default selection stated in full (the
same link from the nav bar, the console and the demo), a judging run's link
compares its judge with the default reference, every format opens with the
selection and the reference's coverage, and raters flagged by quality
control are left out by default (listed, with a switch) while raters given
the failed-check code never count."""

from __future__ import annotations

import html
import io
import json
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import CommandError, call_command

from analysis.report.build import build_report
from analysis.report.links import default_report_url, judging_run_selection, report_url
from analysis.report.scope import default_selection
from analysis.report.selection import Selection
from annotator.actions.arrival import check_start_assignment
from annotator.actions.participants import check_exclude_participant, check_reinstate_participant
from annotator.actions.rating import check_complete_assignment
from annotator.models import Participant
from annotator.selectors import task_loads
from judging.judging_runs import create_judging_run, ensure_metric_evaluators
from judging.models import Evaluator, Judgment
from tests.analysis.report_csv import preamble_and_rows
from tests.annotator.conftest import make_study, rate_as_a_person

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"split": "foo"}, "split 'foo': choose from test2."),
        ({"study": "999"}, "study 999: no such study; choose from none stored."),
        ({"language": "xx"}, "language 'xx': choose from en, cs."),
        ({"benchmark": "nope"}, "benchmark 'nope': choose from elitr-bench."),
        ({"systems": "GPT-9"}, "systems: unknown system(s) 'GPT-9'; choose from Synthetic-Echo"),
        (
            {"splti": "test2"},
            "unknown parameter(s) 'splti'; the report takes project, dataset_version",
        ),
        ({"reference": "nobody"}, "reference: unknown evaluator(s) nobody."),
        ({"include_flagged": "maybe"}, "include_flagged 'maybe': give 1"),
        ({"length_control": "maybe"}, "length_control 'maybe': give 1"),
        ({"style_control": "maybe"}, "style_control 'maybe': give 1"),
        (
            {"judges": "gpt-4-eval", "humans": "gpt-4-eval"},
            "gpt-4-eval: a judge or a human evaluator, not both.",
        ),
    ],
)
def test_bad_parameters_are_a_400_that_says_what_is_valid(
    two_meetings, researcher_client, query, words
):
    page = researcher_client.get("/analysis/report/", query)
    assert page.status_code == 400
    text = html.unescape(page.content.decode())
    assert words in text and 'id="builder"' in text  # the builder, to correct it
    assert "Agreement report" not in text  # never an empty report
    answer = researcher_client.get("/api/reports/agreement/", query)
    assert answer.status_code == 400 and words in answer.json()["detail"]


def test_the_bare_url_is_the_default_selection_stated_in_full(two_meetings, researcher_client):
    answer = researcher_client.get("/analysis/report/")
    assert answer.status_code == 302
    location = answer["Location"]
    # the reader's project is stated too (his only one)
    assert location == default_report_url().replace("?", "?project=default&", 1)
    query = parse_qs(urlsplit(location).query)
    assert query == {
        "project": ["default"],
        "benchmark": ["elitr-bench"],
        "dataset_version": ["qa"],
        "split": ["test2"],
        "mode": ["st"],
        "language": ["en"],
        "systems": ["Synthetic-Echo,Synthetic-Hedge,Synthetic-Terse"],
    }
    page = researcher_client.get(location)
    assert page.status_code == 200
    text = page.content.decode()
    assert "gold-human-eval: 36 of 36 responses" in text and 'id="builder"' in text
    # the nav bar and the console point at the same report
    console = researcher_client.get("/console/").content.decode()
    assert f'href="{html.escape(location)}"' in console or f'href="{location}"' in console
    assert 'href="/analysis/report/">Report</a>' in console


def test_another_projects_bare_url_names_none_of_the_default_projects_data(
    two_meetings, client, django_user_model
):
    """The default selection is chosen among the reader's project's responses:
    chosen among every project's, it named another project's systems (and
    their setting) in the link it redirects to."""
    from users.models import Membership, Project

    make_study(name="Default-only pilot")  # the default project's
    Evaluator.objects.create(name="panel-of-default", kind="imported")  # the default project's
    outsider = django_user_model.objects.create_user(
        "olga", password="pw-olga-123", role="researcher"
    )
    lab = Project.objects.create(slug="lab", name="Lab")
    Membership.objects.create(project=lab, user=outsider, role="researcher")
    Membership.objects.filter(user=outsider).exclude(project=lab).delete()
    client.force_login(outsider)
    answer = client.get("/analysis/report/")
    assert answer.status_code == 302
    location = answer["Location"]
    assert parse_qs(urlsplit(location).query) == {"project": ["lab"], "language": ["en"]}
    assert "Synthetic" not in location
    page = client.get(location).content.decode()
    # the builder offers the shared systems (the release's), not the other project's study
    # or evaluator
    assert "Synthetic-Echo" in page
    assert "Default-only pilot" not in page and "panel-of-default" not in page
    # nor does the console's home offer the default project's setting as the lab's
    home = client.get("/console/").content.decode()
    assert "Where the human scores are" not in home and "test2" not in home
    # the command: --project alone is that project's default selection
    out = io.StringIO()
    call_command(
        "agreement_report", "--format", "json", "--output", "-", "--project", "lab", stdout=out
    )
    assert json.loads(out.getvalue())["stamp"]["selection"]["systems"] == []
    out = io.StringIO()
    call_command(
        "agreement_report", "--format", "json", "--output", "-", "--project", "default", stdout=out
    )
    stated = json.loads(out.getvalue())["stamp"]["selection"]
    assert stated["project"] == "default" and stated["split"] == "test2"
    assert stated["systems"] == ["Synthetic-Echo", "Synthetic-Hedge", "Synthetic-Terse"]
    with pytest.raises(CommandError, match="project 'nowhere': no such project"):
        call_command("agreement_report", "--output", "-", "--project", "nowhere")


def test_the_default_on_the_paper_data_is_its_human_evaluation(elitr_data):
    from judging.importing import import_elitr_bench

    import_elitr_bench(elitr_data, with_responses=True, languages=("en",))
    default = default_selection()
    assert default == Selection(
        benchmark="elitr-bench",
        dataset_version="qa",
        split="test2",
        mode="st",
        language="en",
        systems=("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"),
    )
    from demo.setup import DemoSetup

    assert DemoSetup("x", None, "admin", "pw").report_path == report_url(default)


def test_a_judging_runs_link_compares_its_judge_with_the_default_reference(
    two_meetings, researcher_client
):
    ensure_metric_evaluators()
    evaluator = Evaluator.objects.get(name="metric: rouge")
    from corpus.models import Dataset

    run = create_judging_run(
        evaluator, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    selection = judging_run_selection(run)
    assert selection.judges == ("metric: rouge",)
    report = build_report(selection)  # the run has not run: no rouge scores yet
    assert report.scope.reference == "gold-human-eval"  # not "no gold in the selection"
    assert set(report.evaluators) == {"gold-human-eval", "silver-human-eval"}
    page = researcher_client.get(f"/console/runs/judging/{run.pk}/")
    assert html.escape(report_url(selection)) in page.content.decode()


def test_every_format_opens_with_the_selection_and_the_reference(two_meetings, tmp_path):
    out = tmp_path / "r"
    for fmt in ("csv", "csv-wide", "latex", "json", "html"):
        call_command("agreement_report", "--format", fmt, "--output", str(out), "--split", "test2")
        text = out.read_text()
        if fmt.startswith("csv"):
            preamble, rows = preamble_and_rows(text)
            assert preamble[1] == "# selection: split=test2&language=en"
            assert preamble[3].startswith("# reference: gold-human-eval: 36 of 36 responses")
            assert preamble[4] == "# raters left out: none" and rows
        elif fmt == "latex":
            assert any(
                line.startswith("% reference: gold-human-eval: 36 of 36 responses")
                for line in text.splitlines()[:6]
            )
        elif fmt == "json":
            scope = json.loads(text)["scope"]
            assert scope["reference_coverage"] == "gold-human-eval: 36 of 36 responses"
            assert list(json.loads(text))[:3] == ["schema_version", "stamp", "scope"]
        else:
            assert text.index("gold-human-eval: 36 of 36 responses") < text.index("Judge trust")


def gold_score(item) -> int:
    return int(
        Judgment.objects.get(evaluator__name="gold-human-eval", response_id=item.response_id).score
    )


def test_flagged_raters_are_left_out_by_default_and_listed(two_meetings):
    study = make_study(raters=3, gold_evaluator=Evaluator.objects.get(name="gold-human-eval"))
    careful = check_start_assignment(study, pid="CAREFUL")
    rate_as_a_person(careful, gold_score, seconds=300)
    check_complete_assignment(careful)
    hasty = check_start_assignment(study, pid="HASTY")
    rate_as_a_person(hasty, lambda item: 1 + item.pk % 10, seconds=0.3)  # 0.3 s per item
    check_complete_assignment(hasty)
    hasty.participant.refresh_from_db()
    assert hasty.participant.flagged and hasty.participant.status == "accepted"
    crowd = "crowd human (Crowd pilot)"
    report = build_report(Selection(study=study.pk))
    assert report.counts.raters[crowd] == 1  # CAREFUL only
    [left] = report.scope.raters
    assert (left.rater, left.status, left.counted, left.ratings) == ("HASTY", "flagged", False, 18)
    assert left.reason.startswith("flagged by quality control: median 0.3 s per item")
    assert "1 rater(s) left out" in report.scope.statement
    counted = build_report(Selection(study=study.pk, include_flagged=True))
    assert counted.counts.raters[crowd] == 2
    assert counted.scope.raters[0].counted
    assert counted.stamp.data_sha256 != report.stamp.data_sha256  # the data read differ


def test_a_failed_check_never_counts_and_is_never_accepted(two_meetings, researcher_client):
    study = make_study(
        name="Checked", raters=3, attention_checks=True, failed_attention_code="FAIL99"
    )
    rater = check_start_assignment(study, pid="CARELESS")
    rate_as_a_person(rater, lambda item: 1 if item.kind == "attention" else gold_score(item), 300)
    code = check_complete_assignment(rater)
    assert code == "FAIL99"
    participant = Participant.objects.get(pk=rater.participant_id)
    assert participant.status == Participant.Status.FAILED_CHECK
    assert participant.get_status_display() == "Failed a check (given the failed-check code)"
    assert not Judgment.objects.filter(rater="CARELESS").exists()
    # not even with include_flagged
    report = build_report(Selection(study=study.pk, include_flagged=True))
    [entry] = report.scope.raters
    assert entry.status == "failed_check" and not entry.counted
    assert "failed an attention check (given the failed-check code): never counts" in entry.reason
    # nobody can reinstate or exclude them; the console says so
    assert not check_reinstate_participant(participant, None, "looks fine")
    assert not check_exclude_participant(participant, None, "again")
    monitor = researcher_client.get(f"/console/studies/{study.pk}/").content.decode()
    assert "Failed a check (given the failed-check code)" in monitor
    assert "never counts" in monitor
    # their place is free for a replacement
    assert task_loads(study)[rater.task_id] == 0


def test_a_system_named_with_a_comma_is_selected_whole(two_meetings, researcher_client):
    """`systems=` split every value at its commas: a system named "Echo, large"
    could not be selected. A comma inside a name is written `\\,` in a link
    and a command, and the builder's checkboxes send it so."""
    import re

    from analysis.report.selection import Selection, join_names, split_names
    from generation.models import System

    System.objects.filter(name="Synthetic-Echo").update(name="Echo, large")
    assert split_names(join_names(["Echo, large", "a\\b", "x"])) == ["Echo, large", "a\\b", "x"]
    for query in (
        {"split": "test2", "mode": "st", "systems": "Echo\\, large"},  # a link
        {"split": "test2", "mode": "st", "systems": ["Echo\\, large"]},  # one checkbox
    ):
        answer = researcher_client.get("/api/reports/agreement/", query)
        assert answer.status_code == 200, answer.content
        systems = answer.json()["stamp"]["selection"]["systems"]
        assert systems == ["Echo, large"], systems
    # the page's links and its builder say it the same way
    page = html.unescape(researcher_client.get("/analysis/report/", query).content.decode())
    assert 'name="systems" value="Echo\\, large" checked' in page
    assert re.search(r"systems=Echo%5C%2C(\+|%20)large", researcher_client.get(
        "/analysis/report/", query).content.decode())  # fmt: skip
    assert Selection(systems=("Echo, large",)).query()["systems"] == "Echo\\, large"
