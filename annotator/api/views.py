from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Count, QuerySet
from django.http import HttpResponse
from django.utils.timezone import localdate
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from annotator import exports
from annotator.actions.arrival import OTHER_DEVICE_HOURS, check_allow_other_device
from annotator.actions.items import check_build_items
from annotator.actions.participants import (
    check_exclude_participant,
    check_refill_quota,
    check_reinstate_participant,
)
from annotator.actions.settings import check_delete_study, check_save_study
from annotator.actions.status import check_set_study_status
from annotator.api.serializers import (
    BuildResultSerializer,
    FeedbackRowSerializer,
    ParticipantChangeSerializer,
    ParticipantQualitySerializer,
    ParticipantSerializer,
    ReasonSerializer,
    RefillResultSerializer,
    StudySerializer,
    StudyStatusSerializer,
)
from annotator.models import Participant, Study
from annotator.prolific_api import prolific_client_or_none
from annotator.quality import participant_quality
from core.api import ErrorSerializer, ValidationErrorSerializer
from core.downloads import as_attachment, export_filename
from core.spreadsheet import csv_text
from users.models import Project, User
from users.permissions import ProjectScopedMixin, same_project, signed_in_user

REFUSED = OpenApiResponse(ErrorSerializer, "The study cannot do this now; `detail` says why.")
CONFLICT = OpenApiResponse(ErrorSerializer, "Refused: it would change what was rated.")
PROLIFIC_FAILED = OpenApiResponse(ErrorSerializer, "Prolific refused the change or is down.")

F = TypeVar("F", bound=Callable[..., Any])


def status_action(description: str) -> Callable[[F], F]:
    return extend_schema(
        request=None,
        responses={200: StudyStatusSerializer, 400: REFUSED},
        description=description,
    )


@extend_schema_view(
    update=extend_schema(responses={200: StudySerializer, 409: CONFLICT}),
    partial_update=extend_schema(responses={200: StudySerializer, 409: CONFLICT}),
    destroy=extend_schema(
        responses={
            204: None,
            409: OpenApiResponse(ErrorSerializer, "The study has participants: close it instead."),
        }
    ),
)
class StudyViewSet(ProjectScopedMixin, viewsets.ModelViewSet):
    """Human rating studies: create, change (what is rated and how is frozen at the
    first arrival: 409), open / pause / close, refill the quota, participants,
    quality control, comments and flags, exports."""

    serializer_class = StudySerializer
    filterset_fields = ["kind", "status", "rating_type"]
    search_fields = ["name"]

    def get_queryset(self) -> QuerySet[Study]:
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

    def perform_create(self, serializer: BaseSerializer[Study]) -> None:
        project = self.project_for_create(serializer.validated_data.get("project"))
        self._same_project(serializer, project)
        self._save(serializer, Study(project=project))

    def perform_update(self, serializer: BaseSerializer[Study]) -> None:
        assert serializer.instance is not None  # an update's serializer holds its study
        # a member of two projects sees both projects' systems: a study takes its own
        self._same_project(serializer, serializer.instance.project)
        self._save(serializer, serializer.instance)

    @staticmethod
    def _same_project(serializer: BaseSerializer[Study], project: Project) -> None:
        data = serializer.validated_data
        same_project(
            project,
            systems=list(data.get("systems", [])),
            baseline_system=data.get("baseline_system"),
            gold_evaluator=data.get("gold_evaluator"),
        )

    def _save(self, serializer: BaseSerializer[Study], study: Study) -> None:
        data = dict(serializer.validated_data)
        data.pop("project", None)  # chosen at creation, never changed
        changed = data.pop("_changed", [])
        many = {k: data.pop(k) for k in ("systems", "documents", "gold_annotators") if k in data}
        for key, value in data.items():
            setattr(study, key, value)

        def set_many(saved: Study) -> None:
            for key, value in many.items():
                getattr(saved, key).set(value)

        check_save_study(study, changed, actor=signed_in_user(self.request), after_save=set_many)
        serializer.instance = study

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        check_delete_study(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _status(self, request: Request, new_status: str) -> Response:
        study = check_set_study_status(self.get_object(), new_status, signed_in_user(request))
        return Response({"status": study.status})

    @extend_schema(
        request=None,
        responses={200: BuildResultSerializer, 400: REFUSED, 409: CONFLICT},
        description=(
            "(Re)build the tasks and items from the selection; refused (409, with the "
            "reason) once anyone has arrived or rated."
        ),
    )
    @action(detail=True, methods=["post"])
    def build(self, request: Request, pk: str | None = None) -> Response:
        return Response(check_build_items(self.get_object(), actor=signed_in_user(request)))

    @status_action("Open, or reopen after a pause or a close (the study needs its items).")
    @action(detail=True, methods=["post"])
    def open(self, request: Request, pk: str | None = None) -> Response:
        return self._status(request, Study.Status.OPEN)

    @status_action("No new arrivals; participants with work in progress may finish.")
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str | None = None) -> Response:
        return self._status(request, Study.Status.PAUSED)

    @status_action("No arrivals and no more ratings; ratings so far are kept.")
    @action(detail=True, methods=["post"])
    def close(self, request: Request, pk: str | None = None) -> Response:
        return self._status(request, Study.Status.CLOSED)

    @extend_schema(
        request=None,
        responses={200: RefillResultSerializer, 502: PROLIFIC_FAILED},
        description=(
            "Release stale work and report the open places (on Prolific: raise its places)."
        ),
    )
    @action(detail=True, methods=["post"])
    def refill(self, request: Request, pk: str | None = None) -> Response:
        study = self.get_object()
        client = prolific_client_or_none() if study.prolific_study_id else None
        return Response(check_refill_quota(study, signed_in_user(request), client=client))

    @extend_schema(
        responses=ParticipantQualitySerializer(many=True),
        description="Each participant's rater statistics and automatic flags.",
    )
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def quality(self, request: Request, pk: str | None = None) -> Response:
        return Response([row.__dict__ for row in participant_quality(self.get_object())])

    @extend_schema(
        responses=FeedbackRowSerializer(many=True),
        description="Raters' comments and flags on items.",
    )
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def feedback(self, request: Request, pk: str | None = None) -> Response:
        return Response(exports.feedback_rows(self.get_object()))

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "layout",
                str,
                OpenApiParameter.PATH,
                enum=["tidy", "wide"],
                description="tidy: one row per rating; wide: one row per item, a column per rater.",
            )
        ],
        responses={(200, "text/csv"): OpenApiTypes.STR},
        description="The study's ratings as a CSV file.",
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="export/(?P<layout>tidy|wide)",
        pagination_class=None,
        filter_backends=[],
    )
    def export(self, request: Request, pk: str | None = None, layout: str = "tidy") -> HttpResponse:
        study = self.get_object()
        if layout == "wide":
            columns, rows = exports.wide_rows(study)
        else:
            columns, rows = exports.TIDY_COLUMNS, exports.tidy_rows(study)
        answer = HttpResponse(csv_text(columns, rows), content_type="text/csv")
        fmt = "csv-wide" if layout == "wide" else "csv"
        name = export_filename(exports.ratings_subject([study]), fmt, localdate())
        return as_attachment(answer, name)


