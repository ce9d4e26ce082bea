"""The admin of studies: the settings form (the same checks as saving), the
study page (participant link, progress, quality control, feedback) and the
study actions (build, open / pause / close, refill, exports, scores, Prolific)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localdate

from annotator import exports, selectors
from annotator.actions.items import check_build_items
from annotator.actions.judgments import check_sync_study_judgments
from annotator.actions.participants import check_refill_quota
from annotator.actions.prolific_sync import (
    check_create_on_prolific,
    check_publish_on_prolific,
    check_sync_prolific_submissions,
    is_local_url,
    prolific_study_url,
)
from annotator.actions.settings import check_delete_study, check_save_study, validate_study_change
from annotator.actions.status import check_set_study_status
from annotator.admin.common import csv_response, for_each_on_prolific, public_base_url
from annotator.completion import completion_url
from annotator.errors import StudyError
from annotator.models import Study
from annotator.prolific_api import ProlificClient, ProlificError, prolific_client_or_none
from annotator.quality import participant_quality
from annotator.wording import refill_result_summary
from core.downloads import export_filename
from core.spreadsheet import csv_text
from core.words import count
from corpus.models import Dataset
from users.admin_scope import ProjectScopedAdmin
from users.permissions import signed_in_user

STUDY_FIELDS = [
    "project",
    "name",
    "kind",
    "rating_type",
    "dataset",
    "mode",
    "seed",
    "systems",
    "baseline_system",
    "documents",
    "attention_checks",
    "practice_items",
    "practice_pass",
    "scale_max",
    "scale_labels",
    "raters_per_task",
    "estimated_minutes",
    "hourly_pay",
    "stale_after_minutes",
    "completion_code",
    "failed_attention_code",
    "screen_out_pence",
    "screen_out_code",
    "transcript_for_crowd",
    "guidelines",
    "rubric",
    "gold_evaluator",
    "min_gold_correlation",
    "min_median_seconds",
]


class StudyForm(forms.ModelForm):
    """Checks everything annotator.actions.settings.check_save_study would refuse, before saving:
    settings, meetings of another dataset, a selection without responses, a
    gold evaluator with no scores on it, changes of what is rated after arrivals."""

    # The admin's add page sets it from ?dataset= (the dataset picker reloads with it).
    dataset_hint: str | None = None

    class Meta:
        model = Study
        fields = STUDY_FIELDS

    def __init__(self, *args: Any, dataset_id: int | str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        dataset_id = (
            dataset_id
            or self.dataset_hint
            or self.instance.dataset_id
            or self.initial.get("dataset")
        )
        # screening out is optional: left empty, none (and the code it has)
        for name in ("screen_out_pence", "screen_out_code"):
            if name in self.fields:
                self.fields[name].required = False
        documents = self.fields.get("documents")
        # the dataset whose meetings the form offers (None: not chosen yet)
        self.chosen_dataset = (
            Dataset.objects.filter(pk=dataset_id).first()
            if dataset_id and str(dataset_id).isdigit()
            else None
        )
        if isinstance(documents, forms.ModelChoiceField) and self.chosen_dataset:
            dataset = self.chosen_dataset
            if dataset is not None:
                # Only the chosen dataset's meetings (the picker listed all 18 before).
                documents.queryset = selectors.documents_for(dataset).order_by("external_id")
                documents.help_text = f"Meetings of {dataset}; none selected: all."

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if "screen_out_pence" in self.fields and cleaned.get("screen_out_pence") is None:
            cleaned["screen_out_pence"] = 0
        if "screen_out_code" in self.fields and not cleaned.get("screen_out_code"):
            cleaned["screen_out_code"] = self.instance.screen_out_code
        if self.errors:
            return cleaned
        try:
            validate_study_change(
                self.instance,
                cleaned,
                cleaned.get("systems") or [],
                cleaned.get("documents") or [],
                list(self.changed_data),
            )
        except StudyError as error:
            raise forms.ValidationError(str(error)) from None
        return cleaned


@admin.register(Study)
class StudyAdmin(ProjectScopedAdmin):
    """Studies: selection, texts, pay, codes, states, participants, quality control."""

    form = StudyForm
    members_write = True  # a study's texts, scale, pay and codes are set here
    _request: HttpRequest  # the request of the page being drawn (see get_form)

    class Media:
        js = ("annotator/admin_study.js",)

    list_display = (
        "name",
        "kind",
        "rating_type",
        "status",
        "task_count",
        "item_count",
        "participant_count",
        "rating_count",
    )
    list_filter = ("kind", "rating_type", "status")
    search_fields = ("name",)
    filter_horizontal = ("systems", "documents", "gold_annotators")
    autocomplete_fields = ("dataset", "gold_evaluator")
    readonly_fields = (
        "status",
        "chosen_responses",
        "evaluator",
        "participant_link",
        "progress",
        "quality_table",
        "feedback_table",
        "prolific_study_id",
    )
    actions = [
        "open_action",
        "pause_action",
        "close_action",
        "refill_action",
        "build_items_action",
        "export_tidy",
        "export_wide",
        "sync_judgments_action",
        "prolific_create_action",
        "prolific_publish_action",
        "prolific_sync_action",
    ]
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "project",
                    "name",
                    "kind",
                    "status",
                    "evaluator",
                    "participant_link",
                    "progress",
                )
            },
        ),
        (
            "What is rated",
            {
                "description": "Choose the dataset first: the meetings list then shows its "
                "meetings only.",
                "fields": (
                    "rating_type",
                    "dataset",
                    "mode",
                    "seed",
                    "systems",
                    "baseline_system",
                    "documents",
                    "chosen_responses",
                    "attention_checks",
                ),
            },
        ),
        ("Scale", {"fields": ("scale_max", "scale_labels")}),
        (
            "Work",
            {
                "fields": (
                    "raters_per_task",
                    "estimated_minutes",
                    "hourly_pay",
                    "stale_after_minutes",
                    "completion_code",
                    "failed_attention_code",
                    "screen_out_pence",
                    "screen_out_code",
                    "transcript_for_crowd",
                    "prolific_study_id",
                )
            },
        ),
        (
            "Qualification round",
            {"classes": ("collapse",), "fields": ("practice_items", "practice_pass")},
        ),
        ("Texts", {"classes": ("collapse",), "fields": ("guidelines", "rubric")}),
        (
            "Quality control",
            {
                "fields": (
                    "gold_evaluator",
                    "min_gold_correlation",
                    "min_median_seconds",
                    "quality_table",
                    "feedback_table",
                )
            },
        ),
    )

    @admin.display(description="Chosen responses")
    def chosen_responses(self, obj: Study | None) -> str:
        """A study the report's planner created rates only the responses it chose."""
        if obj is None or obj.pk is None:
            return "-"
        count = obj.responses.count()
        return f"{count} chosen by the report's planner" if count else "all of the selection"

    def get_form(
        self, request: HttpRequest, obj: Study | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        self._request = request
        form = super().get_form(request, obj, change=change, **kwargs)
        hint = request.GET.get("dataset") if obj is None else None
        return type("BoundStudyForm", (form,), {"dataset_hint": hint})

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial = super().get_changeform_initial_data(request)
        initial.setdefault("practice_items", [])
        return initial

    def has_delete_permission(self, request: HttpRequest, obj: Study | None = None) -> bool:
        # Human data is never deleted: a study with participants is closed instead.
        if obj is not None and obj.participants.exists():
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_model(self, request: HttpRequest, obj: Study) -> None:
        check_delete_study(obj)

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[Any], list[Any]]:
        # Items and audit events are never deleted one by one (no permission for
        # that), but they go with a study nobody took part in: delete_study decides.
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def save_model(
        self, request: HttpRequest, obj: Study, form: forms.ModelForm[Any], change: bool
    ) -> None:
        check_save_study(
            obj,
            list(form.changed_data),
            actor=signed_in_user(request),
            after_save=lambda _: form.save_m2m(),
        )
        counts = obj.items.count()
        messages.info(request, f"{obj}: {obj.tasks.count()} tasks, {counts} items.")

    def save_related(
        self, request: HttpRequest, form: forms.ModelForm[Any], formsets: Any, change: bool
    ) -> None:
        for formset in formsets:  # many-to-many fields were saved by save_study
            self.save_formset(request, form, formset, change=change)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Study]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                tasks_n=Count("tasks", distinct=True),
                items_n=Count("items", distinct=True),
                participants_n=Count("participants", distinct=True),
                ratings_n=Count("items__ratings", distinct=True),
            )
        )

    @admin.display(description="tasks", ordering="tasks_n")
    def task_count(self, obj: Any) -> int:  # counted by get_queryset
        return obj.tasks_n

    @admin.display(description="items", ordering="items_n")
    def item_count(self, obj: Any) -> int:  # counted by get_queryset
        return obj.items_n

    @admin.display(description="participants", ordering="participants_n")
    def participant_count(self, obj: Any) -> int:  # counted by get_queryset
        return obj.participants_n

    @admin.display(description="ratings", ordering="ratings_n")
    def rating_count(self, obj: Any) -> int:  # counted by get_queryset
        return obj.ratings_n

    @admin.display(description="participant link")
    def participant_link(self, obj: Study) -> str:
        if not obj.pk:
            return "Save first."
        if obj.kind == Study.Kind.GOLD:
            return format_html(
                "Gold annotators sign in at <code>{}</code>",
                self._absolute(reverse("annotator:gold_home")),
            )
        base = public_base_url(self._request)
        url = prolific_study_url(obj, base)
        warning = ""
        if is_local_url(base):
            warning = format_html(
                "<p class='errornote' id='local-url-warning'>This link points at {}, which "
                "Prolific's participants cannot reach. Set CONCORD_PUBLIC_URL to the address "
                "Concord is served at.</p>",
                base,
            )
        return format_html(
            "{}<p>Paste into Prolific (study URL, with URL parameters on):</p>"
            "<input id='prolific-url' readonly size='100' value='{}'> "
            "<button type='button' class='button' id='copy-prolific-url' "
            "onclick=\"navigator.clipboard.writeText(document.getElementById('prolific-url')"
            ".value).then(()=>{{this.textContent='Copied'}})\">Copy</button>"
            "<p>Completion URL: {}</p>",
            warning,
            url,
            completion_url(obj.completion_code),
        )

    def _absolute(self, path: str) -> str:
        return public_base_url(self._request).rstrip("/") + path

    @admin.display(description="progress (participants)")
    def progress(self, obj: Study) -> str:
        if not obj.pk:
            return "-"
        rows = selectors.progress(obj)
        body = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>",
            (
                (
                    r.label,
                    r.items,
                    r.active,
                    r.completed,
                    r.wanted,
                    r.excluded,
                    r.released,
                    r.open_places,
                )
                for r in rows
            ),
        )
        return format_html(
            "<table id='study-progress'><tr><th>task</th><th>items</th><th>working now</th>"
            "<th>completed (accepted) / wanted</th><th>excluded</th><th>released</th>"
            "<th>open places</th></tr>{}<tr><th>total</th><td></td><td>{}</td>"
            "<td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
            body,
            sum(r.active for r in rows),
            sum(r.completed for r in rows),
            sum(r.wanted for r in rows),
            sum(r.excluded for r in rows),
            sum(r.released for r in rows),
            sum(r.open_places for r in rows),
        )

    @admin.display(description="participants: quality control")
    def quality_table(self, obj: Study) -> str:
        if not obj.pk:
            return "-"
        rows = format_html_join(
            "",
            "<tr><td><a href='{}'>{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    reverse("admin:annotator_participant_change", args=[q.participant_id]),
                    q.rater,
                    q.status,
                    q.task,
                    q.assignment_status,
                    q.ratings,
                    "-" if q.median_seconds is None else f"{q.median_seconds:.1f}",
                    {None: "-", True: "passed", False: "FAILED"}[q.attention_passed],
                    "-" if q.gold_correlation is None else f"{q.gold_correlation:.2f}",
                    "same score everywhere" if q.straight_lined else "",
                    ", ".join(q.other_session_ids),
                    q.flag_reason if q.flagged else "",
                )
                for q in participant_quality(obj)
            ),
        )
        return format_html(
            "<table class='concord-quality'><tr><th>participant</th><th>status</th><th>task</th>"
            "<th>assignment</th><th>ratings</th><th>median s/item</th><th>attention</th>"
            "<th>r with gold</th><th>straight-lining</th><th>other SESSION_IDs</th>"
            "<th>flag</th></tr>{}</table>",
            rows,
        )

    @admin.display(description="raters' comments and flags")
    def feedback_table(self, obj: Study) -> str:
        if not obj.pk:
            return "-"
        rows = exports.feedback_rows(obj)
        if not rows:
            return "None yet."
        return format_html(
            "<table id='study-feedback'><tr><th>task</th><th>question</th><th>participant</th>"
            "<th>flag</th><th>comment</th></tr>{}</table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                (
                    (
                        r["task"],
                        r["question"][:120],
                        r["participant"],
                        r["flag_label"],
                        r["comment"],
                    )
                    for r in rows
                ),
            ),
        )

    def _for_each(
        self, request: HttpRequest, queryset: QuerySet[Study], work: Callable[[Study], str]
    ) -> None:
        for study in queryset:
            try:
                messages.info(request, f"{study}: {work(study)}")
            except StudyError as error:
                messages.error(request, f"{study}: {error}")

    @admin.action(description="Build (or rebuild) items from the selection")
    def build_items_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        def build(study: Study) -> str:
            counts = check_build_items(study, actor=signed_in_user(request))
            return f"{count(counts['tasks'], 'task')}, {count(counts['items'], 'item')}."

        self._for_each(request, queryset, build)

    def _set_status(self, request: HttpRequest, queryset: QuerySet[Study], status: str) -> None:
        def change(study: Study) -> str:
            study = check_set_study_status(study, status, signed_in_user(request))
            return f"now {study.get_status_display().lower()}."

        self._for_each(request, queryset, change)

    @admin.action(description="Open (or reopen) for participants")
    def open_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        self._set_status(request, queryset, Study.Status.OPEN)

    @admin.action(description="Pause: no new arrivals; work in progress may finish")
    def pause_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        self._set_status(request, queryset, Study.Status.PAUSED)

    @admin.action(description="Close: no arrivals, no more ratings")
    def close_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        self._set_status(request, queryset, Study.Status.CLOSED)

    @admin.action(description="Refill the quota (release stale work; Prolific: raise places)")
    def refill_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        def refill(study: Study) -> str:
            client = prolific_client_or_none() if study.prolific_study_id else None
            result = check_refill_quota(study, signed_in_user(request), client=client)
            return refill_result_summary(result, study)

        try:
            self._for_each(request, queryset, refill)
        except ProlificError as error:
            messages.error(request, str(error))

    @admin.action(description="Export ratings (CSV, one row per rating)")
    def export_tidy(self, request: HttpRequest, queryset: QuerySet[Study]) -> HttpResponse:
        rows = [row for study in queryset for row in exports.tidy_rows(study)]
        name = export_filename(exports.ratings_subject(queryset), "csv", localdate())
        return csv_response(csv_text(exports.TIDY_COLUMNS, rows), name)

    @admin.action(description="Export ratings (CSV, one column per rater)")
    def export_wide(self, request: HttpRequest, queryset: QuerySet[Study]) -> HttpResponse | None:
        if queryset.count() != 1:
            messages.error(request, "Choose one study for the wide export.")
            return None
        study = queryset.get()
        columns, rows = exports.wide_rows(study)
        name = export_filename(exports.ratings_subject([study]), "csv-wide", localdate())
        return csv_response(csv_text(columns, rows), name)

    @admin.action(description="Update the study's scores for the analysis")
    def sync_judgments_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        for study in queryset:
            count = check_sync_study_judgments(study)
            study.refresh_from_db()
            messages.info(request, f"{study.evaluator}: {count} judgments.")

    @admin.action(description="Prolific: create as a draft study")
    def prolific_create_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        def create(client: ProlificClient, study: Study) -> str:
            study_id = check_create_on_prolific(
                study, client, public_base_url(request), signed_in_user(request)
            )
            return f"{study}: created on Prolific as {study_id}."

        for_each_on_prolific(request, queryset, create)

    @admin.action(description="Prolific: publish")
    def prolific_publish_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        def publish(client: ProlificClient, study: Study) -> str:
            check_publish_on_prolific(study, client, signed_in_user(request))
            return f"{study}: published on Prolific."

        for_each_on_prolific(request, queryset, publish)

    @admin.action(description="Prolific: sync submissions (release returned and timed-out places)")
    def prolific_sync_action(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        def sync(client: ProlificClient, study: Study) -> str:
            counts = check_sync_prolific_submissions(study, client)
            released = counts["released"]
            return f"{study}: {counts['submissions']} submissions, {released} places released."

        for_each_on_prolific(request, queryset, sync)
