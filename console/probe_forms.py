"""The console's form for probes (generation.probes): the dataset to make
answers known to be bad for, and which kinds."""

from __future__ import annotations

from typing import Any

from django import forms

from console.forms import ProjectFormMixin, choices
from corpus.models import Dataset
from generation.probes import PROBE_KINDS
from users.models import User


class ProbesForm(ProjectFormMixin, forms.Form):
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(),
        help_text="Probe answers are made for each of its questions (single-turn).",
    )
    kinds = forms.MultipleChoiceField(
        choices=[(kind, f"{kind}: {text}") for kind, text in PROBE_KINDS.items()],
        initial=list(PROBE_KINDS),
        widget=forms.CheckboxSelectMultiple,
        label="Probes",
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")
