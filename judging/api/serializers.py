from rest_framework import serializers

from judging.models import Evaluator, Judgment


class EvaluatorSerializer(serializers.ModelSerializer):
    judgment_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Evaluator
        fields = [
            "id",
            "name",
            "kind",
            "description",
            "config",
            "raw_scale_min",
            "raw_scale_max",
            "judgment_count",
        ]


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