def participant_change(description: str) -> Callable[[F], F]:
    return extend_schema(
        request=ReasonSerializer,
        responses={
            200: ParticipantChangeSerializer,
            400: OpenApiResponse(
                ValidationErrorSerializer, "No reason given (to exclude), or a reason too long."
            ),
        },
        description=description,
    )


class ParticipantViewSet(
    ProjectScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Participants (read only; filter with ?study=ID); exclude and reinstate
    with a reason, allow another device (audited). Participants are never deleted."""

    serializer_class = ParticipantSerializer
    filterset_fields = ["study", "status", "flagged"]
    project_path = "study__project"
    queryset = Participant.objects.select_related("assignment__task", "study").order_by("pk")

    def _change(self, request: Request, work: Callable[[Participant, User, str], bool]) -> Response:
        reason = ReasonSerializer(data=request.data)
        reason.is_valid(raise_exception=True)
        participant = self.get_object()
        changed = work(participant, signed_in_user(request), reason.validated_data["reason"])
        participant.refresh_from_db()
        return Response(ParticipantChangeSerializer(participant).data | {"changed": changed})

    @participant_change("Exclude with a reason: ratings kept, out of the analysis, place reopened.")
    @action(detail=True, methods=["post"], filter_backends=[])
    def exclude(self, request: Request, pk: str | None = None) -> Response:
        return self._change(request, check_exclude_participant)

    @participant_change("Take an excluded participant back (the reason is optional).")
    @action(detail=True, methods=["post"], filter_backends=[])
    def reinstate(self, request: Request, pk: str | None = None) -> Response:
        return self._change(request, check_reinstate_participant)

    @extend_schema(
        request=ReasonSerializer,
        responses={
            200: ParticipantChangeSerializer,
            400: OpenApiResponse(
                ValidationErrorSerializer,
                "Not a crowd participant with a task, or excluded (`detail` says which); "
                "or a reason too long.",
            ),
        },
        description=(
            "Let a crowd participant take up their work once from another browser, with any "
            f"SESSION_ID, within {OTHER_DEVICE_HOURS} hours (one who switched device "
            "and whose Prolific session changed). The reason is optional; audited."
        ),
    )
    @action(detail=True, methods=["post"], url_path="allow-other-device", filter_backends=[])
    def allow_other_device(self, request: Request, pk: str | None = None) -> Response:
        return self._change(request, check_allow_other_device)
