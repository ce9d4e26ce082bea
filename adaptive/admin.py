"""Adaptive studies in the admin: read only. A study is planned, started and
stopped in the console, the API or `adaptive_study`, where each change is a
recorded decision; its draws and decisions are its record."""

from __future__ import annotations

from django.contrib import admin

from adaptive.models import AdaptiveStudy, Decision, Draw
from annotator.admin.records import ReadOnlyAdmin
from users.admin_scope import ProjectScopedAdmin


@admin.register(AdaptiveStudy)
class AdaptiveStudyAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    list_display = (
        "name",
        "goal",
        "design",
        "population",
        "status",
        "budget_pence",
        "created_at",
    )
    list_filter = ("status", "goal", "design", "population")
    search_fields = ("name",)
    exclude = ("pool",)  # every response's probability: thousands of numbers


@admin.register(Draw)
class DrawAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = "adaptive__project"
    list_display = ("adaptive", "system", "position", "wave", "response", "probability", "sent")
    list_filter = ("adaptive", "wave", "sent")
    list_select_related = ("adaptive", "system")


@admin.register(Decision)
class DecisionAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = "adaptive__project"
    list_display = ("adaptive", "action", "actor", "created_at", "detail")
    list_filter = ("adaptive", "action")
    list_select_related = ("adaptive", "actor")
