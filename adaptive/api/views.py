from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from adaptive.api.serializers import (
    AdaptiveStudySerializer,
    BudgetSerializer,
    DeadlineSerializer,
    DecisionSerializer,
    EstimateSerializer,
    StopSerializer,
)
from adaptive.models import AdaptiveStudy, Decision
from core.api import ErrorSerializer
from users.permissions import ProjectScopedMixin, same_project, signed_in_user

# adaptive.loop loads numpy and pandas: imported by the calls that need it,
# not when the server starts (tests/test_startup.py)
REFUSED = OpenApiResponse(ErrorSerializer, "The study cannot do this now; `detail` says why.")


class AdaptiveStudyViewSet(
    ProjectScopedMixin,
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Adaptive human studies: plan one (nothing is spent; the answer holds the
    plan), start, stop, change the budget or the deadline (each a recorded
    decision), read where it stands and what was decided."""

    serializer_class = AdaptiveStudySerializer
    filterset_fields = ["status", "goal", "population"]
    search_fields = ["name"]

    def get_queryset(self) -> QuerySet[AdaptiveStudy]:
        return AdaptiveStudy.objects.prefetch_related("systems").order_by("-created_at")

    @extend_schema(responses={201: AdaptiveStudySerializer})
    def create(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer: BaseSerializer[AdaptiveStudy]) -> None:
        from adaptive import loop

        data = dict(serializer.validated_data)
        project = self.project_for_create(data.pop("project", None))
        systems = list(data.pop("systems"))
        groups = list(data.pop("participant_groups", []))
        same_project(
            project,
            systems=systems,
            judge=data.get("judge"),
            uncertainty_judge=data.get("uncertainty_judge"),
            prior_humans=data.get("prior_humans"),
        )
        adaptive = AdaptiveStudy(project=project, **data)
        serializer.instance = loop.check_create(
            adaptive, systems, signed_in_user(self.request), groups=groups
        )

    def _after(self, adaptive: AdaptiveStudy) -> Response:
        from adaptive.tasks import advance_adaptive

        # the step and Prolific's side on the worker, once this is committed
        transaction.on_commit(lambda: advance_adaptive.delay(adaptive.pk))
        adaptive.refresh_from_db()
        return Response(AdaptiveStudySerializer(adaptive).data)

    @extend_schema(request=None, responses={200: AdaptiveStudySerializer, 400: REFUSED})
    @action(detail=True, methods=["post"])
    def start(self, request: Request, pk: str | None = None) -> Response:
        from adaptive import loop

        return self._after(loop.check_start(self.get_object(), signed_in_user(request)))

    @extend_schema(request=StopSerializer, responses={200: AdaptiveStudySerializer})
    @action(detail=True, methods=["post"])
    def stop(self, request: Request, pk: str | None = None) -> Response:
        from adaptive import changes

        body = StopSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        reason = body.validated_data.get("reason", "")
        return self._after(changes.check_stop(self.get_object(), signed_in_user(request), reason))

    @extend_schema(request=BudgetSerializer, responses={200: AdaptiveStudySerializer})
    @action(detail=True, methods=["post"])
    def budget(self, request: Request, pk: str | None = None) -> Response:
        from adaptive import changes

        body = BudgetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        pence = body.validated_data["budget_pence"]
        return self._after(
            changes.check_change_budget(self.get_object(), pence, signed_in_user(request))
        )

    @extend_schema(request=DeadlineSerializer, responses={200: AdaptiveStudySerializer})
    @action(detail=True, methods=["post"])
    def deadline(self, request: Request, pk: str | None = None) -> Response:
        from adaptive import changes

        body = DeadlineSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        when = body.validated_data["deadline"]
        return self._after(
            changes.check_change_deadline(self.get_object(), when, signed_in_user(request))
        )

    @extend_schema(responses=EstimateSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def estimates(self, request: Request, pk: str | None = None) -> Response:
        from adaptive.estimates import estimates

        adaptive = self.get_object()
        if adaptive.status == AdaptiveStudy.Status.PLANNED:
            return Response([])
        return Response([e.as_dict() for e in estimates(adaptive)])

    @extend_schema(responses=DecisionSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def decisions(self, request: Request, pk: str | None = None) -> Response:
        rows = Decision.objects.filter(adaptive=self.get_object()).select_related("actor")
        return Response(DecisionSerializer(rows, many=True).data)
