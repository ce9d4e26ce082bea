import django_filters

from core.filters import FilterSet, choice
from corpus.choices import DatasetVersion, Language, Mode
from corpus.models import Question
from generation.models import GenerationRun, Response


class GenerationRunFilter(FilterSet):
    system = django_filters.CharFilter(field_name="system__name")
    version = choice("dataset__version", DatasetVersion.choices)
    language = choice("dataset__language", Language.choices)
    split = django_filters.CharFilter(field_name="dataset__split")

    class Meta:
        model = GenerationRun
        fields = [
            "system",
            "dataset",
            "version",
            "language",
            "split",
            "mode",
            "seed",
            "origin",
            "status",
        ]


class ResponseFilter(FilterSet):
    system = django_filters.CharFilter(field_name="run__system__name")
    mode = choice("run__mode", Mode.choices)
    version = choice("run__dataset__version", DatasetVersion.choices)
    split = django_filters.CharFilter(field_name="run__dataset__split")
    document = django_filters.CharFilter(field_name="question__document__external_id")
    question_type = choice("question__question_type", Question.QuestionType.choices)
    answer_position = choice("question__answer_position", Question.AnswerPosition.choices)

    class Meta:
        model = Response
        fields = [
            "run",
            "system",
            "mode",
            "version",
            "split",
            "document",
            "question",
            "question_type",
            "answer_position",
        ]
