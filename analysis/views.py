"""The report page (researchers only) and its API twin."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from analysis.exports import CONTENT_TYPES, export
from analysis.selection import Selection, SelectionError

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
        return HttpResponse(f"Bad selection: {error}", status=400, content_type="text/plain")
    response = HttpResponse(text, content_type=f"{CONTENT_TYPES[fmt]}; charset=utf-8")
    if fmt != "html":
        extension = {"json": "json", "csv": "csv", "csv-wide": "csv", "latex": "tex"}[fmt]
        response["Content-Disposition"] = f'attachment; filename="agreement-report.{extension}"'
    return response


@extend_schema(
    parameters=[OpenApiParameter(name, str, required=False) for name in SELECTION_PARAMETERS],
    responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
)
@api_view(["GET"])
def report_api(request: Request) -> Response:
    """The agreement report as JSON (layout in docs/analysis.md). Query parameters:
    dataset_version, split, mode, language, benchmark, systems, evaluators, study,
    gold_evaluator."""
    from analysis.report import build_report  # with pandas and scipy: see exports.export

    try:
        return Response(build_report(selection_from(request.query_params)).to_dict())
    except SelectionError as error:
        return Response({"detail": str(error)}, status=400)
