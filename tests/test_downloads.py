"""The names of downloaded files: what they hold, their format and their day,
safe whatever a study is called (core.downloads and its callers)."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from analysis.report.exports import report_filename
from analysis.report.selection import Selection
from annotator.models import Study
from core.downloads import as_attachment, export_filename
from generation.models import GenerationRun
from judging.exports import file_name
from tests.annotator.conftest import make_study

DAY = date(2026, 11, 25)
SAFE_NAME = re.compile(r"^concord-[a-z0-9_-]+-\d{4}-\d{2}-\d{2}\.(csv|json|tex|html)$")


def test_a_name_says_subject_format_and_day():
    assert export_filename("report qa test2 st", "csv", DAY) == (
        "concord-report-qa-test2-st-2026-11-25.csv"
    )
    assert export_filename("report qa test2 st", "csv-wide", DAY) == (
        "concord-report-qa-test2-st-wide-2026-11-25.csv"
    )
    assert export_filename("Report", "latex", DAY) == "concord-report-2026-11-25.tex"
    assert export_filename("report", "json", DAY).endswith(".json")


@pytest.mark.parametrize(
    "subject",
    [
        '../../etc/"passwd"',
        "ratings ..\\..\\boot.ini",
        'a "quoted" name; filename="evil.exe"',
        "line\r\nContent-Type: text/html",
        "tab\tnul\x00bell\x07",
        "ratings <script>alert(1)</script>",
        "C:\\Windows\\system32",
    ],
)
def test_names_from_strangers_carry_no_quote_path_or_control_character(subject):
    name = export_filename(subject, "csv", DAY)
    assert SAFE_NAME.match(name), name
    assert name.count(".") == 1 and "/" not in name and "\\" not in name and '"' not in name


def test_accents_fold_to_ascii_and_other_scripts_fall_back():
    assert export_filename("Étude pilote — été", "csv", DAY) == (
        "concord-etude-pilote-ete-2026-11-25.csv"
    )
    assert export_filename("研究", "csv", DAY) == "concord-export-2026-11-25.csv"
    long = export_filename("x" * 500, "csv", DAY)
    assert len(long) == len("concord--2026-11-25.csv") + 80


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="choose from csv, csv-wide"):
        export_filename("report", "xlsx", DAY)


def test_the_header_names_the_file():
    response = as_attachment(HttpResponse("a,b"), "concord-report-2026-11-25.csv")
    assert response["Content-Disposition"] == (
        'attachment; filename="concord-report-2026-11-25.csv"'
    )


@pytest.mark.django_db
def test_a_report_is_named_after_its_selection_or_its_study(two_meetings):
    selection = Selection.from_options({"dataset_version": "qa", "split": "test2", "mode": "st"})
    assert report_filename(selection, "csv", DAY) == "concord-report-qa-test2-st-2026-11-25.csv"
    czech = Selection.from_options({"split": "dev", "language": "cs"})
    assert report_filename(czech, "json", DAY) == "concord-report-dev-cs-2026-11-25.json"
    assert report_filename(Selection(), "latex", DAY) == "concord-report-all-2026-11-25.tex"
    study = make_study(name='Pilot "A"/B')
    by_study = Selection(study=study.pk)
    assert report_filename(by_study, "csv-wide", DAY) == (
        "concord-report-pilot-ab-wide-2026-11-25.csv"
    )
    Study.objects.filter(pk=study.pk).update(name="研究")
    assert report_filename(by_study, "csv", DAY) == (
        f"concord-report-study-{study.pk}-2026-11-25.csv"
    )


@pytest.mark.django_db
def test_study_exports_are_named_after_the_study(two_meetings, researcher, client):
    study = make_study(name="Crowd pilot / week 2")
    today = timezone.localdate().isoformat()
    api = APIClient()
    api.force_login(researcher)
    tidy = api.get(f"/api/studies/{study.pk}/export/tidy/")
    assert tidy["Content-Disposition"] == (
        f'attachment; filename="concord-ratings-crowd-pilot-week-2-{today}.csv"'
    )
    wide = api.get(f"/api/studies/{study.pk}/export/wide/")
    assert wide["Content-Disposition"] == (
        f'attachment; filename="concord-ratings-crowd-pilot-week-2-wide-{today}.csv"'
    )
    # the admin's actions: one study by its name, several by their number
    researcher.is_staff = researcher.is_superuser = True
    researcher.save()
    client.force_login(researcher)
    other = make_study(name="Second")
    url = reverse("admin:annotator_study_changelist")
    one = client.post(url, {"action": "export_wide", "_selected_action": [study.pk]})
    assert one["Content-Disposition"] == (
        f'attachment; filename="concord-ratings-crowd-pilot-week-2-wide-{today}.csv"'
    )
    both = client.post(url, {"action": "export_tidy", "_selected_action": [study.pk, other.pk]})
    assert both["Content-Disposition"] == (
        f'attachment; filename="concord-ratings-2-studies-{today}.csv"'
    )


@pytest.mark.django_db
def test_the_elitr_export_keeps_the_authors_naming_and_is_safe(two_meetings):
    run = GenerationRun.objects.filter(dataset__split="test2", mode="st").first()
    assert file_name(run, ["gpt-4-eval"]) == "elitr-bench-qa_test2_st_gpt-4-eval.json"
    assert file_name(run, ["gpt-4-eval", "x"]) == "elitr-bench-qa_test2_st_all-eval.json"
    assert file_name(run, []) == "elitr-bench-qa_test2_st_responses.json"
    # an evaluator's name is anyone's text: no slash, space or colon reaches the path
    assert file_name(run, ["metric: rouge"]) == "elitr-bench-qa_test2_st_metric-rouge-eval.json"
    assert file_name(run, ["../../judge"]) == "elitr-bench-qa_test2_st_judge-eval.json"
