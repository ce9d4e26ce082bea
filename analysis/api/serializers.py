"""The planner's "select items for humans" call: what it takes (the action
and the selection, as the report's query parameters take it) and what it
answers."""

from rest_framework import serializers

from analysis.report.selection import (
    DEFERRAL_ALPHAS,
    ITEM_METHODS,
    LANGUAGES,
    MAX_ITEMS,
    MODES,
    VERSIONS,
)
from annotator.models import Study
from core.serializers import KnownFieldsMixin


class SelectItemsSerializer(KnownFieldsMixin, serializers.Serializer):
    method = serializers.ChoiceField(choices=list(ITEM_METHODS))
    count = serializers.IntegerField(min_value=1, max_value=MAX_ITEMS)
    kind = serializers.ChoiceField(choices=Study.Kind.values)
    name = serializers.CharField(max_length=200)
    raters_per_task = serializers.IntegerField(min_value=1, max_value=1000, default=1)
    judge = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        help_text="Method deferred: the judge whose abstentions humans rate.",
    )
    alpha = serializers.FloatField(
        required=False,
        default=0.2,
        help_text="Method deferred: the target agreement 1 - alpha whose threshold defers "
        f"(one of {', '.join(map(str, DEFERRAL_ALPHAS))}).",
    )
    gold_annotators = serializers.ListField(
        child=serializers.CharField(max_length=150),
        required=False,
        max_length=200,
        help_text="A gold study's gold annotators (usernames): they see only the studies "
        "they are assigned to.",
    )
    # the selection, as the report's query parameters take it
    project = serializers.CharField(
        max_length=64, required=False, help_text="The project's slug (yours, if only one)."
    )
    dataset_version = serializers.ChoiceField(choices=list(VERSIONS), required=False)
    split = serializers.CharField(max_length=200, required=False)
    mode = serializers.ChoiceField(choices=list(MODES), required=False)
    language = serializers.ChoiceField(choices=list(LANGUAGES), required=False)
    benchmark = serializers.CharField(max_length=200, required=False)
    systems = serializers.CharField(required=False, help_text="System names, comma-separated.")
    evaluators = serializers.CharField(
        required=False, help_text="Evaluator names, comma-separated."
    )
    study = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    gold_evaluator = serializers.CharField(max_length=200, required=False)
    reference = serializers.CharField(max_length=200, required=False)
    judges = serializers.CharField(required=False, help_text="Judges, comma-separated.")
    humans = serializers.CharField(required=False, help_text="Human evaluators, comma-separated.")
    include_flagged = serializers.BooleanField(required=False, default=False)
    rater_models = serializers.BooleanField(required=False, default=False)
    length_control = serializers.BooleanField(required=False, default=False)
    style_control = serializers.BooleanField(required=False, default=False)


class CreatedStudySerializer(serializers.Serializer):
    study = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    method = serializers.CharField()
    items = serializers.IntegerField()
    responses = serializers.ListField(child=serializers.IntegerField())
