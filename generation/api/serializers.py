from typing import cast

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.serializers import KnownFieldsMixin, NameRelatedField
from corpus.choices import DatasetVersion, Language, Mode
from corpus.models import Dataset
from generation.models import GenerationRun, Response, System
from users.permissions import ProjectField


class SystemSerializer(serializers.ModelSerializer):
    project = ProjectField(
        read_only=True, allow_null=True, help_text="null: shared by every project."
    )

    class Meta:
        model = System
        fields = ["id", "name", "project", "model_name", "backend", "config", "description"]


class GenerationRunSerializer(serializers.ModelSerializer):
    project = ProjectField(read_only=True)
    system = serializers.CharField(source="system.name", read_only=True)
    version = serializers.CharField(source="dataset.version", read_only=True)
    language = serializers.CharField(source="dataset.language", read_only=True)
    split = serializers.CharField(source="dataset.split", read_only=True)
    response_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = GenerationRun
        fields = [
            "id",
            "project",
            "system",
            "dataset",
            "version",
            "language",
            "split",
            "mode",
            "seed",
            "origin",
            "status",
            "source",
            "response_count",
            "total",
            "done",
            "failed",
            "requests",
            "cache_hits",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "counted_usage",
            "waiting_until",
            "generated_tokens",
            "tokens_per_second",
            "eta_seconds",
            "message",
            "started_at",
            "finished_at",
            "created_at",
            "lease_owner",
            "heartbeat_at",
        ]

    tokens_per_second = serializers.FloatField(read_only=True, allow_null=True)
    eta_seconds = serializers.FloatField(read_only=True, allow_null=True)


class ResponseJudgmentSerializer(serializers.Serializer):
    evaluator = serializers.CharField(source="evaluator.name")
    rater = serializers.CharField()
    seed = serializers.IntegerField(allow_null=True)
    score = serializers.FloatField()


class ResponseSerializer(serializers.ModelSerializer):
    system = serializers.CharField(source="run.system.name", read_only=True)
    mode = serializers.CharField(source="run.mode", read_only=True)
    version = serializers.CharField(source="run.dataset.version", read_only=True)
    split = serializers.CharField(source="run.dataset.split", read_only=True)
    document = serializers.CharField(source="question.document.external_id", read_only=True)
    question_external_id = serializers.CharField(source="question.external_id", read_only=True)
    judgments = serializers.SerializerMethodField()

    class Meta:
        model = Response
        fields = [
            "id",
            "run",
            "system",
            "mode",
            "version",
            "split",
            "document",
            "question",
            "question_external_id",
            "text",
            "judgments",
            "created_at",
        ]

    @extend_schema_field(ResponseJudgmentSerializer(many=True))
    def get_judgments(self, response: Response) -> list[dict]:
        judgments = sorted(
            response.judgments.all(),
            key=lambda j: (j.evaluator.name, j.rater, j.seed or 0, j.order),
        )
        # many=True makes a ListSerializer, whose data is a list (the stubs type it a dict)
        return cast(list[dict], ResponseJudgmentSerializer(judgments, many=True).data)


class GenerationStartSerializer(KnownFieldsMixin, serializers.Serializer):
    project = ProjectField()
    system = NameRelatedField(slug_field="name", queryset=System.objects.all())
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    mode = serializers.ChoiceField(choices=Mode.choices)
    seed = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=2**31 - 1
    )


class ImportedResponseSerializer(KnownFieldsMixin, serializers.Serializer):
    """One response of an import (generation.response_import)."""

    document_id = serializers.CharField(max_length=200)
    question_id = serializers.CharField(max_length=100)
    response = serializers.CharField(allow_blank=True, trim_whitespace=False)
    system = serializers.CharField(max_length=200, required=False)
    task = serializers.CharField(max_length=64, required=False, allow_blank=True)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    mode = serializers.ChoiceField(choices=Mode.choices, required=False)


class ResponseImportSerializer(KnownFieldsMixin, serializers.Serializer):
    """POST /api/responses/: model outputs made elsewhere, for an imported dataset."""

    project = ProjectField()
    benchmark = serializers.SlugField(max_length=64)
    split = serializers.SlugField(max_length=32)
    dataset_version = serializers.ChoiceField(choices=DatasetVersion.choices, default="qa")
    language = serializers.ChoiceField(choices=Language.choices, default="en")
    system = serializers.CharField(max_length=200, required=False, default="")
    task = serializers.CharField(max_length=64, required=False, default="", allow_blank=True)
    mode = serializers.ChoiceField(choices=Mode.choices, default=Mode.SINGLE_TURN)
    # max_length is a ListSerializer option (DRF 3.14+) the stubs do not know yet
    responses = ImportedResponseSerializer(many=True, allow_empty=False, max_length=100_000)  # type: ignore[call-arg]


class ResponseImportResultSerializer(serializers.Serializer):
    runs = serializers.ListField(child=serializers.IntegerField())
    counts = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))
