from django.db.models import Count
from django.http import HttpResponse
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.response import Response

from annotator import exports, services
from annotator.api.serializers import ParticipantSerializer, ReasonSerializer, StudySerializer
from annotator.models import Participant, Study
from annotator.prolific import ProlificError, prolific_client_or_none
from annotator.quality import participant_quality


class StudyActionError(APIException):
    """A StudyError as an HTTP answer: its message, with its status (400 or 409)."""

    def __init__(self, error: services.StudyError) -> None:
        self.status_code = error.status_code
        super().__init__(str(error))


class ProlificUnavailable(APIException):
    status_code = 502
    default_code = "prolific_error"


def run_service(work):
    try:
        return work()
    except services.StudyError as error:
        raise StudyActionError(error) from None
    except ProlificError as error:  # what Prolific answered, e.g. a refused change of places
        raise ProlificUnavailable(str(error)) from None


class StudyViewSet(viewsets.ModelViewSet):
    """Human rating studies: create, change (what is rated and how is frozen at the
    first rating: 409), open / pause / close, refill the quota, participants,
    quality control, comments and flags, exports."""

    serializer_class = StudySerializer
    filterset_fields = ["kind", "status", "rating_type"]
    search_fields = ["name"]

    def get_queryset(self):
        return (
            Study.objects.select_related("evaluator", "gold_evaluator", "baseline_system")
            .prefetch_related("systems", "documents")
            .annotate(
                task_count=Count("tasks", distinct=True),
                item_count=Count("items", distinct=True),
                rating_count=Count("items__ratings", distinct=True),
            )
            .order_by("-created_at")
        )

    def perform_create(self, serializer):
        self._save(serializer, Study())

    def perform_update(self, serializer):
        self._save(serializer, serializer.instance)

    def _save(self, serializer, study: Study) -> None:
        data = dict(serializer.validated_data)
        changed = data.pop("_changed", [])
        many = {k: data.pop(k) for k in ("systems", "documents") if k in data}
        for key, value in data.items():
            setattr(study, key, value)

        def set_many(saved: Study) -> None:
            for key, value in many.items():
                getattr(saved, key).set(value)

        run_service(
            lambda: services.save_study(
                study, changed, actor=self.request.user, after_save=set_many
            )
        )
        serializer.instance = study

    def destroy(self, request, *args, **kwargs):
        study = self.get_object()
        run_service(lambda: services.delete_study(study, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _status(self, request, new_status: str) -> Response:
        study = run_service(
            lambda: services.set_study_status(self.get_object(), new_status, request.user)
        )
        return Response({"status": study.status})

    @action(detail=True, methods=["post"])
    def build(self, request, pk=None):
        return Response(
            run_service(lambda: services.build_items(self.get_object(), actor=request.user))
        )

    @action(detail=True, methods=["post"])
    def open(self, request, pk=None):
        """Open, or reopen after a pause or a close."""
        return self._status(request, Study.Status.OPEN)

    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        """No new arrivals; participants with work in progress may finish."""
        return self._status(request, Study.Status.PAUSED)

    @action(detail=True, methods=["post"])
    def close(self, request, pk=None):
        return self._status(request, Study.Status.CLOSED)

    @action(detail=True, methods=["post"])
    def refill(self, request, pk=None):
        """Release stale work and report the open places (Prolific: raise its places)."""
        study = self.get_object()
        client = prolific_client_or_none() if study.prolific_study_id else None
        return Response(
            run_service(lambda: services.refill_quota(study, request.user, client=client))
        )

    @action(detail=True, methods=["get"])
    def quality(self, request, pk=None):
        return Response([row.__dict__ for row in participant_quality(self.get_object())])

    @action(detail=True, methods=["get"])
    def feedback(self, request, pk=None):
        """Raters' comments and flags on items."""
        return Response(exports.feedback_rows(self.get_object()))

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


class ParticipantViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Participants (read only; filter with ?study=ID); exclude and reinstate
    with a reason (audited). Participants are never deleted."""

    serializer_class = ParticipantSerializer
    filterset_fields = ["study", "status", "flagged"]
    queryset = Participant.objects.select_related("assignment__task", "study").order_by("pk")

    def _change(self, request, work) -> Response:
        reason = ReasonSerializer(data=request.data if isinstance(request.data, dict) else {})
        reason.is_valid(raise_exception=True)
        participant = self.get_object()
        changed = run_service(
            lambda: work(participant, request.user, reason.validated_data["reason"])
        )
        participant.refresh_from_db()
        return Response(ParticipantSerializer(participant).data | {"changed": changed})

    @action(detail=True, methods=["post"])
    def exclude(self, request, pk=None):
        """Exclude with a reason: ratings kept, out of the analysis, place reopened."""
        return self._change(request, services.exclude_participant)

    @action(detail=True, methods=["post"])
    def reinstate(self, request, pk=None):
        return self._change(request, services.reinstate_participant)
