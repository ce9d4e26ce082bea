"""Evaluators (a judged one frozen) and their judgments (read-only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from corpus.protection import ProtectJudgedAdmin
from judging.evaluators import checked_judge
from judging.evaluators.config import ConfigError
from judging.evaluators.frozen import frozen_changes, frozen_message
from judging.judging_runs import (
    ensure_metric_evaluators,
)
from judging.models import (
    Evaluator,
    EvaluatorQuerySet,
    Judgment,
    PairwiseVerdict,
)
from users.admin_scope import ProjectScopedAdmin

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _JudgmentCount(TypedDict):
    judgment_count: int


class EvaluatorForm(forms.ModelForm):
    """An LLM judge's configuration is checked when saved (unknown settings,
    parameters the server does not accept, unknown template placeholders, a
    protocol for another kind of judge), and what it is (name, kind, raw
    scale, configuration) is frozen once it has judged: a changed judge is a
    new evaluator."""

    class Meta:
        model = Evaluator
        fields = [
            "project",
            "name",
            "kind",
            "description",
            "config",
            "raw_scale_min",
            "raw_scale_max",
        ]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        kind = cleaned.get("kind")
        if kind in (Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE):
            try:
                checked_judge(kind, cleaned.get("config") or {})
            except ConfigError as error:
                raise forms.ValidationError(f"Configuration: {error}") from None
        instance = self.instance
        if instance.pk:
            changed = {f: cleaned[f] for f in self.changed_data if f in cleaned}
            frozen = frozen_changes(instance, changed)
            if frozen:
                raise forms.ValidationError(frozen_message(instance, frozen))
        return cleaned


@admin.register(Evaluator)
class EvaluatorAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    """An evaluator that has judged cannot be deleted, and only its description changes."""

    shared_rows = True
    members_write = True

    form = EvaluatorForm
    list_display = (
        "name",
        "kind",
        "origin",
        "version",
        "raw_scale_min",
        "raw_scale_max",
        "judgment_count",
    )
    list_filter = ("kind", "origin")
    readonly_fields = ("origin",)
    protected_reason = "judgments or pairwise verdicts"
    correction = "a correction is a new evaluator"

    def protected(self, queryset: QuerySet[Evaluator]) -> QuerySet[Evaluator]:
        return queryset.filter(
            Exists(Judgment.objects.filter(evaluator=OuterRef("pk")))
            | Exists(PairwiseVerdict.objects.filter(evaluator=OuterRef("pk")))
        )

    search_fields = ("name", "description")
    actions = ["add_metric_evaluators"]

    @admin.action(description="Add the automatic metric evaluators (ROUGE, F1, exact match)")
    def add_metric_evaluators(self, request: HttpRequest, queryset: QuerySet[Evaluator]) -> None:
        names = [e.name for e in ensure_metric_evaluators()]
        messages.info(request, f"Available: {', '.join(names)}.")

    def get_queryset(self, request: HttpRequest) -> EvaluatorQuerySet:
        # the model's manager makes an EvaluatorQuerySet; the stubs say a QuerySet
        return cast(EvaluatorQuerySet, super().get_queryset(request)).with_counts()

    @admin.display(description="judgments", ordering="judgment_count")
    def judgment_count(self, obj: WithAnnotations[Evaluator, _JudgmentCount]) -> int:
        return obj.judgment_count


@admin.register(Judgment)
class JudgmentAdmin(ProjectScopedAdmin):
    """Judgments, read only: they come from runs, imports and studies, and are
    never edited or deleted by hand (a correction is a new run / a new study)."""

    project_path = "response__run__project"

    list_display = ("id", "evaluator", "system", "response", "rater", "seed", "score", "raw_score")
    list_filter = (
        "evaluator",
        "response__run__system",
        "response__run__dataset__split",
        "response__run__mode",
    )
    search_fields = ("rater", "response__text")
    list_select_related = ("evaluator", "response__run__system")
    raw_id_fields = ("response",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Judgment | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Judgment | None = None) -> bool:
        return False

    @admin.display(description="system", ordering="response__run__system__name")
    def system(self, obj: Judgment) -> str:
        return obj.response.run.system.name
