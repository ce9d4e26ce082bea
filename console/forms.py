"""The console's forms. Each checks what its service would refuse (the same
checks as the admin's forms, which these reuse) and hands over to the service."""

from __future__ import annotations

from django import forms

from annotator.admin import StudyForm
from annotator.models import Study
from corpus.choices import Mode
from corpus.models import Dataset
from generation.models import GenerationRun, System
from judging.models import Evaluator, JudgingRun


def choices(form: forms.BaseForm, name: str) -> forms.ModelChoiceField:
    """A model choice field of the form (to narrow what it offers)."""
    field = form.fields[name]
    assert isinstance(field, forms.ModelChoiceField)
    return field


JUDGE_KINDS = [Evaluator.Kind.METRIC, Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE]


class NewStudyForm(StudyForm):
    """What a study needs to start; the rest (texts, qualification round,
    scale labels, Prolific) keeps its defaults and can be changed in the admin."""

    class Meta(StudyForm.Meta):
        model = Study
        fields = [
            "name",
            "kind",
            "rating_type",
            "dataset",
            "mode",
            "seed",
            "systems",
            "baseline_system",
            "raters_per_task",
            "scale_max",
            "estimated_minutes",
            "completion_code",
            "attention_checks",
            "failed_attention_code",
            "transcript_for_crowd",
            "gold_evaluator",
            "min_gold_correlation",
        ]
        widgets = {"systems": forms.CheckboxSelectMultiple}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")
        choices(self, "gold_evaluator").queryset = Evaluator.objects.order_by("name")


class NewJudgingRunForm(forms.ModelForm):
    confirm_over_budget = forms.BooleanField(
        required=False,
        label="Start over the budget",
        help_text="Start even when the projected cost is above the budget: the run stops "
        "before its cost could pass the budget, with the rest of its items not judged.",
    )

    class Meta:
        model = JudgingRun
        fields = ["evaluator", "dataset", "mode", "systems", "budget", "refresh", "use_batch"]
        widgets = {"systems": forms.CheckboxSelectMultiple}
        help_texts = {"systems": "None ticked: every system that answered the dataset."}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices(self, "evaluator").queryset = Evaluator.objects.filter(kind__in=JUDGE_KINDS)
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")
        self.fields["systems"].required = False
        self.fields["mode"].initial = Mode.SINGLE_TURN


class NewGenerationRunForm(forms.ModelForm):
    class Meta:
        model = GenerationRun
        fields = ["system", "dataset", "mode", "seed"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choices(self, "system").queryset = System.objects.exclude(backend=System.Backend.IMPORTED)
        self.fields["mode"].initial = Mode.SINGLE_TURN
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")

    def validate_unique(self) -> None:
        """An unfinished run of the same system, dataset, mode and seed is
        taken up again by the service, not refused here."""


class ResponseUploadForm(forms.Form):
    """Model outputs made elsewhere (generation.response_import): a file of
    responses for one imported dataset."""

    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.select_related("benchmark"),
        help_text="The benchmark, split and task the responses answer (records may name "
        "another task of the same split).",
    )
    system = forms.CharField(
        max_length=200,
        required=False,
        help_text="For records that name no system.",
    )
    mode = forms.ChoiceField(choices=Mode.choices, initial=Mode.SINGLE_TURN)
    file = forms.FileField(
        help_text="JSON Lines, CSV or Parquet: document_id, question_id, response (and system, "
        "task, seed, mode); see docs/benchmark-formats.md.",
    )


class ExclusionForm(forms.Form):
    reason = forms.CharField(max_length=2000, help_text="Kept in the audit log.")
