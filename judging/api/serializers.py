from typing import Any

from rest_framework import serializers

from core.parsers import MAX_DEPTH, json_depth
from core.serializers import KnownFieldsMixin, NameRelatedField, StrictFloatField
from corpus.models import Dataset
from generation.models import System
from judging.evaluators import checked_judge
from judging.evaluators.config import ConfigError
from judging.evaluators.frozen import check_not_frozen
from judging.forms import CONFIRM_OVER_BUDGET
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment
from judging.parsers import Verdict
from users.permissions import ProjectField

LLM_KINDS = (Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE)


def has_nul(value: object) -> bool:
    """Whether a NUL character hides in a JSON value (PostgreSQL's jsonb refuses it)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class ConfigField(serializers.JSONField):
    """A configuration: a JSON object that PostgreSQL stores and Concord reads
    back (nested at most MAX_DEPTH levels, no NUL character)."""

    def to_internal_value(self, data: object) -> dict[str, Any]:
        try:  # a form's text is parsed here, not by the JSON parser
            # the stubs take only a dict or a list; DRF takes any JSON value, or a form's text
            value = super().to_internal_value(data)  # type: ignore[arg-type]
        except RecursionError:
            raise serializers.ValidationError(
                f"Nested too deeply (at most {MAX_DEPTH} levels)."
            ) from None
        if not isinstance(value, dict):
            raise serializers.ValidationError("Expected a JSON object.")
        if json_depth(value) > MAX_DEPTH:
            raise serializers.ValidationError(f"Nested too deeply (at most {MAX_DEPTH} levels).")
        if has_nul(value):
            raise serializers.ValidationError("NUL characters (\\u0000) cannot be stored.")
        return value


class EvaluatorSerializer(KnownFieldsMixin, serializers.ModelSerializer):
    """Once an evaluator has judgments or pairwise verdicts, changing its name,
    kind, raw scale or configuration answers 409 Conflict (its description may
    still change). Its origin is set by Concord and never by the API."""

    judgment_count = serializers.IntegerField(read_only=True, default=0)
    project = ProjectField(
        allow_null=True,
        help_text="Written at creation (optional when you write to one project only); "
        "null: shared by every project (metrics, a published release's evaluators); "
        "sent as null, the same as not sent.",
    )
    config = ConfigField(required=False)
    raw_scale_min = StrictFloatField(required=False)
    raw_scale_max = StrictFloatField(required=False)

    class Meta:
        model = Evaluator
        fields = [
            "id",
            "name",
            "project",
            "kind",
            "origin",
            "version",
            "description",
            "config",
            "raw_scale_min",
            "raw_scale_max",
            "judgment_count",
        ]
        read_only_fields = ["origin", "version"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        origin = self.initial_data.get("origin") if isinstance(self.initial_data, dict) else None
        current_origin = getattr(self.instance, "origin", Evaluator.Origin.CONCORD)
        if (
            self.instance is not None
            and "project" in attrs
            and attrs.pop("project") != self.instance.project
        ):
            raise serializers.ValidationError(
                {"project": "An evaluator stays in the project it was made in."}
            )
        if self.instance is not None:
            changes = dict(attrs)
            if origin is not None:
                changes["origin"] = origin
            check_not_frozen(self.instance, changes)  # EvaluatorFrozen: 409
        if origin is not None and origin != current_origin:
            raise serializers.ValidationError(
                {"origin": "Read-only: Concord sets where an evaluator's scores come from."}
            )
        low = attrs.get("raw_scale_min", getattr(self.instance, "raw_scale_min", 1))
        high = attrs.get("raw_scale_max", getattr(self.instance, "raw_scale_max", 10))
        if not low < high:
            raise serializers.ValidationError(
                {"raw_scale_max": f"Must be above raw_scale_min ({low:g})."}
            )
        kind = attrs.get("kind", getattr(self.instance, "kind", None))
        config = attrs.get("config", getattr(self.instance, "config", {}))
        if kind in LLM_KINDS:
            try:
                checked_judge(kind, config or {})
            except ConfigError as error:
                raise serializers.ValidationError({"config": str(error)}) from None
        if kind == Evaluator.Kind.PANEL:
            from judging.panels import checked_panel

            try:
                attrs["config"] = checked_panel(config)
            except ConfigError as error:
                raise serializers.ValidationError({"config": str(error)}) from None
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
            "probability",
            "created_at",
        ]
        # the judge's tokens' (judging.token_probability): never entered
        read_only_fields = ["probability"]


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
    "counted_usage",
    "waiting_until",
    "batch_status",
    "message",
    "created_at",
    "started_at",
    "finished_at",
    "lease_owner",
    "heartbeat_at",
]


class JudgeNameField(NameRelatedField):
    """An evaluator by name; a registered metric ("metric: f1") is named before
    its shared evaluator exists, which is made then (as the console's form does)."""

    def to_internal_value(self, data: object) -> Any:
        from judging.evaluators import registry
        from judging.judging_runs import ensure_metric_evaluator

        for name, metric in registry.metrics().items():
            if data == metric.evaluator_name:
                ensure_metric_evaluator(name)
        return super().to_internal_value(data)


class JudgingRunSerializer(KnownFieldsMixin, serializers.ModelSerializer):
    project = ProjectField()
    evaluator = JudgeNameField(slug_field="name", queryset=Evaluator.objects.all())
    dataset = serializers.PrimaryKeyRelatedField(queryset=Dataset.objects.all())
    systems = NameRelatedField(
        slug_field="name", many=True, required=False, queryset=System.objects.all()
    )
    confirm_over_budget = serializers.BooleanField(
        write_only=True,
        required=False,
        default=False,
        help_text=CONFIRM_OVER_BUDGET,
    )

    class Meta:
        model = JudgingRun
        fields = [
            "id",
            "project",
            "evaluator",
            "dataset",
            "mode",
            "systems",
            "budget",
            "refresh",
            "use_batch",
            "confirm_over_budget",
            *RUN_PROGRESS,
        ]
        read_only_fields = RUN_PROGRESS


class JudgeItemSerializer(serializers.ModelSerializer):
    """A run's item (read only): its status, why it needs a human, and the
    judge's raw answer to read when resolving it."""

    evaluator = serializers.CharField(source="run.evaluator.name", read_only=True)
    raw_answer = serializers.SerializerMethodField()

    class Meta:
        model = JudgeItem
        fields = [
            "id",
            "run",
            "evaluator",
            "response",
            "opponent",
            "seed",
            "order",
            "status",
            "outcome",
            "attempts",
            "detail",
            "raw_answer",
        ]

    def get_raw_answer(self, item: JudgeItem) -> str:
        return item.call.raw_output if item.call else ""


class ResolveSerializer(KnownFieldsMixin, serializers.Serializer):
    """A researcher's reading of a judge's answer: `score` (on the judge's own
    scale) for a scoring judge, `verdict` (A, B or tie) for a pairwise one.
    The judge's protocol says which it takes and checks the value."""

    score = serializers.IntegerField(required=False)
    verdict = serializers.ChoiceField(
        choices=[verdict.label for verdict in Verdict], required=False
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if len(attrs) != 1:
            raise serializers.ValidationError(
                "Send either score (a scoring judge) or verdict (A, B or tie: a pairwise judge)."
            )
        return attrs

    def answer(self) -> int | Verdict:
        data = self.validated_data
        return Verdict.from_label(data["verdict"]) if "verdict" in data else data["score"]
