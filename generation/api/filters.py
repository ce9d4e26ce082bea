import django_filters

from generation.models import GenerationRun, Response


class GenerationRunFilter(django_filters.FilterSet):
    system = django_filters.CharFilter(field_name="system__name")
    version = django_filters.CharFilter(field_name="dataset__version")
    language = django_filters.CharFilter(field_name="dataset__language")
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


class ResponseFilter(django_filters.FilterSet):
    system = django_filters.CharFilter(field_name="run__system__name")
    mode = django_filters.CharFilter(field_name="run__mode")
    version = django_filters.CharFilter(field_name="run__dataset__version")
    split = django_filters.CharFilter(field_name="run__dataset__split")
    document = django_filters.CharFilter(field_name="question__document__external_id")
    question_type = django_filters.CharFilter(field_name="question__question_type")
    answer_position = django_filters.CharFilter(field_name="question__answer_position")

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
