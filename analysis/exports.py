"""A report rendered in one of the export formats, from a selection, and the
name of its file."""

from __future__ import annotations

from datetime import date

from analysis.selection import Selection, SelectionError
from annotator.models import Study
from config.downloads import export_filename, safe_part

CONTENT_TYPES = {
    "json": "application/json",
    "csv": "text/csv",
    "csv-wide": "text/csv",
    "latex": "application/x-latex",
    "html": "text/html",
}


def export(selection: Selection, fmt: str, *, bootstrap: int = 0, request=None) -> str:
    """The report in `fmt`. With the page's `request`, the HTML carries the
    planner's form (a file written by the command does not)."""
    # pandas, numpy and scipy load with the first report, not with every process
    # that imports the URLs (manage.py, the worker).
    from analysis import render
    from analysis.report import build_report
    from analysis.scores import score_table

    if fmt not in render.FORMATS:
        raise SelectionError(f"format {fmt!r}: choose from {', '.join(render.FORMATS)}.")
    table = score_table(selection)
    if fmt == "csv":
        return render.tidy_csv(table)
    if fmt == "csv-wide":
        return render.wide_csv(table)
    report = build_report(selection, bootstrap=bootstrap, table=table)
    if fmt == "json":
        return report.to_json()
    if fmt == "latex":
        return render.to_latex(report)
    return render.to_html(report, request=request)


def report_subject(selection: Selection) -> str:
    """What a report file is named after: its study (by name), else the parts
    of the selection that narrow it (benchmark, version, split, mode, a
    language other than English), e.g. "report qa test2 st"."""
    if selection.study is not None:
        name = Study.objects.filter(pk=selection.study).values_list("name", flat=True).first()
        return f"report {name if name and safe_part(name) else f'study {selection.study}'}"
    parts = [
        selection.benchmark,
        selection.dataset_version,
        selection.split,
        selection.mode,
        selection.language if selection.language != "en" else None,
    ]
    return " ".join(["report", *(p for p in parts if p)]) if any(parts) else "report all"


def report_filename(selection: Selection, fmt: str, on: date) -> str:
    """The download's name: concord-report-qa-test2-st-2026-11-25.csv, or the study's name."""
    return export_filename(report_subject(selection), fmt, on)
