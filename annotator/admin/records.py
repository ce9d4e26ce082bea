"""Read-only admin pages of the human data (assignments, ratings, items, audit
events): nothing here is added, changed or deleted by hand."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, Model, QuerySet
from django.http import HttpRequest

from annotator.models import Assignment, AuditEvent, Item, Rating
from users.admin_scope import ProjectScopedAdmin


@admin.register(Assignment)
class AssignmentAdmin(ProjectScopedAdmin):
    project_path = "participant__study__project"
    list_display = (
        "participant",
        "task",
        "status",
        "started_at",
        "completed_at",
        "rated",
        "attention_passed",
    )
    list_filter = ("task__study", "status")
    list_select_related = ("participant", "task")
    readonly_fields = [f.name for f in Assignment._meta.fields if f.name != "token"]
    exclude = ("token",)  # the participant's secret

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False  # an assignment holds ratings: human data is never deleted

    def get_queryset(self, request: HttpRequest) -> QuerySet[Assignment]:
        return super().get_queryset(request).annotate(rated_n=Count("ratings"))

    @admin.display(description="rated", ordering="rated_n")
    def rated(self, obj: Any) -> str:  # an Assignment counted by get_queryset
        return f"{obj.rated_n}/{len(obj.item_order)}"


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never added, changed or deleted by hand: ratings are the
    participants' own (exclusion is the researcher's tool), items stay as they
    were shown, audit events and payments as they happened."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(Rating)
class RatingAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = "item__study__project"
    list_display = ("assignment", "item", "score", "seconds", "created_at", "updated_at")
    list_filter = ("item__study",)
    list_select_related = ("assignment__participant", "assignment__task", "item")


@admin.register(Item)
class ItemAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = "study__project"
    list_display = ("question", "task", "kind")
    list_filter = ("study",)
    list_select_related = ("task",)
    search_fields = ("question",)


@admin.register(AuditEvent)
class AuditEventAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = "study__project"
    list_display = ("created_at", "study", "participant", "actor", "action", "detail")
    list_filter = ("study", "action")
    list_select_related = ("study", "participant", "actor")
