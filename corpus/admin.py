from django.contrib import admin
from django.db.models import Count
from django.utils.html import format_html, format_html_join

from corpus.models import Benchmark, Dataset, Document, Question, QuestionText


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "dataset_count", "document_count")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                datasets_n=Count("datasets", distinct=True),
                documents_n=Count("documents", distinct=True),
            )
        )

    @admin.display(description="datasets", ordering="datasets_n")
    def dataset_count(self, obj):
        return obj.datasets_n

    @admin.display(description="documents", ordering="documents_n")
    def document_count(self, obj):
        return obj.documents_n


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("__str__", "benchmark", "version", "language", "split", "question_count")
    list_filter = ("benchmark", "version", "language", "split")
    list_select_related = ("benchmark",)
    search_fields = ("benchmark__name", "split", "version")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(questions_n=Count("question_texts"))

    @admin.display(description="questions", ordering="questions_n")
    def question_count(self, obj):
        return obj.questions_n


class QuestionTextInline(admin.TabularInline):
    model = QuestionText
    extra = 0
    fields = ("dataset", "text", "reference_answer", "alternative_answers")
    autocomplete_fields = ("dataset",)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("dataset__benchmark")


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    """The document page shows the transcript beside its questions (all versions)."""

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

    def get_queryset(self, request):
        queryset = (
            super().get_queryset(request).annotate(questions_n=Count("questions", distinct=True))
        )
        # The list never shows the ~50 KB transcripts.
        return (
            queryset.defer("text")
            if request.resolver_match.url_name.endswith("changelist")
            else queryset
        )

    @admin.display(description="questions", ordering="questions_n")
    def question_count(self, obj):
        return obj.questions_n

    @admin.display(description="transcript")
    def transcript(self, obj):
        return format_html(
            '<pre class="concord-transcript" style="white-space: pre-wrap; max-height: 40em; '
            'overflow-y: auto; border: 1px solid var(--hairline-color); padding: .5em">{}</pre>',
            obj.text,
        )

    @admin.display(description="questions and reference answers")
    def questions_table(self, obj):
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

    def lookups(self, request, model_admin):
        return Dataset.Version.choices

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(texts__dataset__version=self.value()).distinct()
        return queryset


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
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

    def get_queryset(self, request):
        return (
            super().get_queryset(request).prefetch_related("texts__dataset").defer("document__text")
        )

    @admin.display(description="question (first version)")
    def wording(self, obj):
        texts = sorted(
            obj.texts.all(), key=lambda t: (t.dataset.language != "en", t.dataset.version)
        )
        return texts[0].text if texts else ""
