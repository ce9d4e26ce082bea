"""The report's API: the agreement report as JSON (the report page's twin),
and the planner's "select items for humans" action as a call."""

from django.core.exceptions import PermissionDenied
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from analysis.api.serializers import CreatedStudySerializer, SelectItemsSerializer
from analysis.report.query import selection_from
from analysis.report.selection import (
    ALIGNMENTS,
    LANGUAGES,
    MAX_LABELLED,
    MAX_WIDTH,
    MODES,
    VERSIONS,
    Selection,
    selection_for,
)
from core.api import ErrorSerializer, ValidationErrorSerializer
from users.decorators import is_researcher

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
        "rater_models",
        {"type": "boolean"},
        description="Fit the rater models (Dawid-Skene, MACE, GLAD through crowd-kit, and "
        "rater offsets) for every evaluator with individual raters (default: not; seconds "
        "per thousand ratings).",
    ),
    OpenApiParameter(
        "length_control",
        {"type": "boolean"},
        description="Add length-controlled Bradley-Terry rankings from scores (FastChat's "
        "contextual Bradley-Terry with the answers' length difference; default: not).",
    ),
    OpenApiParameter(
        "style_control",
        {"type": "boolean"},
        description="Add style-controlled Bradley-Terry rankings from scores: the length and "
        "FastChat's markdown elements (headers, list items, bold) held fixed (default: not; "
        "reads the answers' texts).",
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
    action = {
        key: data.pop(key)
        for key in ("method", "count", "kind", "name", "raters_per_task", "judge", "alpha")
        if key in data
    }
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
