from rest_framework import viewsets

from generation.api.filters import GenerationRunFilter, ResponseFilter
from generation.api.serializers import GenerationRunSerializer, ResponseSerializer, SystemSerializer
from generation.models import GenerationRun, Response, System


class SystemViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = System.objects.order_by("name")
    serializer_class = SystemSerializer
    filterset_fields = ["backend"]
    search_fields = ["name", "model_name"]


class GenerationRunViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = (
        GenerationRun.objects.select_related("system", "dataset").with_counts().order_by("id")
    )
    serializer_class = GenerationRunSerializer
    filterset_class = GenerationRunFilter


class ResponseViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ResponseSerializer
    filterset_class = ResponseFilter
    search_fields = ["text"]

    # Judgments come from the judging app (to the right of this one); they are
    # prefetched by relation name, so this app does not import judging's code.
    queryset = (
        Response.objects.select_related("run__system", "run__dataset", "question__document")
        .prefetch_related("judgments__evaluator")
        .order_by("id")
    )
