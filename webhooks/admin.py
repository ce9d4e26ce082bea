"""Webhooks in the admin: endpoints with their recent deliveries (send a test
event, rotate the secret), deliveries read-only with their attempts
(redeliver). The secret is shown once, in the message after it is made."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from users.admin_scope import ProjectScopedAdmin
from users.projects import scope, writable_projects
from webhooks import services
from webhooks.addresses import UnsafeURL, check_url
from webhooks.models import SUBSCRIBABLE, WebhookAttempt, WebhookDelivery, WebhookEndpoint

RECENT = 20


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(choices=SUBSCRIBABLE, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = WebhookEndpoint
        fields = ["project", "url", "description", "events", "active"]

    def clean_url(self) -> str:
        try:
            return check_url(self.cleaned_data["url"])
        except UnsafeURL as error:
            raise forms.ValidationError(str(error)) from None


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ProjectScopedAdmin):
    members_write = True
    form = EndpointForm
    list_display = ("url", "project", "subscribed", "active", "created_by", "created_at")
    list_filter = ("active", "project")
    search_fields = ("url", "description")
    readonly_fields = ("created_by", "created_at", "recent_deliveries")
    actions = ["send_test_event", "rotate_secret"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookEndpoint]:
        return scope(super().get_queryset(request).select_related("project"), request.user)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "project":
            kwargs["queryset"] = writable_projects(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="events")
    def subscribed(self, endpoint: WebhookEndpoint) -> str:
        return ", ".join(endpoint.events)

    @admin.display(description=f"last {RECENT} deliveries")
    def recent_deliveries(self, endpoint: WebhookEndpoint) -> str:
        rows = endpoint.deliveries.order_by("-created_at", "-pk")[:RECENT]
        return format_html_join(
            "",
            '<div><a href="{}">{} {}</a>: {} after {} attempt(s)</div>',
            (
                (
                    reverse("admin:webhooks_webhookdelivery_change", args=[d.pk]),
                    d.event_type,
                    d.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    d.status,
                    d.attempts,
                )
                for d in rows
            ),
        ) or format_html("<span>{}</span>", "none yet")

    def save_model(
        self, request: HttpRequest, obj: WebhookEndpoint, form: Any, change: bool
    ) -> None:
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
        if not change:
            self.show_secret(request, obj.secret)

    def show_secret(self, request: HttpRequest, secret: str) -> None:
        self.message_user(
            request,
            f"The signing secret, shown only now: {secret}",
            messages.WARNING,
        )

    @admin.action(description="Send a test event")
    def send_test_event(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            services.do_send_test(endpoint, request.user)  # type: ignore[arg-type]
        self.message_user(request, f"Test event queued for {queryset.count()} endpoint(s).")

    @admin.action(description="Rotate the secret (shown once)")
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            secret = services.do_rotate_secret(endpoint)
            self.message_user(
                request,
                f"{endpoint}: the new signing secret, shown only now: {secret}",
                messages.WARNING,
            )


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status_code", "error", "response_excerpt")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ProjectScopedAdmin):
    project_path = "endpoint__project"
    list_display = ("event_type", "endpoint", "status", "attempts", "next_attempt_at", "created_at")
    list_filter = ("status", "event_type")
    search_fields = ("event_id", "endpoint__url")
    fields = (
        "endpoint",
        "event_type",
        "event_id",
        "status",
        "attempts",
        "max_attempts",
        "next_attempt_at",
        "claimed_until",
        "created_at",
        "delivered_at",
        "payload_json",
    )
    readonly_fields = fields
    inlines = [AttemptInline]
    actions = ["redeliver"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookDelivery]:
        deliveries = super().get_queryset(request).select_related("endpoint")
        return scope(deliveries, request.user, "endpoint__project")

    @admin.display(description="payload")
    def payload_json(self, delivery: WebhookDelivery) -> str:
        return format_html("<pre>{}</pre>", services.payload_text(delivery.payload))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Redeliver now (the same event id)", permissions=["view"])
    def redeliver(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        for delivery in queryset:
            services.do_redeliver(delivery)
        self.message_user(request, f"{queryset.count()} deliveries queued again.")
