"""What the API answers for a run's resume / cancel / retry."""

from rest_framework.response import Response

from runs.lifecycle import Outcome


def outcome_response(outcome: Outcome) -> Response:
    """200 when something was done or nothing needed doing (`changed` says
    which), 409 when the run is finished, 503 when the broker is down."""
    return Response(
        {"detail": outcome.detail, "changed": outcome.changed, "code": outcome.code},
        status=outcome.http_status,
    )
