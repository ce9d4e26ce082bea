import django_filters
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from core.api import ErrorSerializer
from core.filters import FilterSet, choice
from corpus.choices import DatasetVersion, Mode
from judging.api.serializers import (
    EvaluatorSerializer,
    JudgeItemSerializer,
    JudgingRunSerializer,
    JudgmentSerializer,
    ResolveSerializer,
)
from judging.human_review import check_resolve_item
from judging.judging_runs import cancel_run, resume_run, retry_failed, start_judging_run
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment
from runs.api import outcome_response, outcome_schema
from users.permissions import ProjectScopedMixin, same_project
from users.projects import is_site_admin, scope, visible_projects


class JudgmentFilter(FilterSet):
    evaluator = django_filters.CharFilter(field_name="evaluator__name")
    system = django_filters.CharFilter(field_name="response__run__system__name")
    mode = choice("response__run__mode", Mode.choices)
    version = choice("response__run__dataset__version", DatasetVersion.choices)
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


class JudgeItemFilter(FilterSet):
    outcome = choice("outcome", JudgeItem.Outcome.choices)

    class Meta:
        model = JudgeItem
        fields = ["run", "status", "outcome"]


@extend_schema_view(
    partial_update=extend_schema(
        responses={
            200: EvaluatorSerializer,
            409: OpenApiResponse(
                ErrorSerializer,
                "The evaluator has judged: its name, kind, raw scale and configuration are "
                "frozen (`frozen_fields` lists those the request would change).",
            ),
        }
    )
)
class EvaluatorViewSet(ProjectScopedMixin, viewsets.ModelViewSet):
    """Evaluators: LLM judges' configurations are checked when saved and frozen
    once they have judged."""

    queryset = Evaluator.objects.order_by("name")
    serializer_class = EvaluatorSerializer
    filterset_fields = ["kind"]
    search_fields = ["name"]
    http_method_names = ["get", "post", "patch", "head", "options"]
    shared_projects = True

    def get_queryset(self) -> QuerySet[Evaluator]:
        # a shared evaluator (a metric) judges every project's responses: the
        # count is of the reader's projects' only
        user = self.request.user
        projects = None if is_site_admin(user) else visible_projects(user)
        return Evaluator.objects.with_counts(projects).order_by("name")

    def perform_create(self, serializer: serializers.BaseSerializer[Evaluator]) -> None:
        serializer.save(project=self.project_for_create(serializer.validated_data.get("project")))


class JudgmentViewSet(ProjectScopedMixin, viewsets.ReadOnlyModelViewSet):
    queryset = Judgment.objects.select_related("evaluator", "response__run__system").order_by("id")
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter

    def scope_queryset(self, queryset: QuerySet[Judgment]) -> QuerySet[Judgment]:
        """A judgment of a response the user sees, by an evaluator he sees."""
        user = self.request.user
        return scope(
            scope(queryset, user, "response__run__project"),
            user,
            "evaluator__project",
            shared=True,
        )


class JudgingRunViewSet(ProjectScopedMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Judging runs: POST starts one (queued for a Celery worker); progress, tokens
    and cost on GET; cancel and resume."""

    queryset = (
        JudgingRun.objects.select_related("evaluator")
        .prefetch_related("systems")
        .order_by("-created_at")
    )
    serializer_class = JudgingRunSerializer
    filterset_fields = ["status", "evaluator"]

    def perform_create(self, serializer: serializers.BaseSerializer[JudgingRun]) -> None:
        data = serializer.validated_data
        project = self.project_for_create(data.get("project"))
        same_project(project, evaluator=data["evaluator"], systems=list(data.get("systems", [])))
        # a JudgingError answers 400 through the API's exception handler
        serializer.instance = start_judging_run(
            data["evaluator"],
            data["dataset"],
            data["mode"],
            data.get("systems", []),
            self.request.user,
            budget=data.get("budget"),
            refresh=data.get("refresh", False),
            use_batch=data.get("use_batch", False),
            confirm_over_budget=data.get("confirm_over_budget", False),
            project=project,
        )

    @outcome_schema
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        return outcome_response(cancel_run(self.get_object()))

    @outcome_schema
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        """Go on with the pending items; a running or queued run is left alone
        (`changed` false, and `detail` says why)."""
        return outcome_response(resume_run(self.get_object()))

    @outcome_schema
    @action(detail=True, methods=["post"], url_path="retry-failed")
    def retry_failed(self, request: Request, pk: str | None = None) -> Response:
        """Ask again the items that need a human, then go on with every pending one."""
        return outcome_response(retry_failed(self.get_object()))


class JudgeItemViewSet(ProjectScopedMixin, viewsets.ReadOnlyModelViewSet):
    """The items of LLM judging runs; filter status=needs_human for the answers
    no parser could read, and POST .../ID/resolve/ with {"score": N} (a
    scoring judge, on its own scale) or {"verdict": "A" | "B" | "tie"} (a
    pairwise judge: A is the answer shown first) to store what it says."""

    queryset = JudgeItem.objects.select_related("run__evaluator", "call").order_by("pk")
    serializer_class = JudgeItemSerializer
    filterset_class = JudgeItemFilter
    project_path = "run__project"

    @extend_schema(
        request=ResolveSerializer,
        responses={
            200: JudgeItemSerializer,
            409: OpenApiResponse(ErrorSerializer, "The item does not need a human."),
        },
    )
    @action(detail=True, methods=["post"], serializer_class=ResolveSerializer)
    def resolve(self, request: Request, pk: str | None = None) -> Response:
        item = self.get_object()
        body = ResolveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        # ReviewError: 400, ReviewConflict: 409
        check_resolve_item(item, body.answer(), request.user)
        item.refresh_from_db()
        return Response(JudgeItemSerializer(item).data)
