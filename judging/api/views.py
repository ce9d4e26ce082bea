import django_filters
from django.db import transaction
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from judging.api.serializers import EvaluatorSerializer, JudgingRunSerializer, JudgmentSerializer
from judging.models import Evaluator, JudgingRun, Judgment
from judging.runs import JudgingError, cancel_run, resume_run, start_run
from judging.tasks import enqueue_run


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


class EvaluatorViewSet(viewsets.ModelViewSet):
    """Evaluators: LLM judges' configurations are checked when saved and frozen
    once they have judged."""

    queryset = Evaluator.objects.with_counts().order_by("name")
    serializer_class = EvaluatorSerializer
    filterset_fields = ["kind"]
    search_fields = ["name"]
    http_method_names = ["get", "post", "patch", "head", "options"]


class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Judgment.objects.select_related("evaluator", "response__run__system").order_by("id")
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter


class JudgingRunViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Judging runs: POST starts one (queued for a Celery worker); progress, tokens
    and cost on GET; cancel and resume."""

    queryset = (
        JudgingRun.objects.select_related("evaluator")
        .prefetch_related("systems")
        .order_by("-created_at")
    )
    serializer_class = JudgingRunSerializer
    filterset_fields = ["status", "evaluator"]

    def perform_create(self, serializer):
        data = serializer.validated_data
        try:
            with transaction.atomic():
                run = start_run(
                    data["evaluator"],
                    data["dataset"],
                    data["mode"],
                    data.get("systems", []),
                    self.request.user,
                    budget=data.get("budget"),
                    refresh=data.get("refresh", False),
                    use_batch=data.get("use_batch", False),
                )
                transaction.on_commit(lambda: enqueue_run(run))
        except JudgingError as error:
            raise ValidationError({"detail": str(error)}) from None
        serializer.instance = run

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        cancel_run(self.get_object())
        return Response({"detail": "cancelled"})

    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        run = self.get_object()
        if run.status == JudgingRun.Status.DONE:
            return Response({"detail": "The run is done."}, status=status.HTTP_409_CONFLICT)
        resume_run(run)
        transaction.on_commit(lambda: enqueue_run(run))
        return Response({"detail": "queued"})
