from django.db.models import Count, Prefetch, QuerySet
from rest_framework import viewsets

from corpus.api.filters import DatasetFilter, DocumentFilter, QuestionFilter
from corpus.api.serializers import (
    DatasetSerializer,
    DocumentDetailSerializer,
    DocumentSerializer,
    QuestionSerializer,
)
from corpus.models import Dataset, Document, Question, QuestionText


class DatasetViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = (
        Dataset.objects.select_related("benchmark")
        .annotate(question_count=Count("question_texts"))
        .order_by("benchmark__slug", "split", "version", "language")
    )
    serializer_class = DatasetSerializer
    filterset_class = DatasetFilter


class DocumentViewSet(viewsets.ReadOnlyModelViewSet):
    """Transcripts. The list leaves the text out; a document's page has it."""

    queryset = (
        Document.objects.select_related("benchmark").with_counts().order_by("split", "external_id")
    )
    filterset_class = DocumentFilter
    search_fields = ["external_id"]

    def get_queryset(self) -> QuerySet[Document]:
        queryset = super().get_queryset()
        return queryset.defer("text") if self.action == "list" else queryset

    def get_serializer_class(self) -> type[DocumentSerializer]:
        return DocumentDetailSerializer if self.action == "retrieve" else DocumentSerializer


class QuestionViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = (
        Question.objects.select_related("document")
        .prefetch_related(
            Prefetch(
                "texts",
                queryset=QuestionText.objects.select_related("dataset").order_by("dataset_id"),
            )
        )
        .order_by("document__split", "document__external_id", "order")
    )
    serializer_class = QuestionSerializer
    filterset_class = QuestionFilter
    search_fields = ["texts__text", "texts__reference_answer"]
