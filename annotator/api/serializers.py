from __future__ import annotations

from typing import Any

from django.db.models import Manager, QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from annotator.actions.prolific_sync import prolific_study_url
from annotator.actions.settings import validate_study_change
from annotator.models import Participant, Study
from annotator.selectors import progress
from core.serializers import KnownFieldsMixin, NameRelatedField
from corpus.models import Dataset, Document
from generation.models import System
from judging.models import Evaluator
from users.models import User
from users.permissions import ProjectField

MANY_TO_MANY = ("systems", "documents", "gold_annotators")


class TaskProgressSerializer(serializers.Serializer):
    task = serializers.CharField()
    items = serializers.IntegerField()
    active = serializers.IntegerField()
    completed = serializers.IntegerField()
    excluded = serializers.IntegerField()
    released = serializers.IntegerField()
    wanted = serializers.IntegerField()
    open_places = serializers.IntegerField()


class StudyProgressSerializer(serializers.Serializer):
    tasks = TaskProgressSerializer(many=True)
    completed = serializers.IntegerField()
    active = serializers.IntegerField()
    wanted = serializers.IntegerField()


class StudySerializer(KnownFieldsMixin, serializers.ModelSerializer):
    """A study's settings; saving goes through annotator.actions.settings.check_save_study (the
    view calls it), which refuses invalid settings, empty selections and changes
    of what is rated once anyone arrived or rated."""

    project = ProjectField()
    systems = NameRelatedField(slug_field="name", many=True, queryset=System.objects.all())
    gold_annotators = NameRelatedField(
        slug_field="username",
        many=True,
        required=False,
        queryset=User.objects.filter(role=User.Role.GOLD_ANNOTATOR, is_active=True),
        help_text="Gold studies: the gold annotators' usernames who may rate it "
        "(they see only the studies they are assigned to).",
    )
    documents = NameRelatedField(
        slug_field="external_id", many=True, required=False, queryset=Document.objects.all()
    )
    baseline_system = NameRelatedField(
        slug_field="name", required=False, allow_null=True, queryset=System.objects.all()
    )
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    gold_evaluator = NameRelatedField(
        slug_field="name", required=False, allow_null=True, queryset=Evaluator.objects.all()
    )
    evaluator = serializers.CharField(source="evaluator.name", read_only=True, default=None)
    raters_per_task = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    estimated_minutes = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    scale_labels = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, max_length=10
    )
    practice_items = serializers.ListField(
        child=serializers.DictField(), required=False, max_length=50
    )
    participant_url = serializers.SerializerMethodField()
    task_count = serializers.SerializerMethodField()
    item_count = serializers.SerializerMethodField()
    rating_count = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "project",
            "gold_annotators",
            "id",
            "name",
            "kind",
            "rating_type",
            "public_id",
            "status",
            "dataset",
            "mode",
            "seed",
            "systems",
            "baseline_system",
            "documents",
            "raters_per_task",
            "scale_max",
            "scale_labels",
            "rubric",
            "guidelines",
            "estimated_minutes",
            "hourly_pay",
            "completion_code",
            "failed_attention_code",
            "attention_checks",
            "practice_items",
            "practice_pass",
            "transcript_for_crowd",
            "stale_after_minutes",
            "gold_evaluator",
            "min_gold_correlation",
            "min_median_seconds",
            "evaluator",
            "prolific_study_id",
            "participant_url",
            "task_count",
            "item_count",
            "rating_count",
            "progress",
            "created_at",
        ]
        read_only_fields = ["public_id", "status", "prolific_study_id", "created_at"]

    # Lists annotate the counts; a study just created or changed is counted here.
    def get_task_count(self, study: Study) -> int:
        return _annotated(study, "task_count", study.tasks)

    def get_item_count(self, study: Study) -> int:
        return _annotated(study, "item_count", study.items)

    def get_rating_count(self, study: Study) -> int:
        return _annotated(study, "rating_count", study.items.filter(ratings__isnull=False))

    def get_participant_url(self, study: Study) -> str:
        request = self.context.get("request")
        base = public_base_url(request)
        return prolific_study_url(study, base) if study.kind == Study.Kind.CROWD else ""

    @extend_schema_field(StudyProgressSerializer)
    def get_progress(self, study: Study) -> dict:
        """Participants (each counted once) per task and in total."""
        rows = progress(study)
        return {
            "tasks": [
                {
                    "task": r.label,
                    "items": r.items,
                    "active": r.active,
                    "completed": r.completed,
                    "excluded": r.excluded,
                    "released": r.released,
                    "wanted": r.wanted,
                    "open_places": r.open_places,
                }
                for r in rows
            ],
            "completed": sum(r.completed for r in rows),
            "active": sum(r.active for r in rows),
            "wanted": sum(r.wanted for r in rows),
        }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Check the settings and the selection before anything is saved: a
        StudyError (400) or StudyConflict (409) reaches the client as it is."""
        systems = attrs.get("systems", list(self.instance.systems.all()) if self.instance else [])
        documents = attrs.get(
            "documents", list(self.instance.documents.all()) if self.instance else []
        )
        if (
            self.instance is not None
            and "project" in attrs
            and attrs.pop("project") != self.instance.project
        ):
            raise serializers.ValidationError({"project": "A study stays in its project."})
        if self.instance is None:
            # the project it is made in, chosen before its runs are looked for
            view = self.context.get("view")
            if view is not None and hasattr(view, "project_for_create"):
                attrs["project"] = view.project_for_create(attrs.get("project"))
        changed = changed_fields(self.instance, attrs)
        validate_study_change(self.instance, attrs, systems, documents, changed)
        attrs["_changed"] = changed
        return attrs


def changed_fields(instance: Study | None, attrs: dict[str, Any]) -> list[str]:
    if instance is None:
        return sorted(k for k in attrs if not k.startswith("_"))
    changed = []
    for key, value in attrs.items():
        if key.startswith("_"):
            continue
        old = list(getattr(instance, key).all()) if key in MANY_TO_MANY else getattr(instance, key)
        if _value(old) != _value(value):
            changed.append(key)
    return changed


def _annotated(study: Study, name: str, fallback: Manager[Any] | QuerySet[Any]) -> int:
    found = getattr(study, name, None)
    return found if found is not None else fallback.count()


def _value(value: Any) -> Any:
    """A field's value as compared for a change: related objects by their keys."""
    if isinstance(value, list | tuple) and value and hasattr(value[0], "pk"):
        return sorted(v.pk for v in value)
    return getattr(value, "pk", value)


