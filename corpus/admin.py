from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.contrib import admin
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from corpus.models import Benchmark, Dataset, Document, Question, QuestionText
from corpus.protection import CORRECTION, ProtectJudgedAdmin, judged_responses, judged_summary
from users.admin_scope import ProjectScopedAdmin

if TYPE_CHECKING:
    from django.contrib.admin.options import _FieldsetSpec
    from django_stubs_ext import WithAnnotations


class _BenchmarkCounts(TypedDict):
    datasets_n: int
    documents_n: int


class _QuestionCount(TypedDict):
    questions_n: int


@admin.register(Benchmark)
class BenchmarkAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    project_path = None
    judged_path = "run__dataset__benchmark"
    list_display = ("name", "slug", "dataset_count", "document_count")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Benchmark]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                datasets_n=Count("datasets", distinct=True),
                documents_n=Count("documents", distinct=True),
            )
        )

    @admin.display(description="datasets", ordering="datasets_n")
    def dataset_count(self, obj: WithAnnotations[Benchmark, _BenchmarkCounts]) -> int:
        return obj.datasets_n

    @admin.display(description="documents", ordering="documents_n")
    def document_count(self, obj: WithAnnotations[Benchmark, _BenchmarkCounts]) -> int:
        return obj.documents_n


@admin.register(Dataset)
class DatasetAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    project_path = None
    judged_path = "run__dataset"
    list_display = ("__str__", "benchmark", "version", "language", "split", "question_count")
    list_filter = ("benchmark", "version", "language", "split")
    list_select_related = ("benchmark",)
    search_fields = ("benchmark__name", "split", "version")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Dataset]:
        return super().get_queryset(request).annotate(questions_n=Count("question_texts"))

    @admin.display(description="questions", ordering="questions_n")
    def question_count(self, obj: WithAnnotations[Dataset, _QuestionCount]) -> int:
        return obj.questions_n


def judged_texts(queryset: QuerySet[QuestionText]) -> QuerySet[QuestionText]:
    """The question texts whose responses (same question, same dataset) are judged."""
    responses = judged_responses().filter(
        question=OuterRef("question"), run__dataset=OuterRef("dataset")
    )
    return queryset.filter(Exists(responses))


