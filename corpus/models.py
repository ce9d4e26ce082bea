"""Benchmarks: datasets, documents (transcripts), questions and reference answers.

A question belongs to a document (an ELITR meeting) and keeps what every
version shares: its id, its order in the meeting, its type and the position of
its answer. What a version or language changes (the question's wording, the
reference answer) lives in QuestionText, one row per (question, dataset):
ELITR-Bench's QA and Conv versions share question ids but word 16 + 17
questions differently, and one test2 reference answer differs too.
"""

from typing import TypeAlias

from django.db import models
from django.db.models import Count, Q

from corpus.choices import DatasetVersion, Language


class Benchmark(models.Model):
    class Format(models.TextChoices):
        """Whose files it came in as, which says how its models are prompted and
        how its reports are shaped (corpus/importers/formats/)."""

        ELITR_BENCH = "elitr_bench", "ELITR-Bench"
        LEVAL = "leval", "L-Eval"
        ZEROSCROLLS = "zeroscrolls", "ZeroSCROLLS"
        LONGBENCH_V2 = "longbench_v2", "LongBench v2"
        RULER = "ruler", "RULER"
        BABILONG = "babilong", "BABILong"
        LOOGLE = "loogle", "LooGLE"
        GENERIC = "generic", "Generic (JSON Lines, CSV or Parquet)"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source_url = models.URLField(blank=True)
    format = models.CharField(max_length=16, choices=Format.choices, default=Format.GENERIC)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Dataset(models.Model):
    """One version x language x split of a benchmark, e.g. ELITR-Bench QA en test2."""

    Version: TypeAlias = DatasetVersion
    Language: TypeAlias = Language

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="datasets")
    version = models.CharField(max_length=8, choices=Version.choices)
    language = models.CharField(max_length=8, choices=Language.choices)
    split = models.SlugField(max_length=32)
    task = models.SlugField(
        max_length=64,
        blank=True,
        default="",
        help_text="A task of a benchmark of several (L-Eval's quality, ZeroSCROLLS' qasper); "
        "empty for a benchmark of one task.",
    )

    class Meta:
        ordering = ["benchmark__name", "split", "task", "version", "language"]
        constraints = [
            models.UniqueConstraint(
                fields=["benchmark", "version", "language", "split", "task"],
                name="dataset_unique_with_task",
            ),
            models.CheckConstraint(
                condition=Q(version__in=DatasetVersion.values), name="dataset_version_valid"
            ),
            models.CheckConstraint(
                condition=Q(language__in=Language.values), name="dataset_language_valid"
            ),
        ]

    def __str__(self) -> str:
        task = f" {self.task}" if self.task else ""
        return f"{self.benchmark.name}{task} {self.version} {self.language} {self.split}"


class DocumentQuerySet(models.QuerySet):
    def with_counts(self) -> "DocumentQuerySet":
        return self.annotate(question_count=Count("questions", distinct=True))


class Document(models.Model):
    """A long document the questions are about: for ELITR-Bench, a meeting transcript."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(
        max_length=200, help_text="The meeting id, e.g. meeting_en_test2_001."
    )
    split = models.SlugField(max_length=32)
    language = models.CharField(max_length=8, default=Language.ENGLISH)
    text = models.TextField()
    word_count = models.PositiveIntegerField()
    source = models.CharField(max_length=500, blank=True, help_text="The file it was read from.")

    objects = DocumentQuerySet.as_manager()

    class Meta:
        ordering = ["benchmark__name", "split", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "external_id"], name="document_unique")
        ]

    def __str__(self) -> str:
        return self.external_id


class Question(models.Model):
    class QuestionType(models.TextChoices):
        WHO = "who", "Who"
        WHAT = "what", "What"
        WHEN = "when", "When"
        HOW_MANY = "howmany", "How many"
        NONE = "", "(not annotated)"

    class AnswerPosition(models.TextChoices):
        BEGINNING = "B", "Beginning (first third)"
        MIDDLE = "M", "Middle (second third)"
        END = "E", "End (final third)"
        SEVERAL = "S", "Several passages"
        NONE = "", "(not annotated)"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="questions")
    external_id = models.CharField(max_length=100, help_text="Id within the document, e.g. '7'.")
    order = models.PositiveIntegerField(help_text="1-based position in the meeting's conversation.")
    question_type = models.CharField(max_length=10, choices=QuestionType.choices, blank=True)
    answer_position = models.CharField(max_length=1, choices=AnswerPosition.choices, blank=True)

    class Meta:
        ordering = ["document__split", "document__external_id", "order"]
        constraints = [
            models.UniqueConstraint(fields=["document", "external_id"], name="question_unique_id"),
            models.UniqueConstraint(fields=["document", "order"], name="question_unique_order"),
            models.CheckConstraint(
                condition=Q(question_type__in=["who", "what", "when", "howmany", ""]),
                name="question_type_valid",
            ),
            models.CheckConstraint(
                condition=Q(answer_position__in=["B", "M", "E", "S", ""]),
                name="question_position_valid",
            ),
            models.CheckConstraint(condition=Q(order__gte=1), name="question_order_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.document.external_id} #{self.external_id}"


class QuestionText(models.Model):
    """The wording of a question and its reference answer in one dataset."""

    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="texts")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="question_texts")
    text = models.TextField()
    reference_answer = models.TextField()
    alternative_answers = models.JSONField(
        default=list, blank=True, help_text="Further acceptable reference answers, if any."
    )
    prompt = models.JSONField(
        default=dict,
        blank=True,
        help_text="The benchmark's own prompt parts for this question, as its files give them "
        "(ZeroSCROLLS: the text around the document and the query, the truncation separator; "
        "L-Eval: the task's evaluation and source).",
    )

    class Meta:
        ordering = ["question__document__external_id", "question__order", "dataset_id"]
        constraints = [
            models.UniqueConstraint(fields=["question", "dataset"], name="question_text_unique")
        ]

    def __str__(self) -> str:
        return self.text[:80]
