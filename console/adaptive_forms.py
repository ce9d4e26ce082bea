"""The form that states an adaptive study's goal and budget (adaptive.loop
plans it; nothing is spent until the researcher starts it)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.utils import timezone

from adaptive.models import STATED_FIELDS, AdaptiveStudy
from console.forms import ProjectFormMixin
from corpus.models import Dataset
from generation.models import System
from judging.models import HUMAN_EVALUATORS, Evaluator
from users.models import User


class NewAdaptiveStudyForm(ProjectFormMixin, forms.ModelForm):
    budget_gbp = forms.DecimalField(
        label="Budget (GBP)",
        min_value=Decimal("1"),
        max_value=Decimal("100000"),
        decimal_places=2,
        help_text="Money for places, the platform's fee included.",
    )
    bonus_gbp = forms.DecimalField(
        label="Bonus at the end (GBP per accepted participant)",
        min_value=Decimal("0"),
        max_value=Decimal("20"),
        decimal_places=2,
        initial=Decimal("0"),
        required=False,
    )

    class Meta:
        model = AdaptiveStudy
        fields = ["project", *STATED_FIELDS]
        widgets = {
            "systems": forms.CheckboxSelectMultiple,
            "participant_groups": forms.CheckboxSelectMultiple,
            "deadline": forms.DateTimeInput(attrs={"type": "datetime-local"}),
            "closing_message": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        self.fields["dataset"].queryset = Dataset.objects.select_related("benchmark")  # type: ignore[attr-defined]
        self.fields["systems"].queryset = System.objects.order_by("name")  # type: ignore[attr-defined]
        # imported scores count as what they were (the paper's are "imported")
        human = HUMAN_EVALUATORS
        judges = Evaluator.objects.exclude(human).order_by("name")
        self.fields["judge"].queryset = judges  # type: ignore[attr-defined]
        self.fields["uncertainty_judge"].queryset = judges  # type: ignore[attr-defined]
        humans = Evaluator.objects.filter(human).order_by("name")
        self.fields["prior_humans"].queryset = humans  # type: ignore[attr-defined]
        self.fields["design"].choices = [  # type: ignore[attr-defined]
            ("", "Let the plan choose (the cheapest design that keeps its coverage)"),
            *AdaptiveStudy.Design.choices,
        ]
        self.fields["design"].label = "Design"
        # the alt-test goal's settings: left empty, their defaults
        for name in ("max_looks", "raters_per_item"):
            self.fields[name].required = False
        self.fields["deadline"].initial = (timezone.now() + timedelta(days=7)).strftime(
            "%Y-%m-%dT%H:%M"
        )
        self.restrict_choices(user)

    def clean(self) -> dict:
        data = super().clean() or {}
        goal = data.get("goal")
        if goal == AdaptiveStudy.Goal.MEANS and not (data.get("half_width") or 0) > 0:
            self.add_error("half_width", "The means goal needs a half-width above 0.")
        if goal == AdaptiveStudy.Goal.RANKING and not 0 < (data.get("probability") or 0) < 1:
            self.add_error("probability", "The ranking goal needs p between 0 and 1.")
        defaults = AdaptiveStudy()
        for name in ("max_looks", "raters_per_item"):
            if data.get(name) is None:
                data[name] = getattr(defaults, name)
        if goal == AdaptiveStudy.Goal.ALT_TEST and not 0 < (data.get("epsilon") or 0) < 1:
            self.add_error("epsilon", "The alt-test goal needs epsilon between 0 and 1.")
        if goal == AdaptiveStudy.Goal.ALT_TEST and data.get("design") not in (None, "", "adaptive"):
            self.add_error("design", "The alt-test goal runs its own waves: leave it to the plan.")
        for name in ("send_rate", "floor"):
            value = data.get(name)
            if value is not None and not 0 < value <= 1:
                self.add_error(name, "Between 0 (excluded) and 1.")
        if (data.get("half_width") or 1) <= 0 or (data.get("minutes_per_item") or 1) <= 0:
            self.add_error(None, "Widths and minutes are positive.")
        return data

    def save(self, commit: bool = False) -> AdaptiveStudy:
        adaptive = super().save(commit=False)
        adaptive.budget_pence = int(self.cleaned_data["budget_gbp"] * 100)
        adaptive.bonus_pence = int((self.cleaned_data.get("bonus_gbp") or 0) * 100)
        return adaptive


class BudgetForm(forms.Form):
    budget_gbp = forms.DecimalField(
        label="New budget (GBP)",
        min_value=Decimal("0"),
        max_value=Decimal("100000"),
        decimal_places=2,
    )


class DeadlineForm(forms.Form):
    deadline = forms.DateTimeField(
        label="New deadline", widget=forms.DateTimeInput(attrs={"type": "datetime-local"})
    )