def public_base_url(request: Request | None) -> str:
    from django.conf import settings

    return settings.CONCORD_PUBLIC_URL or (request.build_absolute_uri("/") if request else "/")


class ParticipantSerializer(serializers.ModelSerializer):
    rater = serializers.CharField(source="rater_id", read_only=True)
    task = serializers.CharField(source="assignment.task.label", read_only=True, default="")
    assignment_status = serializers.CharField(
        source="assignment.status", read_only=True, default=""
    )
    other_session_ids = serializers.JSONField(
        source="assignment.other_session_ids",
        read_only=True,
        # the stubs allow only a mapping; the value is a list of SESSION_IDs
        default=list,  # type: ignore[arg-type]
    )
    other_device_allowed_until = serializers.DateTimeField(
        source="assignment.other_device_allowed_until",
        read_only=True,
        default=None,
        allow_null=True,
        help_text="Set by allow-other-device: until then, one arrival from another browser "
        "may take up this participant's work.",
    )

    class Meta:
        model = Participant
        fields = [
            "id",
            "study",
            "rater",
            "status",
            "exclusion_reason",
            "flagged",
            "flag_reason",
            "task",
            "assignment_status",
            "other_session_ids",
            "other_device_allowed_until",
            "created_at",
        ]
        read_only_fields = fields


class ReasonSerializer(KnownFieldsMixin, serializers.Serializer):
    # left out: none; given: a non-blank text (the audit log keeps it)
    reason = serializers.CharField(max_length=2000, required=False, default="")


class ParticipantChangeSerializer(ParticipantSerializer):
    """A participant after an exclusion, a reinstatement or an allowance of another
    device; `changed` is false when it was already so."""

    changed = serializers.BooleanField(read_only=True)

    class Meta(ParticipantSerializer.Meta):
        fields = [*ParticipantSerializer.Meta.fields, "changed"]
        read_only_fields = fields


# --- What the study actions answer (for the schema) ---------------------------------------------


class StudyStatusSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Study.Status.choices)


class BuildResultSerializer(serializers.Serializer):
    tasks = serializers.IntegerField()
    items = serializers.IntegerField()
    responses = serializers.IntegerField()


class RefillResultSerializer(serializers.Serializer):
    released = serializers.IntegerField(help_text="Stale assignments released now.")
    open_places = serializers.IntegerField()
    prolific_places = serializers.IntegerField(
        help_text="The places set on Prolific (0 when the study is not on Prolific)."
    )


class ParticipantQualitySerializer(serializers.Serializer):
    """One participant's rater statistics (annotator.quality.ParticipantQuality)."""

    participant_id = serializers.IntegerField()
    rater = serializers.CharField()
    status = serializers.ChoiceField(choices=Participant.Status.choices)
    status_label = serializers.CharField()
    task = serializers.CharField()
    assignment_status = serializers.CharField()
    ratings = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    attention_passed = serializers.BooleanField(allow_null=True)
    practice_passed = serializers.BooleanField(allow_null=True)
    gold_correlation = serializers.FloatField(allow_null=True)
    gold_note = serializers.CharField()
    straight_lined = serializers.BooleanField()
    other_session_ids = serializers.ListField(child=serializers.CharField())
    comments = serializers.IntegerField()
    item_flags = serializers.IntegerField()
    flagged = serializers.BooleanField()
    flag_reason = serializers.CharField()


class FeedbackRowSerializer(serializers.Serializer):
    """A rater's comment or flag on an item (annotator.exports.feedback_rows)."""

    task = serializers.CharField()
    item_id = serializers.IntegerField()
    response_id = serializers.IntegerField(allow_null=True)
    question = serializers.CharField()
    participant = serializers.CharField()
    flag = serializers.CharField()
    flag_label = serializers.CharField()
    comment = serializers.CharField()
    updated_at = serializers.DateTimeField()
