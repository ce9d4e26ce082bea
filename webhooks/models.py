"""Webhooks: a project's endpoints, the deliveries of its events to them, and
every attempt of each delivery.

A delivery row is the truth about an event that must reach an endpoint: it is
written in the transaction of the change that caused it (so a committed change
never loses its event and a rolled-back one sends nothing), a worker claims it
for one attempt at a time, and every attempt is a row (docs/webhooks.md).
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from users.models import Project


class EventType(models.TextChoices):
    RUN_FINISHED = "run.finished", "A run finished (done)"
    RUN_FAILED = "run.failed", "A run failed"
    RUN_CANCELLED = "run.cancelled", "A run was cancelled (by a researcher, or on its budget)"
    STUDY_QUOTA_FILLED = "study.quota_filled", "A study's places are all taken"
    STUDY_COMPLETED = "study.completed", "A study's places are all completed"
    BUDGET_REACHED = "budget.reached", "A judging run or an adaptive study stopped on its budget"
    TEST = "webhook.test", "A test event (sent by hand to one endpoint)"


# What an endpoint may subscribe to (a test event goes to the endpoint it is sent to).
SUBSCRIBABLE = [(value, label) for value, label in EventType.choices if value != EventType.TEST]

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """32 random bytes, URL-safe: the HMAC key is this whole string, as UTF-8."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


class WebhookEndpoint(models.Model):
    """A URL of a lab's own tooling that receives a project's events, signed
    with its secret. The secret is stored (it signs every delivery) and shown
    only when the endpoint is created or its secret rotated; it is never
    logged, listed or exported."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000, help_text="http:// or https://; POSTed JSON.")
    description = models.CharField(max_length=200, blank=True)
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    events = models.JSONField(default=list, help_text="The event types it receives.")
    active = models.BooleanField(default=True, help_text="Inactive: nothing new is sent to it.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "webhook endpoint"
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(url__startswith="http://") | Q(url__startswith="https://"),
                name="webhook_url_http",
            ),
            models.CheckConstraint(condition=~Q(secret=""), name="webhook_secret_set"),
        ]

    def __str__(self) -> str:
        return self.description or self.url

    def wants(self, event_type: str) -> bool:
        return self.active and (event_type == EventType.TEST or event_type in self.events)


class WebhookDelivery(models.Model):
    """One event for one endpoint: pending until an attempt is answered 2xx
    (delivered) or `max_attempts` attempts failed (failed). `event_id` is the
    idempotency key the receiver sees (header Concord-Delivery), the same on
    every attempt and every redelivery."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed (every attempt)"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_type = models.CharField(max_length=40, choices=EventType.choices)
    event_id = models.UUIDField(default=uuid.uuid4)
    payload = models.JSONField(help_text="The event as sent (the body, before signing).")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0, help_text="Attempts made so far.")
    max_attempts = models.PositiveIntegerField(help_text="Failed after this many attempts.")
    next_attempt_at = models.DateTimeField(
        null=True, blank=True, help_text="Pending: when the next attempt is due."
    )
    claimed_until = models.DateTimeField(
        null=True, blank=True, help_text="A worker is making an attempt until then."
    )
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event_id"], name="webhook_event_once"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed"]),
                name="webhook_delivery_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(event_type__in=EventType.values), name="webhook_event_type_valid"
            ),
            models.CheckConstraint(
                condition=Q(attempts__lte=models.F("max_attempts")),
                name="webhook_attempts_within_max",
            ),
            models.CheckConstraint(
                condition=~Q(status="pending") | Q(next_attempt_at__isnull=False),
                name="webhook_pending_is_due",
            ),
            models.CheckConstraint(
                condition=~Q(status="delivered") | Q(delivered_at__isnull=False),
                name="webhook_delivered_has_time",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="webhook_pending_due",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} -> {self.endpoint_id}"


class WebhookAttempt(models.Model):
    """One POST of a delivery. No duration: no outcome was recorded (the worker
    stopped during it; the delivery was claimed again when its claim ran out)."""

    delivery = models.ForeignKey(
        WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_rows"
    )
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    response_excerpt = models.TextField(
        blank=True, help_text="The answer's first 1,000 characters."
    )

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_once"),
            models.CheckConstraint(condition=Q(number__gte=1), name="webhook_attempt_number"),
        ]

    def __str__(self) -> str:
        outcome = self.status_code or self.error or "no outcome"
        return f"attempt {self.number}: {outcome}"
