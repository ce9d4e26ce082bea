from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.utils import timezone
from rest_framework import serializers

from adaptive.models import STATED_FIELDS, AdaptiveStudy, Decision
from core.serializers import KnownFieldsMixin
from users.permissions import ProjectField


def without_nul(value: str) -> str:
    """Text as stored: a NUL character is refused (PostgreSQL cannot keep it)."""
    if "\x00" in value:
        raise serializers.ValidationError("Text without NUL characters.")
    return value


class AdaptiveStudySerializer(KnownFieldsMixin, serializers.ModelSerializer):
    """An adaptive study: what it must answer, its budget and its settings; the
    plan, status and report are Concord's (read-only)."""

    project = ProjectField()
    half_width = serializers.FloatField(
        min_value=0.01, max_value=9, required=False, allow_null=True
    )
    probability = serializers.FloatField(
        min_value=0.5, max_value=0.9999, required=False, allow_null=True
    )
    epsilon = serializers.FloatField(
        min_value=0.01, max_value=0.99, required=False, allow_null=True
    )
    max_looks = serializers.IntegerField(min_value=1, max_value=20, default=5)
    raters_per_item = serializers.IntegerField(min_value=3, max_value=20, default=3)
    alpha = serializers.FloatField(min_value=0.001, max_value=0.5, default=0.05)
    send_rate = serializers.FloatField(min_value=0.01, max_value=1, default=0.3)
    floor = serializers.FloatField(
        min_value=0.01, max_value=1, default=AdaptiveStudy._meta.get_field("floor").default
    )
    design = serializers.ChoiceField(
        choices=AdaptiveStudy.Design.choices,
        required=False,
        allow_blank=True,
        help_text="The design it runs. Left out or empty when planning, the plan chooses (the "
        "cheapest that keeps its coverage); stated, it overrides the plan (a recorded "
        "decision). Not for the alt-test goal.",
    )
    minutes_per_item = serializers.FloatField(min_value=0.1, max_value=60, default=2.0)
    draws_per_wave = serializers.IntegerField(min_value=10, max_value=5000, default=100)
    min_labels = serializers.IntegerField(min_value=1, max_value=10000, default=30)
    budget_pence = serializers.IntegerField(min_value=0, max_value=100_000_000)
    bonus_pence = serializers.IntegerField(min_value=0, max_value=2000, default=0)
    hourly_pay = serializers.DecimalField(
        max_digits=6,
        decimal_places=2,
        min_value=Decimal(1),
        max_value=Decimal(1000),
        default=Decimal(9),
    )
    closing_message = serializers.CharField(max_length=2000, required=False, allow_blank=True)

    class Meta:
        model = AdaptiveStudy
        fields = [
            "project",
            "id",
            *STATED_FIELDS,
            "alpha",
            "budget_pence",
            "bonus_pence",
            "status",
            "stop_reason",
            "plan",
            "report",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = [
            "status",
            "stop_reason",
            "plan",
            "report",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def validate_name(self, value: str) -> str:
        value = without_nul(value).strip()
        if not value:
            raise serializers.ValidationError("Give the study a name.")
        return value

    def validate_closing_message(self, value: str) -> str:
        return without_nul(value)

    def validate_deadline(self, value: datetime) -> datetime:
        if value <= timezone.now():
            raise serializers.ValidationError("The deadline has passed already.")
        return value

    def validate(self, data: dict) -> dict:
        goal = data.get("goal", AdaptiveStudy.Goal.MEANS)
        if goal == AdaptiveStudy.Goal.MEANS and not data.get("half_width"):
            raise serializers.ValidationError({"half_width": "The means goal needs it."})
        if goal == AdaptiveStudy.Goal.RANKING and not data.get("probability"):
            raise serializers.ValidationError({"probability": "The ranking goal needs it."})
        if goal == AdaptiveStudy.Goal.ALT_TEST and not data.get("epsilon"):
            raise serializers.ValidationError({"epsilon": "The alt-test goal needs it."})
        if goal == AdaptiveStudy.Goal.ALT_TEST and data.get("design") not in (None, "", "adaptive"):
            raise serializers.ValidationError(
                {"design": "The alt-test goal runs its own waves: it has no design to choose."}
            )
        if not data.get("systems"):
            raise serializers.ValidationError({"systems": "Choose at least one system."})
        return data


class DecisionSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", read_only=True, allow_null=True)

    class Meta:
        model = Decision
        fields = ["action", "detail", "actor", "created_at"]


class EstimateSerializer(serializers.Serializer):
    system_id = serializers.IntegerField()
    name = serializers.CharField()
    mean = serializers.FloatField(allow_null=True)
    lower = serializers.FloatField()
    upper = serializers.FloatField()
    draws = serializers.IntegerField()
    labels = serializers.IntegerField()
    pending = serializers.IntegerField()


class StopSerializer(KnownFieldsMixin, serializers.Serializer):
    reason = serializers.CharField(max_length=150, required=False)  # given: not blank


class BudgetSerializer(KnownFieldsMixin, serializers.Serializer):
    budget_pence = serializers.IntegerField(min_value=0, max_value=100_000_000)


class DeadlineSerializer(KnownFieldsMixin, serializers.Serializer):
    deadline = serializers.DateTimeField()
