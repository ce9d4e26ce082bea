import django_filters

from core.filters import FilterSet, choice, object_id
from corpus.choices import DatasetVersion, Language
from corpus.models import Dataset, Document, Question


class DatasetFilter(FilterSet):
    benchmark = django_filters.CharFilter(field_name="benchmark__slug")

    class Meta:
        model = Dataset
        fields = ["benchmark", "version", "language", "split"]


class DocumentFilter(FilterSet):
    benchmark = django_filters.CharFilter(field_name="benchmark__slug")

    class Meta:
        model = Document
        fields = ["benchmark", "split", "external_id"]


class QuestionFilter(FilterSet):
    benchmark = django_filters.CharFilter(field_name="document__benchmark__slug")
    document = django_filters.CharFilter(field_name="document__external_id")
    split = django_filters.CharFilter(field_name="document__split")
    dataset = object_id("texts__dataset", distinct=True)
    version = choice("texts__dataset__version", DatasetVersion.choices, distinct=True)
    language = choice("texts__dataset__language", Language.choices, distinct=True)

    class Meta:
        model = Question
        fields = [
            "benchmark",
            "document",
            "split",
            "dataset",
            "version",
            "language",
            "question_type",
            "answer_position",
        ]
