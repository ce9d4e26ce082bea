"""The console's form for a judge panel: a name, its members (ticked among the
judges, metrics and imported judge scores the user may read, or among the
pairwise judges) and its rule; checked as the API checks a panel
(judging.panels.checked_panel)."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms import ProjectFormMixin
from judging.evaluators import ConfigError
from judging.models import Evaluator
from judging.panel_rules import RULE_TEXT, RULES
from judging.panels import checked_panel, possible_members
from users.models import User


class PanelForm(ProjectFormMixin, forms.Form):
    name = forms.CharField(max_length=200, help_text="How reports and lists name the panel.")
    members = forms.ModelMultipleChoiceField(
        queryset=Evaluator.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        to_field_name="name",
        help_text="Two or more judges that score each answer, or two or more pairwise "
        "judges (people cannot be members). The panel scores an answer where every member "
        "scored it; a panel of pairwise judges gives the majority verdict on a pair.",
    )
    rule = forms.ChoiceField(
        choices=[(rule, f"{rule}: {RULE_TEXT[rule]}") for rule in RULES],
        initial="mean",
        widget=forms.RadioSelect,
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        self.fields["members"].queryset = possible_members().order_by("name")  # type: ignore[attr-defined]
        self.restrict_choices(user)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Evaluator.objects.filter(name=name).exists():
            raise forms.ValidationError("An evaluator has this name already: choose another.")
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        members = data.get("members")
        if members is not None and "rule" in data:
            try:
                data["config"] = checked_panel(
                    {"members": [m.name for m in members], "rule": data["rule"]}
                )
            except ConfigError as error:
                message = str(error)
                self.add_error("rule" if message.startswith("rule:") else "members", message)
        return data
