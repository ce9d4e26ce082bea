from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html, format_html_join

from corpus.protection import CORRECTION, ProtectJudgedAdmin, judged_summary
from generation.models import Response
from judging.evaluators import ModelJudge, checked_judge
from judging.evaluators.config import ConfigError
from judging.evaluators.frozen import frozen_changes, frozen_message
from judging.human_review import ReviewError, item_protocol, resolve_item
from judging.importing import start_benchmark_import
from judging.judging_runs import (
    JudgingError,
    cancel_run,
    ensure_metric_evaluators,
    resume_run,
    retry_failed,
    start_judging_run,
)
from judging.models import (
    BenchmarkImport,
    Evaluator,
    EvaluatorQuerySet,
    JudgeItem,
    JudgingRun,
    Judgment,
    PairwiseVerdict,
)
from judging.parsers import Verdict
from runs.admin import report_outcomes

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldGroups, _FieldsetSpec
    from django.forms.formsets import BaseFormSet
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
        fields = ["name", "kind", "description", "config", "raw_scale_min", "raw_scale_max"]

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
class EvaluatorAdmin(ProtectJudgedAdmin, admin.ModelAdmin):
    """An evaluator that has judged cannot be deleted, and only its description changes."""

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
class ResponseAdmin(ProtectJudgedAdmin, admin.ModelAdmin):
    """Responses with their scores. Registered here, not in generation, because
    the scores come from this app. Read only: a response is what its system
    answered; one that is judged cannot be deleted either."""

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


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    """Judgments, read only: they come from runs, imports and studies, and are
    never edited or deleted by hand (a correction is a new run / a new study)."""

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


@admin.register(BenchmarkImport)
class BenchmarkImportAdmin(admin.ModelAdmin):
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
            *self.fields,
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


class JudgingRunForm(forms.ModelForm):
    confirm_over_budget = forms.BooleanField(
        required=False,
        label="Start over the budget",
        help_text="Start even when the projected cost is above the budget (the run stops "
        "when the budget is spent).",
    )

    class Meta:
        model = JudgingRun
        fields = ["evaluator", "dataset", "mode", "systems", "budget", "refresh", "use_batch"]


@admin.register(JudgingRun)
class JudgingRunAdmin(admin.ModelAdmin):
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

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        ensure_metric_evaluators()  # so that the metrics are there to choose
        return super().add_view(request, form_url, extra_context)

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


class ResolveForm(forms.Form):
    """What a researcher enters for an item that needs a human; `answer()` is
    the typed value, which the judge's protocol checks."""

    def __init__(self, protocol: ModelJudge, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.protocol = protocol

    def answer(self) -> int | Verdict:
        """The typed value entered (each form of a kind of answer says how)."""
        raise NotImplementedError


class ScoreForm(ResolveForm):
    """A scoring judge's item: the score on the judge's own scale."""

    raw_score = forms.IntegerField()

    def __init__(self, protocol: ModelJudge, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        self.fields["raw_score"].label = f"Score the judge meant: {protocol.expected_answer}"

    def answer(self) -> int:
        return self.cleaned_data["raw_score"]


class VerdictForm(ResolveForm):
    """A pairwise judge's item: A, B or tie, never a number."""

    verdict = forms.ChoiceField(
        label="Verdict the judge meant",
        choices=[
            (Verdict.A.label, "A: the answer shown first"),
            (Verdict.B.label, "B: the answer shown second"),
            (Verdict.TIE.label, "Tie"),
        ],
        widget=forms.RadioSelect,
    )

    def answer(self) -> Verdict:
        return Verdict.from_label(self.cleaned_data["verdict"])


# The form for what a protocol's items are resolved with (ModelJudge.answer_kind).
RESOLVE_FORMS = {"score": ScoreForm, "verdict": VerdictForm}


@admin.register(JudgeItem)
class JudgeItemAdmin(admin.ModelAdmin):
    """Filter by "Needs a human": read the judge's raw answer, enter its score
    (or, for a pairwise judge, its verdict: A, B or tie)."""

    list_display = ("id", "run", "response", "seed", "status", "outcome", "attempts", "detail")
    list_filter = ("status", "outcome", "run__evaluator")
    list_select_related = ("run__evaluator",)
    raw_id_fields = ("response", "call")
    readonly_fields = (
        "run",
        "response",
        "opponent",
        "seed",
        "order",
        "status",
        "outcome",
        "attempts",
        "detail",
        "raw_answer",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="the judge's answer")
    def raw_answer(self, obj: JudgeItem) -> str:
        if obj.call is None:
            return "-"
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", obj.call.raw_output)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        item = self.get_object(request, object_id)
        needs_human = item is not None and item.status == JudgeItem.Status.NEEDS_HUMAN
        form = None
        if needs_human and item is not None:
            try:
                protocol = item_protocol(item)
            except ConfigError as error:
                messages.error(request, f"The judge's configuration cannot be read: {error}")
                needs_human = False
            else:
                form = RESOLVE_FORMS[protocol.answer_kind](protocol, request.POST or None)
        if request.method == "POST" and form is not None and item is not None:
            if not form.is_valid():
                messages.error(request, f"Nothing stored: {form.errors.as_text()}")
            else:
                try:
                    resolve_item(item, form.answer(), request.user)
                    messages.info(request, f"{protocol.answer_kind.capitalize()} stored.")
                except ReviewError as error:
                    messages.error(request, str(error))
            from django.http import HttpResponseRedirect

            return HttpResponseRedirect(request.path)
        extra_context = {
            **(extra_context or {}),
            "resolve_form": form,
            "needs_human": needs_human,
            "answer_kind": protocol.answer_kind if form is not None else "",
        }
        return super().change_view(request, object_id, form_url, extra_context)

    change_form_template = "admin/judging/judgeitem/change_form.html"
