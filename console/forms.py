"""The console's forms. Each checks what its service would refuse (the same
checks as the admin's forms, which these reuse) and hands over to the service."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.urls import reverse

from annotator.admin import StudyForm
from annotator.models import Study
from corpus.choices import Mode
from corpus.models import Dataset, Document
from generation.models import GenerationRun, System
from judging.forms import JudgingRunForm
from judging.models import HUMAN_EVALUATORS, Evaluator
from users.models import Project, User
from users.projects import scope_choices, writable_projects


def choices(form: forms.BaseForm, name: str) -> forms.ModelChoiceField:
    """A model choice field of the form (to narrow what it offers)."""
    field = form.fields[name]
    assert isinstance(field, forms.ModelChoiceField)
    return field


class ProjectFormMixin(forms.BaseForm):
    """A console form that creates something in a project: it offers the
    projects the user may create in (his only one chosen already), only his
    projects' objects and shared ones in every other choice, and refuses a
    choice of another project than the one chosen."""

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "project" not in self.fields:
            self.fields["project"] = forms.ModelChoiceField(queryset=Project.objects.none())
        field = choices(self, "project")
        field.queryset = writable_projects(user)
        field.help_text = "The team it belongs to: only its members see it."
        only = list(field.queryset[:2])
        if not only:
            # a viewer of every project he is in: the page says why, not "Project:
            # This field is required." under a list with nothing to choose
            raise PermissionDenied(
                "You may create in none of your projects (a viewer reads them only): an "
                "owner of a project makes you its researcher there."
            )
        # one project to write to: it is chosen (a single-team install sees no choice)
        self.only_project = only[0] if len(only) == 1 else None
        if self.only_project is not None:
            field.initial = self.only_project
            field.required = False
            field.widget = forms.HiddenInput()
        self.restrict_choices(user)

    def restrict_choices(self, user: User) -> None:
        """Every other choice offers the user's projects' objects and shared ones
        (a subclass that sets a choice's queryset calls this again)."""
        for name, other in self.fields.items():
            if name != "project" and isinstance(other, forms.ModelChoiceField):
                other.queryset = scope_choices(other.queryset, user)  # type: ignore[arg-type]

    def clean(self) -> dict[str, Any]:
        # the only project is chosen before a subclass's clean looks in it
        if getattr(self, "cleaned_data", None) is not None and self.only_project is not None:
            self.cleaned_data.setdefault("project", None)
            if self.cleaned_data["project"] is None:
                self.cleaned_data["project"] = self.only_project
        data = super().clean() or {}
        if data.get("project") is None and self.only_project is not None:
            data["project"] = self.only_project
        project = data.get("project")
        if project is None:
            return data
        for name, value in list(data.items()):
            chosen = list(value) if isinstance(value, QuerySet | list | tuple) else [value]
            if any(getattr(o, "project_id", None) not in (None, project.pk) for o in chosen):
                self.add_error(name, f"It belongs to another project than {project}.")
        return data


JUDGE_KINDS = [Evaluator.Kind.METRIC, Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE]


class NewStudyForm(ProjectFormMixin, StudyForm):
    """What a study needs to start; the rest (texts, qualification round,
    scale labels, Prolific) keeps its defaults and can be changed in the admin."""

    class Meta(StudyForm.Meta):
        model = Study
        fields = [
            "project",
            "name",
            "kind",
            "rating_type",
            "dataset",
            "mode",
            "seed",
            "systems",
            "documents",
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
            "gold_annotators",
        ]
        widgets = {
            "systems": forms.CheckboxSelectMultiple,
            "documents": forms.CheckboxSelectMultiple,
            "gold_annotators": forms.CheckboxSelectMultiple,
        }
        labels = {"documents": "Meetings (a crowd study's tasks)"}

    items_per_task = forms.IntegerField(
        min_value=1,
        max_value=500,
        required=False,
        label="Items per task",
        help_text="At most this many responses of each meeting, drawn at random and spread "
        "over the systems (each system's first, then each one's second, ...); empty: all of "
        "them. Attention checks come on top.",
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")
        # choosing the dataset brings its meetings into the form (htmx swaps the field)
        self.fields["dataset"].widget.attrs.update(
            {
                "hx-get": reverse("console:study_meetings"),
                "hx-target": "#field-documents",
                "hx-swap": "outerHTML",
            }
        )
        documents = choices(self, "documents")
        if self.chosen_dataset is None:
            documents.queryset = Document.objects.none()
            documents.help_text = "Choose the dataset first: its meetings show here."
        # people's scores only: a crowd is checked against experts, not a metric or a judge
        choices(self, "gold_evaluator").queryset = scope_choices(
            Evaluator.objects.filter(HUMAN_EVALUATORS).order_by("name"), user
        )
        # a paid crowd study's defaults: attention checks on (they pay for
        # themselves in excluded careless work), and the meeting's transcript
        # to hand where the benchmark has one (the rating page shows it then)
        if not self.is_bound:
            self.fields["attention_checks"].initial = True
            self.fields["transcript_for_crowd"].initial = True
        self.order_fields([*self.Meta.fields[:9], "items_per_task"])
        choices(self, "gold_annotators").queryset = User.objects.filter(
            role=User.Role.GOLD_ANNOTATOR, is_active=True
        ).order_by("username")


class NewJudgingRunForm(ProjectFormMixin, JudgingRunForm):
    class Meta(JudgingRunForm.Meta):
        widgets = {"systems": forms.CheckboxSelectMultiple}
        help_texts = {"systems": "None ticked: every system that answered the dataset."}

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        choices(self, "evaluator").queryset = scope_choices(
            Evaluator.objects.filter(kind__in=JUDGE_KINDS), user
        )
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")
        self.fields["systems"].required = False
        self.fields["mode"].initial = Mode.SINGLE_TURN


class NewGenerationRunForm(ProjectFormMixin, forms.ModelForm):
    class Meta:
        model = GenerationRun
        fields = ["project", "system", "dataset", "mode", "seed"]

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        choices(self, "system").queryset = scope_choices(
            System.objects.exclude(backend=System.Backend.IMPORTED), user
        )
        self.fields["mode"].initial = Mode.SINGLE_TURN
        choices(self, "dataset").queryset = Dataset.objects.select_related("benchmark")

    def validate_unique(self) -> None:
        """An unfinished run of the same system, dataset, mode and seed is
        taken up again by the service, not refused here."""


class ResponseUploadForm(ProjectFormMixin, forms.Form):
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
