from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from annotator import exports, services
from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study, Task
from annotator.prolific import REJECTION_CATEGORIES, ProlificClient, ProlificError
from annotator.quality import participant_quality

SELECTION_FIELDS = ("kind", "dataset", "mode", "seed", "systems", "documents", "attention_checks")


class StudyForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = [
            "name",
            "kind",
            "status",
            "dataset",
            "mode",
            "seed",
            "systems",
            "documents",
            "attention_checks",
            "raters_per_task",
            "estimated_minutes",
            "hourly_pay",
            "stale_after_minutes",
            "completion_code",
            "failed_attention_code",
            "guidelines",
            "rubric",
            "gold_evaluator",
            "min_gold_correlation",
        ]

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk and services.has_ratings(self.instance):
            changed = [f for f in SELECTION_FIELDS if f in self.changed_data]
            if changed:
                raise forms.ValidationError(
                    f"This study already has ratings, so what it rates cannot change "
                    f"({', '.join(changed)}). Create a new study instead."
                )
        return cleaned


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    """Studies: selection, texts, pay, codes, quality control and exports."""

    form = StudyForm
    list_display = (
        "name",
        "kind",
        "status",
        "task_count",
        "item_count",
        "participant_count",
        "rating_count",
    )
    list_filter = ("kind", "status")
    search_fields = ("name",)
    filter_horizontal = ("systems", "documents")
    autocomplete_fields = ("dataset", "gold_evaluator")
    readonly_fields = ("participant_link", "progress", "quality_table", "prolific_study_id")
    actions = [
        "build_items_action",
        "open_action",
        "close_action",
        "export_tidy",
        "export_wide",
        "sync_judgments_action",
        "release_stale_action",
        "prolific_create_action",
        "prolific_publish_action",
        "prolific_sync_action",
    ]
    fieldsets = (
        (None, {"fields": ("name", "kind", "status", "participant_link", "progress")}),
        (
            "What is rated",
            {"fields": ("dataset", "mode", "seed", "systems", "documents", "attention_checks")},
        ),
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
                    "prolific_study_id",
                )
            },
        ),
        ("Texts", {"classes": ("collapse",), "fields": ("guidelines", "rubric")}),
        (
            "Quality control",
            {"fields": ("gold_evaluator", "min_gold_correlation", "quality_table")},
        ),
    )

    def get_queryset(self, request):
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
    def task_count(self, obj):
        return obj.tasks_n

    @admin.display(description="items", ordering="items_n")
    def item_count(self, obj):
        return obj.items_n

    @admin.display(description="participants", ordering="participants_n")
    def participant_count(self, obj):
        return obj.participants_n

    @admin.display(description="ratings", ordering="ratings_n")
    def rating_count(self, obj):
        return obj.ratings_n

    @admin.display(description="participant link")
    def participant_link(self, obj):
        if not obj.pk:
            return "Save first."
        if obj.kind == Study.Kind.GOLD:
            return format_html(
                "Gold annotators sign in at <code>{}</code>",
                self._absolute(reverse("annotator:gold_home")),
            )
        url = self._absolute(reverse("annotator:study_entry", args=[obj.public_id]))
        return format_html(
            "<p>Paste into Prolific (study URL, with URL parameters on):</p>"
            "<input readonly size='110' value='{}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
            "&amp;STUDY_ID={{{{%STUDY_ID%}}}}&amp;SESSION_ID={{{{%SESSION_ID%}}}}'>"
            "<p>Completion URL: https://app.prolific.com/submissions/complete?cc={}</p>",
            url,
            obj.completion_code,
        )

    def _absolute(self, path: str) -> str:
        return public_base_url(self._request).rstrip("/") + path

    def get_form(self, request, obj=None, **kwargs):
        self._request = request
        return super().get_form(request, obj, **kwargs)

    @admin.display(description="progress per task")
    def progress(self, obj):
        if not obj.pk:
            return "-"
        loads = services.task_loads(obj)
        tasks = (
            Task.objects.filter(study=obj)
            .with_counts()
            .annotate(
                completed=Count(
                    "assignments",
                    filter=Q(
                        assignments__status=Assignment.Status.COMPLETED,
                        assignments__participant__status=Participant.Status.ACCEPTED,
                    ),
                ),
            )
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td></tr>",
            (
                (t.label, t.item_count, loads.get(t.pk, 0), t.completed, obj.raters_per_task)
                for t in tasks
            ),
        )
        return format_html(
            "<table><tr><th>task</th><th>items</th><th>active + accepted</th>"
            "<th>completed (accepted) / wanted</th></tr>{}</table>",
            rows,
        )

    @admin.display(description="participants: quality control")
    def quality_table(self, obj):
        if not obj.pk:
            return "-"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td><td>{}</td></tr>",
            (
                (
                    q.rater,
                    q.status,
                    q.task,
                    q.assignment_status,
                    q.ratings,
                    "-" if q.median_seconds is None else f"{q.median_seconds:.1f}",
                    {None: "-", True: "passed", False: "FAILED"}[q.attention_passed],
                    "-" if q.gold_correlation is None else f"{q.gold_correlation:.2f}",
                    "flagged" if q.flagged else "",
                )
                for q in participant_quality(obj)
            ),
        )
        return format_html(
            "<table class='concord-quality'><tr><th>participant</th><th>status</th><th>task</th>"
            "<th>assignment</th><th>ratings</th><th>median s/item</th><th>attention</th>"
            "<th>r with gold</th><th></th></tr>{}</table>",
            rows,
        )

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        study = form.instance
        if not services.has_ratings(study) and (
            not change or any(f in form.changed_data for f in SELECTION_FIELDS)
        ):
            try:
                counts = services.build_items(study, actor=request.user)
                messages.info(
                    request, f"Built {counts['tasks']} tasks and {counts['items']} items."
                )
            except services.StudyError as error:
                messages.error(request, f"Items not built: {error}")

    @admin.action(description="Build (or rebuild) items from the selection")
    def build_items_action(self, request, queryset):
        for study in queryset:
            try:
                counts = services.build_items(study, actor=request.user)
                messages.info(
                    request, f"{study}: {counts['tasks']} tasks, {counts['items']} items."
                )
            except services.StudyError as error:
                messages.error(request, str(error))

    @admin.action(description="Open for participants")
    def open_action(self, request, queryset):
        for study in queryset:
            try:
                services.set_study_open(study, True, request.user)
            except services.StudyError as error:
                messages.error(request, str(error))

    @admin.action(description="Close for participants")
    def close_action(self, request, queryset):
        for study in queryset:
            services.set_study_open(study, False, request.user)

    @admin.action(description="Export ratings (CSV, one row per rating)")
    def export_tidy(self, request, queryset):
        rows = [row for study in queryset for row in exports.tidy_rows(study)]
        return csv_response(exports.to_csv(exports.TIDY_COLUMNS, rows), "ratings.csv")

    @admin.action(description="Export ratings (CSV, one column per rater)")
    def export_wide(self, request, queryset):
        if queryset.count() != 1:
            messages.error(request, "Choose one study for the wide export.")
            return None
        columns, rows = exports.wide_rows(queryset.get())
        return csv_response(exports.to_csv(columns, rows), "ratings-wide.csv")

    @admin.action(description="Update the study's scores for the analysis")
    def sync_judgments_action(self, request, queryset):
        for study in queryset:
            count = services.sync_study_judgments(study)
            messages.info(request, f"{study.evaluator_name}: {count} judgments.")

    @admin.action(description="Release work older than the time limit")
    def release_stale_action(self, request, queryset):
        for study in queryset:
            messages.info(request, f"{study}: {services.release_stale(study)} released.")

    @admin.action(description="Prolific: create as a draft study")
    def prolific_create_action(self, request, queryset):
        def create(client, study):
            study_id = services.create_on_prolific(
                study, client, public_base_url(request), request.user
            )
            return f"{study}: created on Prolific as {study_id}."

        for_each_on_prolific(request, queryset, create)

    @admin.action(description="Prolific: publish")
    def prolific_publish_action(self, request, queryset):
        def publish(client, study):
            services.publish_on_prolific(study, client, request.user)
            return f"{study}: published on Prolific."

        for_each_on_prolific(request, queryset, publish)

    @admin.action(description="Prolific: sync submissions (release returned and timed-out places)")
    def prolific_sync_action(self, request, queryset):
        def sync(client, study):
            counts = services.sync_prolific_submissions(study, client)
            released = counts["released"]
            return f"{study}: {counts['submissions']} submissions, {released} places released."

        for_each_on_prolific(request, queryset, sync)


