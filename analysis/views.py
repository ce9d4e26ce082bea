"""The report page (researchers only) and its API twin; the planner's "select items
for humans" action as a form the page posts to and as an API call."""

from collections.abc import Mapping

from django import forms
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from analysis.report.exports import CONTENT_TYPES, export, report_filename, report_subject
from analysis.report.selection import (
    ALIGNMENTS,
    ITEM_METHODS,
    LANGUAGES,
    MAX_ITEMS,
    MAX_LABELLED,
    MAX_WIDTH,
    MODES,
    PARAMETERS,
    VERSIONS,
    Selection,
    SelectionError,
    selection_for,
)
from annotator.errors import StudyError
from annotator.models import Study
from core.api import ErrorSerializer, ValidationErrorSerializer
from core.downloads import as_attachment, export_filename
from core.serializers import KnownFieldsMixin
from users.decorators import is_researcher, researcher_required
from users.models import User
from users.projects import is_site_admin, visible_projects

SELECTION_PARAMETERS = PARAMETERS
PAGE_PARAMETERS = ("format",)


def selection_from(
    params: Mapping[str, str], user: User | AnonymousUser, also: tuple[str, ...] = PAGE_PARAMETERS
) -> Selection:
    """The selection in a query, as the user may read it (selection_for: his
    project); a parameter it does not know (beside `also`) is an error (a
    misspelt `splti=test2` would otherwise give the report of everything)."""
    unknown = sorted(set(params) - set(SELECTION_PARAMETERS) - set(also))
    if unknown:
        raise SelectionError(
            f"unknown parameter(s) {', '.join(map(repr, unknown))}; the report takes "
            f"{', '.join(SELECTION_PARAMETERS)} and format."
        )
    if not set(params) & (set(SELECTION_PARAMETERS) - {"project"}):
        from analysis.report.scope import default_selection

        # the reader's project first: the default is chosen among its data only
        named = Selection.from_options({"project": parameter(params, "project")})
        project = selection_for(user, named).project
        return selection_for(user, default_selection(project))
    options = {key: parameter(params, key) for key in SELECTION_PARAMETERS}
    return selection_for(user, Selection.from_options(options))


LIST_PARAMETERS = frozenset({"systems", "evaluators", "judges", "humans"})


def parameter(params: Mapping[str, str], key: str) -> str | list[str] | None:
    """A query parameter's value; the builder's checkboxes send names as
    repeated parameters (systems=A&systems=B), links as one (systems=A,B),
    each with a comma inside a name written `\\,` (analysis.report.selection.split_names)."""
    if key in LIST_PARAMETERS and hasattr(params, "getlist"):
        values = [v for v in params.getlist(key) if v is not None]
        return values or None
    return params.get(key)


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


# What each query parameter takes: the values analysis.report.selection accepts; the
# names are matched against the stored data (an unknown evaluator is a 400).
REPORT_PARAMETERS = [
    OpenApiParameter("dataset_version", str, enum=list(VERSIONS), description="Question version."),
    OpenApiParameter("split", str, description="Benchmark split, e.g. test2."),
    OpenApiParameter("mode", str, enum=list(MODES), description="Single- or multi-turn."),
    OpenApiParameter(
        "language", str, enum=list(LANGUAGES), description="Dataset language (default en)."
    ),
    OpenApiParameter("benchmark", str, description="Benchmark slug."),
    OpenApiParameter("systems", str, description="System names, comma-separated."),
    OpenApiParameter("evaluators", str, description="Evaluator names, comma-separated."),
    OpenApiParameter(
        "study",
        {"type": "integer", "minimum": 0},
        description="Only the responses a study rates (its id).",
    ),
    OpenApiParameter(
        "judges",
        str,
        description="The judges whose trust is assessed, comma-separated (default: every "
        "evaluator that is not a human one and not the reference); naming judges reads only "
        "them and the human evaluators.",
    ),
    OpenApiParameter(
        "humans",
        str,
        description="The human evaluators of the judge-trust section, comma-separated "
        "(default: every gold or crowd evaluator of the selection).",
    ),
    OpenApiParameter(
        "reference",
        str,
        description="The evaluator correlations, rankings, gold bins and calibration are read "
        "against (default: the human evaluator that scores the most responses of the "
        "selection; ties: experts first, then the oldest).",
    ),
    OpenApiParameter(
        "gold_evaluator", str, description="Former name of `reference`, still accepted."
    ),
    OpenApiParameter(
        "ppi_labels",
        str,
        description="The evaluator whose ratings are PPI's labelled set (default: the "
        "reference). Refused unless they are a random sample or carry inclusion probabilities.",
    ),
    OpenApiParameter(
        "include_flagged",
        {"type": "boolean"},
        description="Count raters flagged by quality control (default: left out; raters given "
        "the failed-check code never count).",
    ),
    OpenApiParameter(
        "epsilon",
        {"type": "number", "minimum": 0, "maximum": 1},
        description="The alternative annotator test's cost-benefit margin (default: the "
        "authors' rule of thumb, 0.2 experts, 0.15 skilled, 0.1 crowd workers).",
    ),
    OpenApiParameter(
        "alignment",
        str,
        enum=list(ALIGNMENTS),
        description="The alt-test's alignment function: neg_rmse or neg_mae (scores), "
        "accuracy (labels), rank (order only). Default neg_rmse.",
    ),
    OpenApiParameter(
        "ppi_labelled",
        {"type": "integer", "minimum": 2, "maximum": MAX_LABELLED},
        description="Gold ratings per system PPI keeps as its labelled sample when every "
        "response has a gold score (default 40).",
    ),
    OpenApiParameter(
        "target_width",
        {"type": "number", "minimum": 0.01, "maximum": MAX_WIDTH},
        description="The planner's target 95% CI width on a system mean, in points (default 1).",
    ),
]


