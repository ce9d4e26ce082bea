"""The report page's forms: what the planner's "select items for humans"
action needs besides the selection (its API twin: analysis.api.serializers)."""

from django import forms

from analysis.report.selection import ITEM_METHODS, MAX_ITEMS
from annotator.models import Study


class SelectItemsForm(forms.Form):
    """What the planner's action needs besides the selection."""

    method = forms.ChoiceField(choices=[(m, m) for m in ITEM_METHODS])
    count = forms.IntegerField(min_value=1, max_value=MAX_ITEMS)
    kind = forms.ChoiceField(choices=Study.Kind.choices)
    name = forms.CharField(max_length=200)
    raters_per_task = forms.IntegerField(min_value=1, max_value=1000, initial=1)
    gold_annotators = forms.CharField(
        required=False, max_length=2000, help_text="Usernames, comma-separated (gold studies)."
    )
    # method "deferred": whose abstentions, at which target agreement 1 - alpha
    judge = forms.CharField(required=False, max_length=200)
    alpha = forms.FloatField(required=False)  # one of DEFERRAL_ALPHAS; none: 0.2