def public_base_url(request) -> str:
    """Where participants reach Concord: CONCORD_PUBLIC_URL, else this request's host."""
    return settings.CONCORD_PUBLIC_URL or (request.build_absolute_uri("/") if request else "/")


def prolific_client(request) -> ProlificClient | None:
    try:
        return ProlificClient(settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL)
    except ProlificError as error:
        messages.error(request, str(error))
        return None


def for_each_on_prolific(request, objects, work) -> None:
    """Run `work(client, obj)` for each object and show what it returns; Prolific's
    and Concord's refusals become error messages and stop the rest."""
    client = prolific_client(request)
    if client is None:
        return
    try:
        for obj in objects:
            messages.info(request, work(client, obj))
    except (ProlificError, services.StudyError) as error:
        messages.error(request, str(error))


def csv_response(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class ExclusionForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea, help_text="Kept in the audit log.")


class RejectionForm(forms.Form):
    message = forms.CharField(
        widget=forms.Textarea,
        min_length=100,
        help_text="Shown to the participant; at least 100 characters.",
    )
    category = forms.ChoiceField(choices=[(c, c) for c in REJECTION_CATEGORIES])


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "study",
        "status",
        "flagged",
        "flag_reason",
        "task",
        "assignment_status",
        "created_at",
    )
    list_filter = ("study", "status", "flagged")
    search_fields = ("prolific_pid", "user__username")
    list_select_related = ("study", "user", "assignment__task")
    readonly_fields = (
        "study",
        "prolific_pid",
        "user",
        "status",
        "exclusion_reason",
        "flagged",
        "flag_reason",
        "created_at",
        "audit_log",
    )
    actions = [
        "exclude_action",
        "reinstate_action",
        "prolific_approve_action",
        "prolific_reject_action",
    ]

    def has_add_permission(self, request):
        return False

    @admin.display(description="task")
    def task(self, obj):
        assignment = getattr(obj, "assignment", None)
        return assignment.task.label if assignment else "-"

    @admin.display(description="assignment")
    def assignment_status(self, obj):
        assignment = getattr(obj, "assignment", None)
        return assignment.get_status_display() if assignment else "-"

    @admin.display(description="audit log")
    def audit_log(self, obj):
        events = obj.audit_events.select_related("actor")
        return format_html_join(
            "",
            "<div>{} {} {} {}</div>",
            (
                (e.created_at.strftime("%Y-%m-%d %H:%M"), e.action, e.actor or "", e.detail)
                for e in events
            ),
        )

    @admin.action(description="Exclude selected participants (asks for a reason)")
    def exclude_action(self, request, queryset):
        if "apply" in request.POST:
            form = ExclusionForm(request.POST)
            if form.is_valid():
                for participant in queryset:
                    services.exclude_participant(
                        participant, request.user, form.cleaned_data["reason"]
                    )
                messages.info(request, f"Excluded {queryset.count()} participant(s).")
                return None
        else:
            form = ExclusionForm()
        return render(
            request,
            "admin/annotator/exclude.html",
            {
                "form": form,
                "participants": queryset,
                "title": "Exclude participants",
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "opts": self.model._meta,
            },
        )

    @admin.action(description="Reinstate selected participants")
    def reinstate_action(self, request, queryset):
        for participant in queryset:
            services.reinstate_participant(participant, request.user, "reinstated from the admin")

    @admin.action(description="Prolific: approve submissions")
    def prolific_approve_action(self, request, queryset):
        def approve(client, participant):
            services.review_on_prolific(participant, client, True, request.user)
            return f"{participant}: approved on Prolific."

        for_each_on_prolific(request, queryset.select_related("assignment", "study"), approve)

    @admin.action(description="Prolific: reject submissions (asks for a message)")
    def prolific_reject_action(self, request, queryset):
        form = RejectionForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            message, category = form.cleaned_data["message"], form.cleaned_data["category"]

            def reject(client, participant):
                services.review_on_prolific(
                    participant, client, False, request.user, message, category
                )
                return f"{participant}: rejected on Prolific."

            for_each_on_prolific(request, queryset.select_related("assignment", "study"), reject)
            return None
        return render(
            request,
            "admin/annotator/exclude.html",
            {
                "form": form,
                "participants": queryset,
                "title": "Reject on Prolific",
                "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
                "action_name": "prolific_reject_action",
                "opts": self.model._meta,
            },
        )


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(rated_n=Count("ratings"))

    @admin.display(description="rated", ordering="rated_n")
    def rated(self, obj):
        return f"{obj.rated_n}/{len(obj.item_order)}"


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ("assignment", "item", "score", "seconds", "created_at", "updated_at")
    list_filter = ("item__study",)
    list_select_related = ("assignment__participant", "assignment__task", "item")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # ratings are the participants' own; exclusion is the researcher's tool


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("question", "task", "is_attention_check")
    list_filter = ("study",)
    list_select_related = ("task",)
    search_fields = ("question",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "study", "participant", "actor", "action", "detail")
    list_filter = ("study", "action")
    list_select_related = ("study", "participant", "actor")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