@extend_schema(
    parameters=REPORT_PARAMETERS,
    responses={
        200: OpenApiTypes.OBJECT,
        400: OpenApiResponse(ErrorSerializer, "A selection that cannot be used."),
    },
)
@api_view(["GET"])
def report_api(request: Request) -> Response:
    """The agreement report as JSON (layout in docs/analysis.md). A bad selection
    (a SelectionError) answers 400 through the API's exception handler."""
    from analysis.report.caching import cached_report  # with pandas and scipy: see exports.export

    entry, _ = cached_report(selection_from(request.query_params, request.user))
    return Response(entry.report.to_dict())


class SelectItemsForm(forms.Form):
    """What the planner's action needs besides the selection."""

    method = forms.ChoiceField(choices=[(m, m) for m in ITEM_METHODS])
    count = forms.IntegerField(min_value=1, max_value=MAX_ITEMS)
    kind = forms.ChoiceField(choices=Study.Kind.choices)
    name = forms.CharField(max_length=200)
    raters_per_task = forms.IntegerField(min_value=1, max_value=1000, initial=1)
    gold_annotators = forms.CharField(
        required=False, max_length=2000, help_text="Usernames, comma-separated (gold studies)."
    )


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


class SelectItemsSerializer(KnownFieldsMixin, serializers.Serializer):
    method = serializers.ChoiceField(choices=list(ITEM_METHODS))
    count = serializers.IntegerField(min_value=1, max_value=MAX_ITEMS)
    kind = serializers.ChoiceField(choices=Study.Kind.values)
    name = serializers.CharField(max_length=200)
    raters_per_task = serializers.IntegerField(min_value=1, max_value=1000, default=1)
    gold_annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        max_length=200,
        help_text="A gold study's gold annotators (usernames): they see only the studies "
        "they are assigned to.",
    )
    # the selection, as the report's query parameters take it
    project = serializers.CharField(
        max_length=64, required=False, help_text="The project's slug (yours, if only one)."
    )
    dataset_version = serializers.ChoiceField(choices=list(VERSIONS), required=False)
    split = serializers.CharField(max_length=200, required=False)
    mode = serializers.ChoiceField(choices=list(MODES), required=False)
    language = serializers.ChoiceField(choices=list(LANGUAGES), required=False)
    benchmark = serializers.CharField(max_length=200, required=False)
    systems = serializers.CharField(required=False, help_text="System names, comma-separated.")
    evaluators = serializers.CharField(
        required=False, help_text="Evaluator names, comma-separated."
    )
    study = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    gold_evaluator = serializers.CharField(max_length=200, required=False)
    reference = serializers.CharField(max_length=200, required=False)
    judges = serializers.CharField(required=False, help_text="Judges, comma-separated.")
    humans = serializers.CharField(required=False, help_text="Human evaluators, comma-separated.")
    include_flagged = serializers.BooleanField(required=False, default=False)


class CreatedStudySerializer(serializers.Serializer):
    study = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    method = serializers.CharField()
    items = serializers.IntegerField()
    responses = serializers.ListField(child=serializers.IntegerField())


@extend_schema(
    request=SelectItemsSerializer,
    responses={
        201: CreatedStudySerializer,
        400: OpenApiResponse(
            ValidationErrorSerializer,
            "A selection, method or study that cannot be used, or refused fields.",
        ),
    },
)
@api_view(["POST"])
def select_items_api(request: Request) -> Response:
    """Pick responses of a selection for humans to rate (by the judges'
    disagreement, their samples' spread, or stratified at random) and create a
    gold or crowd study of exactly those (closed: open it when ready)."""
    from analysis.planning.items_for_humans import create_study

    user = request.user
    if not is_researcher(user):  # the API's permission class lets only researchers this far
        raise PermissionDenied("Studies are created by researchers and admins.")
    body = SelectItemsSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    data = dict(body.validated_data)
    action = {key: data.pop(key) for key in ("method", "count", "kind", "name", "raters_per_task")}
    action["gold_annotators"] = tuple(data.pop("gold_annotators", ()))
    study = create_study(selection_for(user, Selection.from_options(data)), actor=user, **action)
    responses = sorted(study.responses.values_list("pk", flat=True))
    return Response(
        {
            "study": study.pk,
            "name": study.name,
            "kind": study.kind,
            "method": action["method"],
            "items": study.items.filter(kind="response").count(),
            "responses": responses,
        },
        status=201,
    )


@researcher_required(refusal="Reports are for researchers and admins.")
def benchmark_report_page(request: HttpRequest, slug: str) -> HttpResponse:
    """/analysis/benchmark/<slug>/?split=S[&format=json|csv|parquet]: a benchmark's
    task scores in its authors' shape (analysis.report.benchmark_report)."""
    from analysis.report.benchmark_exports import FORMATS, as_bytes, columns
    from analysis.report.benchmark_report import benchmark_report

    split = request.GET.get("split", "")
    fmt = request.GET.get("format", "html")
    if fmt != "html" and fmt not in FORMATS:
        return HttpResponse(
            f"format {fmt!r}: html or one of {', '.join(FORMATS)}.",
            status=400,
            content_type="text/plain",
        )
    projects = (
        None
        if is_site_admin(request.user)
        else list(visible_projects(request.user).values_list("pk", flat=True))
    )
    if request.GET.get("project"):
        chosen = visible_projects(request.user).filter(slug=request.GET["project"]).first()
        if chosen is None:
            raise Http404(f"No project {request.GET['project']!r}.")
        projects = [chosen.pk]
    try:
        report = benchmark_report(slug, split, projects)
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
