from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core.serializers import KnownFieldsMixin
from webhooks.addresses import UnsafeURL, check_url
from webhooks.models import SUBSCRIBABLE, WebhookAttempt, WebhookDelivery, WebhookEndpoint


class WebhookEndpointSerializer(KnownFieldsMixin, serializers.ModelSerializer):
    """A URL that receives the project's events it subscribes to, signed with
    its secret (shown once: in the answer that creates it, or rotates it)."""

    project = serializers.SlugField(
        source="project.slug",
        required=False,
        max_length=64,
        help_text="The project's slug; on creation, optional when you write to one project only.",
    )
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=SUBSCRIBABLE),
        allow_empty=False,
        max_length=len(SUBSCRIBABLE),
        help_text="The event types it receives.",
    )
    # left out of a form (multipart) body too: active, as in JSON (DRF reads a
    # missing checkbox as false)
    active = serializers.BooleanField(required=False, default=True)
    created_by: serializers.SlugRelatedField = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )

    class Meta:
        model = WebhookEndpoint
        fields = [
            "id",
            "project",
            "url",
            "description",
            "events",
            "active",
            "created_by",
            "created_at",
        ]
        read_only_fields = ["created_at"]

    def validate_url(self, url: str) -> str:
        try:
            return check_url(url)
        except UnsafeURL as error:
            raise serializers.ValidationError(str(error)) from None

    def validate_events(self, events: list[str]) -> list[str]:
        return sorted(set(events))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        chosen = attrs.get("project", {}).get("slug")
        if self.instance is not None and chosen not in (None, self.instance.project.slug):
            raise serializers.ValidationError(
                {"project": "An endpoint stays in its project: create one in the other instead."}
            )
        return attrs


class WebhookEndpointCreatedSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(
        read_only=True,
        help_text="The signing secret: shown only now. Keep it where your receiver reads it.",
    )

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]


class SecretSerializer(serializers.Serializer):
    secret = serializers.CharField(read_only=True, help_text="The new secret: shown only now.")


class WebhookAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = [
            "number",
            "started_at",
            "duration_ms",
            "status_code",
            "error",
            "response_excerpt",
        ]


class WebhookDeliverySerializer(serializers.ModelSerializer):
    attempt_log = WebhookAttemptSerializer(source="attempt_rows", many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_type",
            "event_id",
            "status",
            "attempts",
            "max_attempts",
            "next_attempt_at",
            "created_at",
            "delivered_at",
            "payload",
            "attempt_log",
        ]
        read_only_fields = fields


class RedeliverSerializer(KnownFieldsMixin, serializers.Serializer):
    delivery = serializers.IntegerField(
        min_value=1, help_text="The id of one of this endpoint's deliveries."
    )