class QuestionTextFormSet(forms.BaseInlineFormSet):
    """A judged wording or reference answer is read-only, and stays: every field of
    its row is disabled (Django then keeps the stored value whatever is posted)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.judged = set(judged_texts(self.get_queryset()).values_list("pk", flat=True))

    def add_fields(self, form: forms.ModelForm[QuestionText], index: int | None) -> None:
        super().add_fields(form, index)  # the last fields of each form: all are there now
        if form.instance.pk in self.judged:
            for field in form.fields.values():
                field.disabled = True


class QuestionTextInline(admin.TabularInline):
    model = QuestionText
    formset = QuestionTextFormSet
    extra = 0
    fields = ("dataset", "text", "reference_answer", "alternative_answers", "protection")
    readonly_fields = ("protection",)
    autocomplete_fields = ("dataset",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[QuestionText]:
        return super().get_queryset(request).select_related("dataset__benchmark")

    @admin.display(description="read-only?")
    def protection(self, obj: QuestionText | None) -> str:
        if obj is None or obj.pk is None:
            return ""
        responses = judged_responses().filter(
            question_id=obj.question_id, run__dataset_id=obj.dataset_id
        )
        summary = judged_summary(responses.values_list("pk", flat=True))
        return f"Read-only: has {summary}: {CORRECTION}." if summary else ""


@admin.register(Document)
class DocumentAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    """The document page shows the transcript beside its questions (all versions).
    Once responses about it are judged, its transcript is read-only too."""

    project_path = None

    judged_path = "question__document"
    list_display = ("external_id", "benchmark", "split", "word_count", "question_count")
    list_filter = ("benchmark", "split", "language")
    search_fields = ("external_id", "questions__texts__text")
    list_select_related = ("benchmark",)
    readonly_fields = ("questions_table", "transcript")
    fieldsets = (
        (
            None,
            {"fields": ("benchmark", "external_id", "split", "language", "word_count", "source")},
        ),
        ("Questions", {"fields": ("questions_table",)}),
        ("Transcript", {"fields": ("transcript",)}),
        ("Edit the transcript text", {"classes": ("collapse",), "fields": ("text",)}),
    )

    def get_fieldsets(self, request: HttpRequest, obj: Document | None = None) -> _FieldsetSpec:
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or not self.is_protected(obj):
            return fieldsets
        summary = judged_summary(
            judged_responses().filter(question__document=obj).values_list("pk", flat=True)
        )
        note = f"Read-only transcript: its responses have {summary}: {CORRECTION}."
        return tuple(
            (name, {**options, "description": note} if name == "Transcript" else options)
            for name, options in fieldsets
            if name != "Edit the transcript text"
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        queryset = (
            super().get_queryset(request).annotate(questions_n=Count("questions", distinct=True))
        )
        # The list never shows the ~50 KB transcripts. (An admin page is always
        # reached through a named URL; a request without one gets the full rows.)
        match = request.resolver_match
        changelist = match is not None and (match.url_name or "").endswith("changelist")
        return queryset.defer("text") if changelist else queryset

    @admin.display(description="questions", ordering="questions_n")
    def question_count(self, obj: WithAnnotations[Document, _QuestionCount]) -> int:
        return obj.questions_n

    @admin.display(description="transcript")
    def transcript(self, obj: Document) -> str:
        return format_html(
            '<pre class="concord-transcript" style="white-space: pre-wrap; max-height: 40em; '
            'overflow-y: auto; border: 1px solid var(--hairline-color); padding: .5em">{}</pre>',
            obj.text,
        )

    @admin.display(description="questions and reference answers")
    def questions_table(self, obj: Document) -> str:
        texts = (
            QuestionText.objects.filter(question__document=obj)
            .select_related("question", "dataset")
            .order_by("question__order", "-dataset__language", "-dataset__version")
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} {}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    t.question.external_id,
                    t.question.get_question_type_display(),
                    t.question.answer_position,
                    t.dataset.version,
                    t.dataset.language,
                    t.text,
                    t.reference_answer,
                )
                for t in texts
            ),
        )
        return format_html(
            '<table class="concord-questions"><thead><tr><th>id</th><th>type</th><th>position</th>'
            "<th>dataset</th><th>question</th><th>reference answer</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )


class QuestionVersionFilter(admin.SimpleListFilter):
    title = "dataset version"
    parameter_name = "version"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Question]
    ) -> list[tuple[str, str]]:
        return Dataset.Version.choices

    def queryset(self, request: HttpRequest, queryset: QuerySet[Question]) -> QuerySet[Question]:
        if self.value():
            return queryset.filter(texts__dataset__version=self.value()).distinct()
        return queryset


@admin.register(Question)
class QuestionAdmin(ProjectScopedAdmin, ProtectJudgedAdmin, admin.ModelAdmin):
    project_path = None
    judged_path = "question"
    list_display = (
        "document",
        "external_id",
        "order",
        "question_type",
        "answer_position",
        "wording",
    )
    list_filter = (
        "document__benchmark",
        "document__split",
        QuestionVersionFilter,
        "question_type",
        "answer_position",
    )
    search_fields = ("texts__text", "texts__reference_answer", "document__external_id")
    list_select_related = ("document",)
    inlines = (QuestionTextInline,)
    autocomplete_fields = ("document",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Question]:
        return (
            super().get_queryset(request).prefetch_related("texts__dataset").defer("document__text")
        )

    @admin.display(description="question (first version)")
    def wording(self, obj: Question) -> str:
        texts = sorted(
            obj.texts.all(),
            key=lambda t: (t.dataset.language != Dataset.Language.ENGLISH, t.dataset.version),
        )
        return texts[0].text if texts else ""
