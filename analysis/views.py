"""The report's pages (researchers only): the report in each format, one of
its figures, the planner's "select items for humans" form the page posts to,
and a benchmark's report. Their API twins: analysis.api.views."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from analysis.forms import SelectItemsForm
from analysis.report.exports import CONTENT_TYPES, export, report_filename, report_subject
from analysis.report.query import selection_from
from analysis.report.selection import SelectionError
from annotator.errors import StudyError
from core.downloads import as_attachment, export_filename
from users.decorators import is_researcher, researcher_required
from users.projects import is_site_admin, visible_projects


@researcher_required(refusal="Reports are for researchers and admins.")
def report_page(request: HttpRequest) -> HttpResponse:
    """/analysis/report/?split=test2&mode=st&format=html (or json, csv, csv-wide,
    latex). Without any parameter: the default selection, stated in the URL."""
    if not request.GET:
        from analysis.report.links import report_url

        try:
            return redirect(report_url(selection_from({}, request.user)))
        except SelectionError:
            pass  # several projects: the page below asks which
    fmt = request.GET.get("format", "html")
    try:
        selection = selection_from(request.GET, request.user)
        text = export(selection, fmt, request=request if fmt == "html" else None)
    except SelectionError as error:
        if fmt != "html":
            return HttpResponse(
                f"Bad selection: {error}", status=error.http_status, content_type="text/plain"
            )
        from analysis.report.builder import builder_context

        return render(
            request,
            "analysis/report_refused.html",
            {"message": str(error), "builder": builder_context(request.GET, user=request.user)},
            status=error.http_status,
        )
    response = HttpResponse(text, content_type=f"{CONTENT_TYPES[fmt]}; charset=utf-8")
    if fmt != "html":
        as_attachment(response, report_filename(selection, fmt, timezone.localdate()))
    return response


@researcher_required(refusal="Reports are for researchers and admins.")
def report_plot(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """/analysis/report/plot/<name>.<png|svg>?<the report's selection>: one
    figure of the report, to download (researchers only, as the report)."""
    from analysis.figures import drawing, plots
    from analysis.report.caching import cached_figures, cached_report

    try:
        selection = selection_from(request.GET, request.user)
        entry, _ = cached_report(selection)
    except SelectionError as error:
        return HttpResponse(
            f"Bad selection: {error}", status=error.http_status, content_type="text/plain"
        )
    figures = plots.figures(entry.report)
    if name not in figures:
        raise Http404(
            f"This report has no figure {name!r}; it has: {', '.join(figures) or 'none'}."
        )
    data = cached_figures(entry, fmt, [name])[name]
    response = HttpResponse(data, content_type=drawing.FORMATS[fmt])
    subject = f"{report_subject(selection)} {name}"
    return as_attachment(response, export_filename(subject, fmt, timezone.localdate()))


@login_required
@require_POST
def select_items_page(request: HttpRequest) -> HttpResponse:
    """The report page's "select items for humans" form: create the study, then
    show what it rates."""
    from analysis.planning.items_for_humans import create_study

    if not is_researcher(request.user):
        return HttpResponseForbidden("Studies are created by researchers and admins.")
    form = SelectItemsForm(request.POST)
    try:
        selection = selection_from(
            request.POST, request.user, also=(*SelectItemsForm.base_fields, "csrfmiddlewaretoken")
        )
        if not form.is_valid():
            raise SelectionError(
                "; ".join(
                    f"{field}: {' '.join(str(e) for e in errors)}"
                    for field, errors in form.errors.items()
                )
            )
        chosen = dict(form.cleaned_data)
        chosen["gold_annotators"] = tuple(chosen["gold_annotators"].split(","))
        if chosen.get("alpha") is None:
            chosen["alpha"] = 0.2
        study = create_study(selection, actor=request.user, **chosen)
    except (SelectionError, StudyError) as error:
        return render(
            request,
            "analysis/items_refused.html",
            {"message": str(error), "nav": "home"},
            status=400,
        )
    items = study.items.filter(kind="response").select_related(
        "response__run__system", "response__question__document"
    )
    return render(
        request,
        "analysis/study_created.html",
        {"study": study, "items": items, "method": form.cleaned_data["method"], "nav": "home"},
        status=201,
    )


def report_projects(request: HttpRequest) -> list[int] | None:
    """The projects a benchmark report reads: `?project=` if the user sees it,
    else every project the user sees (None: a site admin sees all)."""
    if request.GET.get("project"):
        chosen = visible_projects(request.user).filter(slug=request.GET["project"]).first()
        if chosen is None:
            raise Http404(f"No project {request.GET['project']!r}.")
        return [chosen.pk]
    if is_site_admin(request.user):
        return None
    return list(visible_projects(request.user).values_list("pk", flat=True))


@researcher_required(refusal="Reports are for researchers and admins.")
def benchmark_report_page(request: HttpRequest, slug: str) -> HttpResponse:
    """/analysis/benchmark/<slug>/?split=S[&format=json|csv|parquet]: a benchmark's
    task scores in its authors' shape (analysis.report.benchmark_report)."""
    from analysis.report.benchmark_exports import FORMATS, as_bytes, columns
    from analysis.report.benchmark_report import benchmark_report
    from judging.metrics.longbench_v2 import BREAKDOWN

    split = request.GET.get("split", "")
    fmt = request.GET.get("format", "html")
    if fmt != "html" and fmt not in FORMATS:
        return HttpResponse(
            f"format {fmt!r}: html or one of {', '.join(FORMATS)}.",
            status=400,
            content_type="text/plain",
        )
    try:
        report = benchmark_report(slug, split, report_projects(request))
    except ValueError as error:
        if fmt == "html":
            raise Http404(str(error)) from None
        return HttpResponse(str(error), status=404, content_type="text/plain")
    if fmt == "html":
        heads = columns(report)
        return render(
            request,
            "analysis/benchmark_report.html",
            {
                "report": report,
                "heads": heads,
                "rows": [[row.get(h) for h in heads] for row in report.rows()],
                "no_average": report.missing_for_average() if report.has_average else [],
                "left_out": report.left_out(),
                "breakdown_heads": BREAKDOWN,
                "breakdown_rows": [
                    [b["system"], b["metric"], *(b[h] for h in BREAKDOWN)] for b in report.breakdown
                ],
                "formats": [f for f in FORMATS if f != "table"],
            },
        )
    content_types = {
        "table": "text/plain",
        "json": "application/json",
        "csv": "text/csv",
        "parquet": "application/vnd.apache.parquet",
    }
    response = HttpResponse(as_bytes(report, fmt), content_type=content_types[fmt])
    as_attachment(response, export_filename(f"{slug}-{split}-scores", fmt, timezone.localdate()))
    return response
