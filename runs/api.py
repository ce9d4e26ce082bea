"""What the API answers for a run's resume / cancel / retry, and its schema."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from runs.lifecycle import Outcome


class OutcomeSerializer(serializers.Serializer):
    """What a run action did: `changed` false when nothing needed doing (the
    run was already running or queued), `detail` says why, `code` names the case."""

    detail = serializers.CharField()
    changed = serializers.BooleanField()
    code = serializers.ChoiceField(
        choices=[
            "ok",
            "already_running",
            "already_queued",
            "nothing_to_retry",
            "done",
            "finished",
            "broker_down",
        ]
    )


# The body is ignored; the answer is an Outcome with its status.
outcome_schema = extend_schema(
    request=None,
    responses={
        200: OutcomeSerializer,
        409: OpenApiResponse(OutcomeSerializer, description="The run is finished."),
        503: OpenApiResponse(OutcomeSerializer, description="The task broker is down."),
    },
)


def outcome_response(outcome: Outcome) -> Response:
    """200 when something was done or nothing needed doing (`changed` says
    which), 409 when the run is finished, 503 when the broker is down."""
    return Response(
        {"detail": outcome.detail, "changed": outcome.changed, "code": outcome.code},
        status=outcome.http_status,
    )
