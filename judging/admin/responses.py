"""Responses with their scores (read-only once judged)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from corpus.protection import CORRECTION, ProtectJudgedAdmin, judged_summary
from generation.models import Response
from judging.models import (
    Judgment,
)
from users.admin_scope import ProjectScopedAdmin

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldsetSpec


class JudgmentInline(admin.TabularInline):
    model = Judgment
    extra = 0
    fields = ("evaluator", "rater", "seed", "order", "score", "raw_score", "feedback")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Response | None = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Judgment]:
        return super().get_queryset(request).select_related("evaluator")


@admin.register(Response)
class ResponseAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    """Responses with their scores. Registered here, not in generation, because
    the scores come from this app. Read only: a response is what its system
    answered; one that is judged cannot be deleted either."""

    project_path = "run__project"

    list_display = (
        "id",
        "system",
        "question_label",
        "mode",
        "split",
        "version",
        "scores",
        "short_text",
    )
    list_filter = (
        "run__system",
        "run__mode",
        "run__dataset__version",
        "run__dataset__split",
        "question__question_type",
        "question__answer_position",
        "judgments__evaluator",
    )
    search_fields = ("text", "question__texts__text", "question__document__external_id")
    list_select_related = ("run__system", "run__dataset", "question__document")
    readonly_fields = ("run", "question", "question_and_reference", "created_at")
    fields = ("run", "question", "question_and_reference", "text", "created_at")
    inlines = (JudgmentInline,)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Response | None = None) -> bool:
        return False

    def get_fieldsets(self, request: HttpRequest, obj: Response | None = None) -> _FieldsetSpec:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        summary = judged_summary([obj.pk])
        note = (
            f"Read-only: this response has {summary}: {CORRECTION}."
            if summary
            else "Read-only: a response is what its system answered; a correction is a new run."
        )
        name, options = fieldsets[0]
        return ((name, {**options, "description": note}), *fieldsets[1:])

    def get_queryset(self, request: HttpRequest) -> QuerySet[Response]:
        return (
            super()
            .get_queryset(request)
            .defer("question__document__text")
            .prefetch_related("judgments__evaluator")
        )

    @admin.display(description="system", ordering="run__system__name")
    def system(self, obj: Response) -> str:
        return obj.run.system.name

    @admin.display(description="question", ordering="question__document__external_id")
    def question_label(self, obj: Response) -> str:
        return f"{obj.question.document.external_id} #{obj.question.external_id}"

    @admin.display(description="mode")
    def mode(self, obj: Response) -> str:
        return obj.run.mode

    @admin.display(description="split")
    def split(self, obj: Response) -> str:
        return obj.run.dataset.split

    @admin.display(description="version")
    def version(self, obj: Response) -> str:
        return obj.run.dataset.version

    @admin.display(description="scores")
    def scores(self, obj: Response) -> str:
        judgments = sorted(obj.judgments.all(), key=lambda j: (j.evaluator.name, j.rater))
        return format_html_join(
            ", ", "{}: {}", ((j.evaluator.name, f"{j.score:g}") for j in judgments)
        )

    @admin.display(description="response")
    def short_text(self, obj: Response) -> str:
        return obj.text[:120] + ("…" if len(obj.text) > 120 else "")

    @admin.display(description="question and reference answer (this run's dataset)")
    def question_and_reference(self, obj: Response) -> str:
        wording = obj.question.texts.filter(dataset=obj.run.dataset).first()
        if wording is None:
            return "-"
        return format_html(
            "<p><b>Q:</b> {}</p><p><b>Reference:</b> {}</p>", wording.text, wording.reference_answer
        )
