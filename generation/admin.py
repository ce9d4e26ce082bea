from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from corpus.protection import ProtectJudgedAdmin
from generation.config import GenerationConfig, GenerationConfigError
from generation.models import GenerationRun, GenerationRunQuerySet, System
from generation.runner import (
    GenerationError,
    cancel_generation_run,
    resume_generation_run,
    start_generation_run,
)
from runs.admin import report_outcomes
from users.admin_scope import ProjectScopedAdmin

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _ResponseCount(TypedDict):
    response_count: int


class SystemForm(forms.ModelForm):
    """A generated-by-Concord system's configuration is checked when saved."""

    class Meta:
        model = System
        fields = ["project", "name", "model_name", "backend", "config", "description"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("backend") in (System.Backend.HF, System.Backend.OPENAI):
            try:
                GenerationConfig.from_dict(cleaned.get("config") or {})
            except (GenerationConfigError, TypeError) as error:
                raise forms.ValidationError(f"Configuration: {error}") from None
        return cleaned


@admin.register(System)
class SystemAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    shared_rows = True
    members_write = True  # a system's model and decoding configuration live here
    judged_path = "run__system"
    form = SystemForm
    list_display = ("name", "model_name", "backend")
    list_filter = ("backend",)
    search_fields = ("name", "model_name")


class GenerationRunForm(forms.ModelForm):
    class Meta:
        model = GenerationRun
        fields = ["project", "system", "dataset", "mode", "seed"]


@admin.register(GenerationRun)
class GenerationRunAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    """Start a run (a worker of the gpu or llm queue makes it); see done/total.
    A run whose responses are judged cannot be deleted."""

    judged_path = "run"

    form = GenerationRunForm
    list_display = (
        "__str__",
        "system",
        "dataset",
        "mode",
        "seed",
        "origin",
        "status",
        "progress",
        "generated_tokens",
        "response_count",
    )
    list_filter = (
        "system",
        "dataset__version",
        "dataset__split",
        "dataset__language",
        "mode",
        "origin",
        "status",
    )
    list_select_related = ("system", "dataset__benchmark")
    actions = ["cancel_action", "resume_action"]

    def get_queryset(self, request: HttpRequest) -> GenerationRunQuerySet:
        # the model's manager makes a GenerationRunQuerySet; the stubs say a QuerySet
        return cast(GenerationRunQuerySet, super().get_queryset(request)).with_counts()

    def get_readonly_fields(
        self, request: HttpRequest, obj: GenerationRun | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        return (
            "console_page",
            "system",
            "dataset",
            "mode",
            "seed",
            "origin",
            "status",
            "source",
            "total",
            "done",
            "generated_tokens",
            "message",
            "started_at",
            "finished_at",
            "created_at",
            "updated_at",
        )

    def has_change_permission(self, request: HttpRequest, obj: GenerationRun | None = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    @admin.display(description="live progress")
    def console_page(self, obj: GenerationRun) -> str:
        url = reverse("console:run", args=["generation", obj.pk])
        return format_html("<a href='{}'>Open the run in the console</a>", url)

    @admin.display(description="responses", ordering="response_count")
    def response_count(self, obj: WithAnnotations[GenerationRun, _ResponseCount]) -> int:
        return obj.response_count

    @admin.display(description="done / total")
    def progress(self, obj: GenerationRun) -> str:
        return f"{obj.done}/{obj.total}" if obj.total else "-"

    @admin.display(description="tokens/s")
    def tokens_per_second(self, obj: GenerationRun) -> str:
        return "-" if obj.tokens_per_second is None else f"{obj.tokens_per_second:.1f}"

    @admin.display(description="ETA")
    def eta(self, obj: GenerationRun) -> str:
        return "-" if obj.eta_seconds is None else f"{obj.eta_seconds / 60:.1f} min"

    def save_model(
        self, request: HttpRequest, obj: GenerationRun, form: GenerationRunForm, change: bool
    ) -> None:
        try:
            run = start_generation_run(obj.system, obj.dataset, obj.mode, obj.seed, obj.project)
        except GenerationError as error:
            messages.error(request, f"Not started: {error}")
            return
        obj.pk = run.pk
        if run.status == GenerationRun.Status.FAILED:
            messages.error(request, f"Run {run.pk} not started: {run.message}")
        else:
            messages.info(request, f"Run {run.pk} queued on '{run.queue()}'.")

    def response_add(
        self, request: HttpRequest, obj: GenerationRun, post_url_continue: str | None = None
    ) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:generation_generationrun_changelist"))

    @admin.action(description="Cancel selected runs")
    def cancel_action(self, request: HttpRequest, queryset: QuerySet[GenerationRun]) -> None:
        report_outcomes(request, [cancel_generation_run(run) for run in queryset])

    @admin.action(description="Resume selected runs (what is not answered yet)")
    def resume_action(self, request: HttpRequest, queryset: QuerySet[GenerationRun]) -> None:
        report_outcomes(
            request, [resume_generation_run(run) for run in queryset.select_related("system")]
        )
