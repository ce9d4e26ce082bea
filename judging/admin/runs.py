"""Benchmark imports and judging runs: started, watched, resumed from the admin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from judging.forms import JudgingRunForm
from judging.importing import start_benchmark_import
from judging.judging_runs import (
    JudgingError,
    cancel_run,
    resume_run,
    retry_failed,
    start_judging_run,
)
from judging.models import (
    BenchmarkImport,
    JudgingRun,
)
from runs.admin import report_outcomes
from users.admin_scope import ProjectScopedAdmin

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldGroups
    from django.forms.formsets import BaseFormSet


@admin.register(BenchmarkImport)
class BenchmarkImportAdmin(ProjectScopedAdmin):
    """Start an ELITR-Bench import from the admin; a Celery worker runs it and
    this page shows its stage, progress and summary."""

    list_display = (
        "id",
        "status",
        "progress",
        "stage",
        "source_label",
        "created_at",
        "finished_at",
    )
    list_filter = ("status",)
    fields = ("source", "versions", "languages", "with_responses")
    readonly_fields = ()

    def get_readonly_fields(
        self, request: HttpRequest, obj: BenchmarkImport | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        return (
            "kind",
            *self.fields,
            "options",
            "status",
            "stage",
            "progress",
            "summary",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        )

    def get_fields(self, request: HttpRequest, obj: BenchmarkImport | None = None) -> _FieldGroups:
        return self.get_readonly_fields(request, obj) or self.fields

    def has_change_permission(
        self, request: HttpRequest, obj: BenchmarkImport | None = None
    ) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    @admin.display(description="source")
    def source_label(self, obj: BenchmarkImport) -> str:
        return obj.source or "(default)"

    @admin.display(description="progress")
    def progress(self, obj: BenchmarkImport) -> str:
        if not obj.total:
            return "-"
        return f"{obj.done}/{obj.total}"

    @admin.display(description="summary or error")
    def summary(self, obj: BenchmarkImport) -> str:
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", obj.message)

    def save_model(
        self,
        request: HttpRequest,
        obj: BenchmarkImport,
        form: forms.ModelForm[BenchmarkImport],
        change: bool,
    ) -> None:
        job = start_benchmark_import(
            obj.source, obj.versions, obj.languages, obj.with_responses, request.user
        )
        obj.pk = job.pk
        if job.status == BenchmarkImport.Status.FAILED:
            messages.error(request, f"Import #{job.pk} not started: {job.message}")
        else:
            messages.info(
                request,
                f"Import #{job.pk} queued: a Celery worker will run it; reload for progress.",
            )


@admin.register(JudgingRun)
class JudgingRunAdmin(ProjectScopedAdmin):
    """Start an evaluator over responses; a Celery worker runs it, this page
    shows done/total and what failed."""

    form = JudgingRunForm
    list_display = (
        "id",
        "evaluator",
        "dataset",
        "mode",
        "status",
        "progress",
        "failed",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "evaluator")
    list_select_related = ("evaluator", "dataset__benchmark")
    filter_horizontal = ("systems",)
    actions = ["cancel_action", "resume_action", "retry_failed_action"]

    def get_readonly_fields(
        self, request: HttpRequest, obj: JudgingRun | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        return (
            "console_page",
            "evaluator",
            "dataset",
            "mode",
            "systems_chosen",
            "status",
            "total",
            "done",
            "failed",
            "message",
            "requests",
            "cache_hits",
            "prompt_tokens",
            "completion_tokens",
            "cost_so_far",
            "eta",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        )

    def get_fields(self, request: HttpRequest, obj: JudgingRun | None = None) -> _FieldGroups:
        return (
            self.get_readonly_fields(request, obj)
            if obj is not None
            else super().get_fields(request, obj)
        )

    def has_change_permission(self, request: HttpRequest, obj: JudgingRun | None = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)

    @admin.display(description="done / total")
    def progress(self, obj: JudgingRun) -> str:
        return f"{obj.done}/{obj.total}"

    @admin.display(description="systems")
    def systems_chosen(self, obj: JudgingRun) -> str:
        names = [s.name for s in obj.systems.all()]
        return ", ".join(names) if names else "every system of the dataset"

    @admin.display(description="live progress")
    def console_page(self, obj: JudgingRun) -> str:
        from django.urls import reverse

        url = reverse("console:run", args=["judging", obj.pk])
        return format_html(
            "<a href='{}'>Open the run in the console</a> (progress, failures by cause, "
            "cancel / resume / retry)",
            url,
        )

    @admin.display(description="cost")
    def cost_so_far(self, obj: JudgingRun) -> str:
        return f"{obj.cost:.4f}" + (f" / {obj.budget}" if obj.budget is not None else "")

    @admin.display(description="ETA")
    def eta(self, obj: JudgingRun) -> str:
        if obj.status != JudgingRun.Status.RUNNING or not obj.started_at or not obj.done:
            return "-"
        from django.utils import timezone

        elapsed = (timezone.now() - obj.started_at).total_seconds()
        remaining = elapsed / (obj.done + obj.failed or 1) * (obj.total - obj.done - obj.failed)
        return f"{remaining / 60:.1f} min"

    def save_model(
        self, request: HttpRequest, obj: JudgingRun, form: JudgingRunForm, change: bool
    ) -> None:
        try:
            run = start_judging_run(
                obj.evaluator,
                obj.dataset,
                obj.mode,
                form.cleaned_data.get("systems") or [],
                request.user,
                budget=obj.budget,
                refresh=obj.refresh,
                use_batch=obj.use_batch,
                confirm_over_budget=form.cleaned_data.get("confirm_over_budget", False),
                project=obj.project,
            )
        except JudgingError as error:
            messages.error(request, f"Not started: {error}")
            return
        obj.pk = run.pk
        if run.status == JudgingRun.Status.FAILED:
            messages.error(request, f"Run {run.pk} not started: {run.message}")
        else:
            messages.info(request, f"Run {run.pk} queued: {run.total} responses.")

    def save_related(
        self,
        request: HttpRequest,
        form: JudgingRunForm,
        formsets: list[BaseFormSet[Any]],
        change: bool,
    ) -> None:
        return None  # create_judging_run saved the systems

    def response_add(
        self, request: HttpRequest, obj: JudgingRun, post_url_continue: str | None = None
    ) -> HttpResponse:
        from django.http import HttpResponseRedirect
        from django.urls import reverse

        return HttpResponseRedirect(reverse("admin:judging_judgingrun_changelist"))

    @admin.action(description="Cancel selected runs")
    def cancel_action(self, request: HttpRequest, queryset: QuerySet[JudgingRun]) -> None:
        report_outcomes(request, [cancel_run(run) for run in queryset])

    @admin.action(description="Resume selected runs (pending items only)")
    def resume_action(self, request: HttpRequest, queryset: QuerySet[JudgingRun]) -> None:
        report_outcomes(request, [resume_run(run) for run in queryset.select_related("evaluator")])

    @admin.action(description="Retry failed items of selected runs (ask again, then resume)")
    def retry_failed_action(self, request: HttpRequest, queryset: QuerySet[JudgingRun]) -> None:
        report_outcomes(
            request, [retry_failed(run) for run in queryset.select_related("evaluator")]
        )
