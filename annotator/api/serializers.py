from rest_framework import serializers

from annotator import services
from annotator.models import Study
from corpus.models import Dataset, Document
from generation.models import System

SELECTION_FIELDS = ("kind", "dataset", "mode", "seed", "systems", "documents", "attention_checks")


class StudySerializer(serializers.ModelSerializer):
    systems = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=System.objects.all()
    )
    documents = serializers.SlugRelatedField(
        slug_field="external_id", many=True, required=False, queryset=Document.objects.all()
    )
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    participant_url = serializers.SerializerMethodField()
    task_count = serializers.SerializerMethodField()
    item_count = serializers.SerializerMethodField()
    rating_count = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "id",
            "name",
            "kind",
            "public_id",
            "dataset",
            "mode",
            "seed",
            "systems",
            "documents",
            "raters_per_task",
            "rubric",
            "guidelines",
            "estimated_minutes",
            "hourly_pay",
            "completion_code",
            "failed_attention_code",
            "attention_checks",
            "stale_after_minutes",
            "gold_evaluator",
            "min_gold_correlation",
            "status",
            "prolific_study_id",
            "participant_url",
            "task_count",
            "item_count",
            "rating_count",
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
        base = request.build_absolute_uri("/") if request else "/"
        return services.prolific_study_url(study, base) if study.kind == Study.Kind.CROWD else ""

    def validate(self, attrs):
        study = self.instance
        if study is not None and services.has_ratings(study):
            changed = [
                f
                for f in SELECTION_FIELDS
                if f in attrs
                and _value(attrs[f])
                != _value(
                    getattr(study, f)
                    if f not in ("systems", "documents")
                    else list(getattr(study, f).all())
                )
            ]
            if changed:
                raise serializers.ValidationError(
                    f"This study already has ratings, so what it rates cannot change "
                    f"({', '.join(changed)}). Create a new study instead."
                )
        return attrs


def _annotated(study: Study, name: str, fallback) -> int:
    found = getattr(study, name, None)
    return found if found is not None else fallback.count()


def _value(value):
    if isinstance(value, list):
        return sorted(v.pk for v in value)
    return getattr(value, "pk", value)
