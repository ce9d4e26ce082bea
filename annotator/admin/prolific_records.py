"""Read-only admin pages of bonuses and participant groups: money paid and
groups kept on Prolific change only through annotator.actions (bonuses,
groups), which keep each payment at most once and each group equal to
Prolific's."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from annotator.admin.records import ReadOnlyAdmin
from annotator.models import BonusLine, BonusPayment, ParticipantGroup, ParticipantGroupMember
from users.admin_scope import ProjectScopedAdmin


class BonusLineInline(admin.TabularInline):
    model = BonusLine
    extra = 0
    can_delete = False
    readonly_fields = ("participant", "amount")

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(BonusPayment)
class BonusPaymentAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = "study__project"
    list_display = ("pk", "study", "status", "reason", "total_pence", "created_at", "paid_at")
    list_filter = ("status", "study")
    list_select_related = ("study",)
    inlines = [BonusLineInline]


class MemberInline(admin.TabularInline):
    model = ParticipantGroupMember
    extra = 0
    can_delete = False
    readonly_fields = ("prolific_pid", "reason", "study", "added_at")

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(ParticipantGroup)
class ParticipantGroupAdmin(ProjectScopedAdmin, ReadOnlyAdmin):
    project_path = None
    list_display = ("name", "kind", "prolific_id", "created_at")
    inlines = [MemberInline]
