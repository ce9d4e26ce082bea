"""A report rendered in one of the export formats, from a selection, and the
name of its file.

Every format opens with what the report covers: the selection in words, the
reference with its coverage and the rule that chose it, and the raters left
out (the CSVs in lines starting with "#", one quoted cell each, before the
table's header)."""

from __future__ import annotations

import csv
import io
from datetime import date

from analysis.report.selection import Selection, SelectionError
from annotator.models import Study
from core.downloads import export_filename, safe_part

CONTENT_TYPES = {
    "json": "application/json",
    "csv": "text/csv",
    "csv-wide": "text/csv",
    "latex": "application/x-latex",
    "html": "text/html",
}


def scope_lines(scope) -> list[str]:
    """The opening lines of a CSV or LaTeX file: selection, reference, raters left out."""
    left_out = scope.left_out
    counted = [r for r in scope.raters if r.counted]
    lines = [
        "Concord agreement report",
        f"selection: {scope.selection.query_string() or '(everything)'}",
        f"in words: {_statement(scope)}",
        f"reference: {scope.coverage_text(scope.reference)} ({scope.reference_rule})",
        "raters left out: "
        + (
            "; ".join(
                f"{r.evaluator} / {r.rater} ({r.ratings} ratings): {r.reason}" for r in left_out
            )
            if left_out
            else "none"
        ),
    ]
    if counted:
        lines.append(
            "flagged raters counted on request: "
            + "; ".join(f"{r.evaluator} / {r.rater}: {r.reason}" for r in counted)
        )
    # one physical line each (names from the data may hold line breaks), so that
    # the first line's count of lines to skip holds for any reader
    return [" ".join(line.split()) for line in lines]


def _statement(scope) -> str:
    from analysis.report.build import statement

    return statement(scope)


def csv_preamble(scope) -> str:
    """The scope lines as CSV rows of one quoted cell starting with '#', and a
    first line saying how many to skip."""
    lines = scope_lines(scope)
    first = (
        f"# {lines[0]}: the first {len(lines)} lines start with '#'; read the table with "
        f"pandas.read_csv(path, skiprows={len(lines)})"
    )
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n")  # as the table
    writer.writerow([first])
    for line in lines[1:]:
        writer.writerow([f"# {line}"])
    return buffer.getvalue()


def export(selection: Selection, fmt: str, *, bootstrap: int = 0, request=None) -> str:
    """The report in `fmt`. With the page's `request`, the HTML carries the
    planner's form and the figures' download links (a file written by the
    command does not). The report and its figures come from analysis.report.caching."""
    # pandas, numpy and scipy load with the first report, not with every process
    # that imports the URLs (manage.py, the worker).
    from analysis.report import render
    from analysis.report.caching import cached_figures, cached_report
    from analysis.report.scope import resolve

    if fmt not in render.FORMATS:
        raise SelectionError(f"format {fmt!r}: choose from {', '.join(render.FORMATS)}.")
    scope = resolve(selection)
    if fmt == "csv":
        return csv_preamble(scope) + render.tidy_csv(scope.table)
    if fmt == "csv-wide":
        return csv_preamble(scope) + render.wide_csv(scope.table)
    entry, _ = cached_report(scope, bootstrap=bootstrap)
    report = entry.report
    if fmt == "json":
        return entry.json
    if fmt == "latex":
        return render.to_latex(report, opening=scope_lines(scope))
    return render.to_html(
        report,
        request=request,
        scope=scope,
        images=cached_figures(entry, "png"),
        report_json=entry.json,
        content_sha256=entry.content_sha256,
    )


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
