"""The form that starts a judging run, one definition for the console and the
admin (the API's serializer shares its words), and its evaluator field, which
offers every registered metric before its shared evaluator exists, so that
opening a form writes nothing: the evaluator is made when a run is started
with it (a POST)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import ModelChoiceIterator

from judging.evaluators import registry
from judging.judging_runs import ensure_metric_evaluator
from judging.models import JudgingRun

METRIC = "metric:"


class JudgeChoices(ModelChoiceIterator):
    """The evaluators of the field's queryset, then each registered metric that
    has no evaluator yet, as "metric:<name>" (lazily, like Django's own)."""

    def __iter__(self) -> Any:
        yield from super().__iter__()
        yield from self.missing_metrics()

    def __len__(self) -> int:
        return super().__len__() + len(self.missing_metrics())

    def missing_metrics(self) -> list[tuple[str, str]]:
        have = set(self.queryset.values_list("name", flat=True))
        return [
            (f"{METRIC}{name}", metric.evaluator_name)
            for name, metric in registry.metrics().items()
            if metric.evaluator_name not in have
        ]


class JudgeChoiceField(forms.ModelChoiceField):
    """An evaluator, or a registered metric whose shared evaluator is made
    when the form is sent."""

    iterator = JudgeChoices

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(METRIC):
            name = value.removeprefix(METRIC)
            if name not in registry.metrics():
                raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice")
            return ensure_metric_evaluator(name)
        return super().to_python(value)


CONFIRM_OVER_BUDGET = (
    "Start even when the projected cost is above the budget: the run stops before its "
    "cost could pass the budget, with the rest of its items not judged (refused otherwise)."
)


class JudgingRunForm(forms.ModelForm):
    """What starting a judging run asks (console and admin)."""

    confirm_over_budget = forms.BooleanField(
        required=False, label="Start over the budget", help_text=CONFIRM_OVER_BUDGET
    )

    class Meta:
        model = JudgingRun
        fields = [
            "project",
            "evaluator",
            "dataset",
            "mode",
            "systems",
            "budget",
            "refresh",
            "use_batch",
        ]
        field_classes = {"evaluator": JudgeChoiceField}
