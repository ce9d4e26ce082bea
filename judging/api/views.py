import django_filters
from rest_framework import viewsets

from judging.api.serializers import EvaluatorSerializer, JudgmentSerializer
from judging.models import Evaluator, Judgment


class JudgmentFilter(django_filters.FilterSet):
    evaluator = django_filters.CharFilter(field_name="evaluator__name")
    system = django_filters.CharFilter(field_name="response__run__system__name")
    mode = django_filters.CharFilter(field_name="response__run__mode")
    version = django_filters.CharFilter(field_name="response__run__dataset__version")
    split = django_filters.CharFilter(field_name="response__run__dataset__split")
    score_min = django_filters.NumberFilter(field_name="score", lookup_expr="gte")
    score_max = django_filters.NumberFilter(field_name="score", lookup_expr="lte")

    class Meta:
        model = Judgment
        fields = [
            "evaluator",
            "response",
            "system",
            "mode",
            "version",
            "split",
            "rater",
            "seed",
            "score_min",
            "score_max",
        ]


class EvaluatorViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Evaluator.objects.with_counts().order_by("name")
    serializer_class = EvaluatorSerializer
    filterset_fields = ["kind"]
    search_fields = ["name"]


class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Judgment.objects.select_related("evaluator", "response__run__system").order_by("id")
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter
