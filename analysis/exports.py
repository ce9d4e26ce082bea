"""A report rendered in one of the export formats, from a selection."""

from __future__ import annotations

from analysis.selection import Selection, SelectionError

CONTENT_TYPES = {
    "json": "application/json",
    "csv": "text/csv",
    "csv-wide": "text/csv",
    "latex": "application/x-latex",
    "html": "text/html",
}


def export(selection: Selection, fmt: str, *, bootstrap: int = 0, request=None) -> str:
    """The report in `fmt`. With the page's `request`, the HTML carries the
    planner's form and the figures' download links (a file written by the
    command does not). The report and its figures come from analysis.caching."""
    # pandas, numpy and scipy load with the first report, not with every process
    # that imports the URLs (manage.py, the worker).
    from analysis import render
    from analysis.caching import cached_figures, cached_report
    from analysis.scores import score_table

    if fmt not in render.FORMATS:
        raise SelectionError(f"format {fmt!r}: choose from {', '.join(render.FORMATS)}.")
    table = score_table(selection)
    if fmt == "csv":
        return render.tidy_csv(table)
    if fmt == "csv-wide":
        return render.wide_csv(table)
    entry, _ = cached_report(selection, bootstrap=bootstrap, table=table)
    if fmt == "json":
        return entry.json
    if fmt == "latex":
        return render.to_latex(entry.report)
    return render.to_html(
        entry.report,
        request=request,
        images=cached_figures(entry, "png"),
        report_json=entry.json,
        content_sha256=entry.content_sha256,
    )
