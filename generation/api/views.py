from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from generation.api.filters import GenerationRunFilter, ResponseFilter
from generation.api.serializers import (
    GenerationRunSerializer,
    GenerationStartSerializer,
    ResponseImportResultSerializer,
    ResponseImportSerializer,
    ResponseSerializer,
    SystemSerializer,
)
from generation.models import GenerationRun, System
from generation.models import Response as ResponseModel
from generation.response_import import import_responses, parse_responses, records_from_rows
from generation.runner import (
    cancel_generation_run,
    resume_generation_run,
    start_generation_run,
)
from runs.api import outcome_response, outcome_schema
from users.permissions import ProjectScopedMixin, same_project


class SystemViewSet(ProjectScopedMixin, viewsets.ReadOnlyModelViewSet):
    queryset = System.objects.order_by("name")
    serializer_class = SystemSerializer
    filterset_fields = ["backend"]
    shared_projects = True
    search_fields = ["name", "model_name"]


class GenerationRunViewSet(
    ProjectScopedMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Generation runs: POST {"system": NAME, "dataset": ID, "mode": "st", "seed": 2023}
    starts one (or resumes it) on the gpu or llm queue; GET shows done/total."""

    queryset = (
        GenerationRun.objects.select_related("system", "dataset").with_counts().order_by("id")
    )
    filterset_class = GenerationRunFilter

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return GenerationStartSerializer if self.action == "create" else GenerationRunSerializer

    @extend_schema(request=GenerationStartSerializer, responses={201: GenerationRunSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = GenerationStartSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project = self.project_for_create(data.get("project"))
        same_project(project, system=data["system"])
        # a GenerationError answers 400 through the API's exception handler
        run = start_generation_run(
            data["system"], data["dataset"], data["mode"], data.get("seed"), project=project
        )
        run = self.get_queryset().get(pk=run.pk)
        return Response(GenerationRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @outcome_schema
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        return outcome_response(cancel_generation_run(self.get_object()))

    @outcome_schema
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        """Answer what is not answered yet; a running or queued run is left alone
        (`changed` false, and `detail` says why)."""
        return outcome_response(resume_generation_run(self.get_object()))


class ResponseViewSet(ProjectScopedMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Responses; POST imports model outputs made elsewhere (one imported run per
    system, dataset, mode and seed), checked whole before anything is written."""

    serializer_class = ResponseSerializer
    filterset_class = ResponseFilter
    search_fields = ["text"]
    project_path = "run__project"

    # Judgments come from the judging app (to the right of this one); they are
    # prefetched by relation name, so this app does not import judging's code.
    queryset = (
        ResponseModel.objects.select_related("run__system", "run__dataset", "question__document")
        .prefetch_related("judgments__evaluator")
        .order_by("id")
    )

    def get_serializer_class(self) -> type[serializers.Serializer]:
        return ResponseImportSerializer if self.action == "create" else ResponseSerializer

    @extend_schema(
        request=ResponseImportSerializer, responses={201: ResponseImportResultSerializer}
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = ResponseImportSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        project = self.project_for_create(data.get("project"))
        # an ImportFailure (a question the dataset does not hold, ...) answers 400
        parsed = parse_responses(
            records_from_rows([dict(row) for row in data["responses"]], "responses"),
            system=data["system"],
            task=data["task"],
            mode=data["mode"],
        )
        result = import_responses(
            parsed,
            benchmark=data["benchmark"],
            split=data["split"],
            version=data["dataset_version"],
            language=data["language"],
            origin=f"API, {request.user}",
            project=project,
        )
        counts = {
            name: {"created": c.created, "updated": c.updated, "unchanged": c.unchanged}
            for name, c in result.counts.items()
        }
        return Response({"runs": result.runs, "counts": counts}, status=status.HTTP_201_CREATED)
