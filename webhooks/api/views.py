from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from users.permissions import signed_in_user
from users.projects import NoProjectChosen, can_change, project_for_create, scope
from webhooks import services
from webhooks.api.serializers import (
    RedeliverSerializer,
    SecretSerializer,
    WebhookDeliverySerializer,
    WebhookEndpointCreatedSerializer,
    WebhookEndpointSerializer,
)
from webhooks.models import WebhookDelivery, WebhookEndpoint


class WebhookEndpointViewSet(viewsets.ModelViewSet):
    """Webhook endpoints of your projects (a lab's own tooling): each receives
    the events it subscribes to, POSTed as signed JSON by a worker, retried with
    backoff; every delivery and attempt is kept (docs/webhooks.md). Viewers of
    a project read; its owners and researchers change."""

    serializer_class = WebhookEndpointSerializer
    filterset_fields = ["active"]
    search_fields = ["url", "description"]
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[WebhookEndpoint]:
        endpoints = WebhookEndpoint.objects.select_related("project", "created_by")
        return scope(endpoints, self.request.user).order_by("-created_at", "-pk")

    def writable(self) -> WebhookEndpoint:
        endpoint = self.get_object()
        if not can_change(self.request.user, endpoint.project_id):
            raise PermissionDenied("Viewers of this project read its webhooks; they cannot change.")
        return endpoint

    @extend_schema(responses={201: WebhookEndpointCreatedSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        try:
            project = project_for_create(request.user, data.pop("project", {}).get("slug"))
        except NoProjectChosen as error:
            raise ValidationError({"project": [str(error)]}) from None
        endpoint = WebhookEndpoint.objects.create(
            project=project, created_by=signed_in_user(request), **data
        )
        answer = WebhookEndpointCreatedSerializer(endpoint, context=self.get_serializer_context())
        return Response(answer.data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.writable()
        return super().update(request, *args, **kwargs)

    def perform_update(self, serializer: BaseSerializer[WebhookEndpoint]) -> None:
        serializer.validated_data.pop("project", None)  # its own (validate refuses another)
        serializer.save()

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.writable()
        return super().destroy(request, *args, **kwargs)

    @extend_schema(responses=WebhookDeliverySerializer(many=True))
    @action(detail=True, methods=["get"], filter_backends=[])
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        """The endpoint's deliveries, newest first, each with its attempts."""
        rows = WebhookDelivery.objects.filter(endpoint=self.get_object()).prefetch_related(
            "attempt_rows"
        )
        page = self.paginate_queryset(rows.order_by("-created_at", "-pk"))
        return self.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)

    @extend_schema(request=RedeliverSerializer, responses={200: WebhookDeliverySerializer})
    @action(detail=True, methods=["post"], filter_backends=[])
    def redeliver(self, request: Request, pk: str | None = None) -> Response:
        """Send one of its deliveries again now (the same event id), with a
        fresh allowance of attempts."""
        endpoint = self.writable()
        body = RedeliverSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        delivery = get_object_or_404(
            WebhookDelivery, pk=body.validated_data["delivery"], endpoint=endpoint
        )
        delivery = services.do_redeliver(delivery)
        return Response(WebhookDeliverySerializer(delivery).data)

    @extend_schema(request=None, responses={201: WebhookDeliverySerializer})
    @action(detail=True, methods=["post"], url_path="test", filter_backends=[])
    def send_test(self, request: Request, pk: str | None = None) -> Response:
        """Send a `webhook.test` event to this endpoint."""
        delivery = services.do_send_test(self.writable(), signed_in_user(request))
        return Response(WebhookDeliverySerializer(delivery).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: SecretSerializer})
    @action(detail=True, methods=["post"], url_path="rotate-secret", filter_backends=[])
    def rotate_secret(self, request: Request, pk: str | None = None) -> Response:
        """A new signing secret, shown only in this answer; the old one signs nothing more."""
        return Response({"secret": services.do_rotate_secret(self.writable())})
