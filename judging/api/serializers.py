from rest_framework import serializers

from corpus.models import Dataset
from generation.models import System
from judging.llm.config import ConfigError, JudgeConfig
from judging.models import Evaluator, JudgingRun, Judgment

LLM_KINDS = (Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE)


class EvaluatorSerializer(serializers.ModelSerializer):
    judgment_count = serializers.IntegerField(read_only=True, default=0)

    class Meta:
        model = Evaluator
        fields = [
            "id",
            "name",
            "kind",
            "version",
            "description",
            "config",
            "raw_scale_min",
            "raw_scale_max",
            "judgment_count",
        ]
        read_only_fields = ["version"]

    def validate(self, attrs):
        kind = attrs.get("kind", getattr(self.instance, "kind", None))
        config = attrs.get("config", getattr(self.instance, "config", {}))
        if kind in LLM_KINDS:
            try:
                JudgeConfig.from_dict(config or {})
            except (ConfigError, TypeError, ValueError) as error:
                raise serializers.ValidationError({"config": str(error)}) from None
        if (
            self.instance is not None
            and "config" in attrs
            and attrs["config"] != self.instance.config
            and self.instance.judgments.exists()
        ):
            raise serializers.ValidationError(
                {
                    "config": (
                        "This evaluator has judgments: its configuration is frozen. Create a new "
                        "evaluator instead."
                    )
                }
            )
        return attrs


class JudgmentSerializer(serializers.ModelSerializer):
    evaluator = serializers.CharField(source="evaluator.name", read_only=True)
    system = serializers.CharField(source="response.run.system.name", read_only=True)

    class Meta:
        model = Judgment
        fields = [
            "id",
            "evaluator",
            "response",
            "system",
            "rater",
            "seed",
            "order",
            "score",
            "raw_score",
            "raw_scale_min",
            "raw_scale_max",
            "feedback",
            "created_at",
        ]


# What a run reports as it goes (read only).
RUN_PROGRESS = [
    "status",
    "total",
    "done",
    "failed",
    "requests",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "projected_cost",
    "cost",
    "batch_status",
    "message",
    "created_at",
    "started_at",
    "finished_at",
]


class JudgingRunSerializer(serializers.ModelSerializer):
    evaluator = serializers.SlugRelatedField(slug_field="name", queryset=Evaluator.objects.all())
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    systems = serializers.SlugRelatedField(
        slug_field="name", many=True, required=False, queryset=System.objects.all()
    )

    class Meta:
        model = JudgingRun
        fields = [
            "id",
            "evaluator",
            "dataset",
            "mode",
            "systems",
            "budget",
            "refresh",
            "use_batch",
            *RUN_PROGRESS,
        ]
        read_only_fields = RUN_PROGRESS
