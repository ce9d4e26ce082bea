from django.db import transaction
from django.db.models import Count
from django.http import HttpResponse
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from annotator import exports, services
from annotator.api.serializers import StudySerializer
from annotator.models import Study
from annotator.quality import participant_quality


class StudyViewSet(viewsets.ModelViewSet):
    """Human rating studies: create, change (what is rated is frozen at the first
    rating), build items, open and close, quality control and exports."""

    serializer_class = StudySerializer
    filterset_fields = ["kind", "status"]
    search_fields = ["name"]

    def get_queryset(self):
        return (
            Study.objects.prefetch_related("systems", "documents")
            .annotate(
                task_count=Count("tasks", distinct=True),
                item_count=Count("items", distinct=True),
                rating_count=Count("items__ratings", distinct=True),
            )
            .order_by("-created_at")
        )

    @transaction.atomic
    def perform_create(self, serializer):
        self._save_and_build(serializer)

    @transaction.atomic
    def perform_update(self, serializer):
        self._save_and_build(serializer)

    def _save_and_build(self, serializer) -> None:
        """Save and (re)build the items; a selection that yields none is refused
        and nothing is saved."""
        study = serializer.save()
        if not services.has_ratings(study):
            try:
                services.build_items(study, actor=self.request.user)
            except services.StudyError as error:
                raise ValidationError({"detail": str(error)}) from None

    def destroy(self, request, *args, **kwargs):
        study = self.get_object()
        if services.has_ratings(study):
            return Response(
                {"detail": "A study with ratings cannot be deleted; close it."},
                status=status.HTTP_409_CONFLICT,
            )
        return super().destroy(request, *args, **kwargs)

    def _run(self, work) -> Response:
        try:
            result = work()
        except services.StudyError as error:
            return Response({"detail": str(error)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(result or {"detail": "done"})

    @action(detail=True, methods=["post"])
    def build(self, request, pk=None):
        return self._run(lambda: services.build_items(self.get_object(), actor=request.user))

    @action(detail=True, methods=["post"])
    def open(self, request, pk=None):
        return self._run(lambda: services.set_study_open(self.get_object(), True, request.user))

    @action(detail=True, methods=["post"])
    def close(self, request, pk=None):
        return self._run(lambda: services.set_study_open(self.get_object(), False, request.user))

    @action(detail=True, methods=["get"])
    def quality(self, request, pk=None):
        return Response([row.__dict__ for row in participant_quality(self.get_object())])

    @action(detail=True, methods=["get"], url_path="export/(?P<layout>tidy|wide)")
    def export(self, request, pk=None, layout="tidy"):
        study = self.get_object()
        if layout == "wide":
            columns, rows = exports.wide_rows(study)
        else:
            columns, rows = exports.TIDY_COLUMNS, exports.tidy_rows(study)
        answer = HttpResponse(exports.to_csv(columns, rows), content_type="text/csv")
        answer["Content-Disposition"] = f'attachment; filename="study-{study.pk}-{layout}.csv"'
        return answer
