"""The report page (researchers only) and its API twin."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from analysis.exports import CONTENT_TYPES, export
from analysis.selection import MODES, VERSIONS, Selection, SelectionError
from config.api import ErrorSerializer

SELECTION_PARAMETERS = (
    "dataset_version",
    "split",
    "mode",
    "language",
    "benchmark",
    "systems",
    "evaluators",
    "study",
    "gold_evaluator",
)


def selection_from(params) -> Selection:
    return Selection.from_options({key: params.get(key) for key in SELECTION_PARAMETERS})


@login_required
def report_page(request: HttpRequest) -> HttpResponse:
    """/analysis/report/?split=test2&mode=st&format=html (or json, csv, csv-wide, latex)."""
    if not request.user.is_researcher:
        return HttpResponseForbidden("Reports are for researchers and admins.")
    fmt = request.GET.get("format", "html")
    try:
        text = export(selection_from(request.GET), fmt)
    except SelectionError as error:
        return HttpResponse(
            f"Bad selection: {error}", status=error.http_status, content_type="text/plain"
        )
    response = HttpResponse(text, content_type=f"{CONTENT_TYPES[fmt]}; charset=utf-8")
    if fmt != "html":
        extension = {"json": "json", "csv": "csv", "csv-wide": "csv", "latex": "tex"}[fmt]
        response["Content-Disposition"] = f'attachment; filename="agreement-report.{extension}"'
    return response


# What each query parameter takes: the values analysis.selection accepts; the
# names are matched against the stored data (an unknown evaluator is a 400).
REPORT_PARAMETERS = [
    OpenApiParameter("dataset_version", str, enum=list(VERSIONS), description="Question version."),
    OpenApiParameter("split", str, description="Benchmark split, e.g. test2."),
    OpenApiParameter("mode", str, enum=list(MODES), description="Single- or multi-turn."),
    OpenApiParameter("language", str, description="Dataset language (default en)."),
    OpenApiParameter("benchmark", str, description="Benchmark slug."),
    OpenApiParameter("systems", str, description="System names, comma-separated."),
    OpenApiParameter("evaluators", str, description="Evaluator names, comma-separated."),
    OpenApiParameter(
        "study",
        {"type": "integer", "minimum": 0},
        description="Only the responses a study rates (its id).",
    ),
    OpenApiParameter("gold_evaluator", str, description="The evaluator taken as reference."),
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
    from analysis.report import build_report  # with pandas and scipy: see exports.export

    return Response(build_report(selection_from(request.query_params)).to_dict())
