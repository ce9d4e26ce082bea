"""What every API answer has in common: one way to answer errors, and a schema
that declares them.

``exception_handler`` (REST_FRAMEWORK["EXCEPTION_HANDLER"]) answers any
``core.errors.ConcordError`` with ``{"detail": message, "code": code}`` and
the error's HTTP status, and gives DRF's own one-message errors (404, 401,
403, 405, 415, a malformed body) the same shape. Field validation errors keep
DRF's ``{"field": ["message", ...]}``.

``ConcordAutoSchema`` declares those answers on every operation, so that the
OpenAPI schema lists what a client can really get back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from core.errors import ConcordError
from core.not_found import not_found_page
from core.serializers import KnownFieldsMixin

if TYPE_CHECKING:
    from drf_spectacular.plumbing import ComponentRegistry


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        return Response(too_large_body(), status=413)
    if isinstance(exc, ConcordError):
        # as DRF does for its own errors: an ATOMIC_REQUESTS transaction rolls back
        set_rollback()
        return Response(exc.as_dict(), status=exc.http_status)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(data, list):
        # a ValidationError with messages but no fields (e.g. the search filter's
        # "Null characters are not allowed."): one message, like the others
        response.data = {
            "detail": " ".join(str(message) for message in data),
            "code": (getattr(data[0], "code", None) if data else None) or "invalid",
        }
    elif isinstance(data, dict) and set(data) == {"detail"}:
        # DRF's message is an ErrorDetail that knows its code (not_found, parse_error, ...)
        data["code"] = getattr(data["detail"], "code", None) or "error"
    return response


def too_large_body() -> dict[str, str]:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0
    return {
        "detail": f"The request body is over {limit / 1024**2:.1f} MB (the setting "
        "DATA_UPLOAD_MAX_MEMORY_SIZE): send fewer records a request, or import a file "
        "from the console or with a management command.",
        "code": "request_too_large",
    }


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 400 (a body over DATA_UPLOAD_MAX_MEMORY_SIZE read before a view
    could answer, a bad Host header, ...): in the API's shape under /api/."""
    if request.path.startswith("/api/"):
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(too_large_body(), status=413)
        return JsonResponse({"detail": "Bad request.", "code": "bad_request"}, status=400)
    return defaults.bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 404, for a URL that no route matches (`/api/studies/abc/`): in
    the API's shape under /api/, the product's page elsewhere (worded for a
    participant under their links: core.not_found)."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return not_found_page(request)


def server_error(request: HttpRequest) -> HttpResponse:
    """A bug answers 500 (and is logged); under /api/ still as JSON."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Server error.", "code": "server_error"}, status=500)
    return defaults.server_error(request)


# --- The schema -------------------------------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    """An error: its message and its kind. Some errors add fields (e.g. a
    frozen evaluator's `frozen_fields`)."""

    detail = serializers.CharField()
    code = serializers.CharField()


class ValidationErrorSerializer(serializers.Serializer):
    """A request that cannot be done as sent: either one message (`detail` and
    `code`), or the refused fields, each with its messages
    (`{"name": ["This field is required."]}`)."""

    detail = serializers.CharField(required=False)
    code = serializers.CharField(required=False)


# Query parameters whose bad values are not a 400: a page past the end is a
# 404, an unknown ordering is ignored. (A filter's bad value is a 400, and so
# is a search with a NUL character.)
LENIENT_QUERY = {"page", "ordering"}


class ConcordAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, with the error answers each operation can give:
    401 and 403 unless anyone may call it, 400 when it takes a body or filters,
    404 when it names an object in its path or pages a list. A view declares
    its other answers (409, 502, ...) with ``extend_schema``. A serializer that
    refuses unknown fields (KnownFieldsMixin) says so: no additional properties."""

    def get_operation(
        self,
        path: str,
        path_regex: str,
        path_prefix: str,
        method: str,
        registry: ComponentRegistry,
    ) -> dict[str, Any] | None:
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        responses = operation["responses"]
        parameters = operation.get("parameters", [])
        in_path = [p for p in parameters if p["in"] == "path"]
        in_query = {p["name"] for p in parameters if p["in"] == "query"}
        filtered = bool(self.get_filter_backends()) and in_query - LENIENT_QUERY
        errors: dict[str, tuple[type[serializers.Serializer], str]] = {}
        if "requestBody" in operation or filtered:
            errors["400"] = (ValidationErrorSerializer, "The request cannot be done as sent.")
        if "requestBody" in operation:
            errors["413"] = (ErrorSerializer, "The body is over DATA_UPLOAD_MAX_MEMORY_SIZE.")
        if not self._anyone_may_call():
            errors["401"] = (ErrorSerializer, "No valid session or token.")
            errors["403"] = (ErrorSerializer, "For researchers and admins only.")
        if in_path or "page" in in_query:
            errors["404"] = (ErrorSerializer, "No such object (or no such page).")
        for status, (serializer, description) in errors.items():
            if status not in responses:
                responses[status] = self._error_response(serializer, status, description)
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _map_basic_serializer(
        self,
        serializer: serializers.Serializer | type[serializers.Serializer],
        direction: str,
    ) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        if isinstance(serializer, KnownFieldsMixin):
            schema["additionalProperties"] = False  # unknown fields are refused (400)
        return schema

    def _anyone_may_call(self) -> bool:
        return any(isinstance(p, AllowAny) for p in self.view.get_permissions())

    def _error_response(
        self, serializer: type[serializers.Serializer], status: str, description: str
    ) -> dict[str, Any]:
        answer = self._get_response_for_code(
            serializer, status, media_types=["application/json"], direction="response"
        )
        answer["description"] = description
        return answer
