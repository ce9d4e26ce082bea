"""The "needs a human" list: a researcher resolves an item with what the judge's answer says."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html

from judging.evaluators import ModelJudge
from judging.evaluators.config import ConfigError
from judging.human_review import ReviewError, check_resolve_item, item_protocol
from judging.models import (
    JudgeItem,
)
from judging.parsers import Verdict
from users.admin_scope import ProjectScopedAdmin

if TYPE_CHECKING:
    pass


class ResolveForm(forms.Form):
    """What a researcher enters for an item that needs a human; `answer()` is
    the typed value, which the judge's protocol checks."""

    def __init__(self, protocol: ModelJudge, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.protocol = protocol

    def answer(self) -> int | Verdict:
        """The typed value entered (each form of a kind of answer says how)."""
        raise NotImplementedError


class ScoreForm(ResolveForm):
    """A scoring judge's item: the score on the judge's own scale."""

    raw_score = forms.IntegerField()

    def __init__(self, protocol: ModelJudge, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        self.fields["raw_score"].label = f"Score the judge meant: {protocol.expected_answer}"

    def answer(self) -> int:
        return self.cleaned_data["raw_score"]


class VerdictForm(ResolveForm):
    """A pairwise judge's item: A, B or tie, never a number."""

    verdict = forms.ChoiceField(
        label="Verdict the judge meant",
        choices=[
            (Verdict.A.label, "A: the answer shown first"),
            (Verdict.B.label, "B: the answer shown second"),
            (Verdict.TIE.label, "Tie"),
        ],
        widget=forms.RadioSelect,
    )

    def answer(self) -> Verdict:
        return Verdict.from_label(self.cleaned_data["verdict"])


# The form for what a protocol's items are resolved with (ModelJudge.answer_kind).
RESOLVE_FORMS = {"score": ScoreForm, "verdict": VerdictForm}


@admin.register(JudgeItem)
class JudgeItemAdmin(ProjectScopedAdmin):
    """Filter by "Needs a human": read the judge's raw answer, enter its score
    (or, for a pairwise judge, its verdict: A, B or tie)."""

    project_path = "run__project"

    list_display = ("id", "run", "response", "seed", "status", "outcome", "attempts", "detail")
    list_filter = ("status", "outcome", "run__evaluator")
    list_select_related = ("run__evaluator",)
    raw_id_fields = ("response", "call")
    readonly_fields = (
        "run",
        "response",
        "opponent",
        "seed",
        "order",
        "status",
        "outcome",
        "attempts",
        "detail",
        "raw_answer",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="the judge's answer")
    def raw_answer(self, obj: JudgeItem) -> str:
        if obj.call is None:
            return "-"
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", obj.call.raw_output)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        item = self.get_object(request, object_id)
        needs_human = item is not None and item.status == JudgeItem.Status.NEEDS_HUMAN
        form = None
        if needs_human and item is not None:
            try:
                protocol = item_protocol(item)
            except ConfigError as error:
                messages.error(request, f"The judge's configuration cannot be read: {error}")
                needs_human = False
            else:
                form = RESOLVE_FORMS[protocol.answer_kind](protocol, request.POST or None)
        if request.method == "POST" and form is not None and item is not None:
            if not form.is_valid():
                messages.error(request, f"Nothing stored: {form.errors.as_text()}")
            else:
                try:
                    check_resolve_item(item, form.answer(), request.user)
                    messages.info(request, f"{protocol.answer_kind.capitalize()} stored.")
                except ReviewError as error:
                    messages.error(request, str(error))
            from django.http import HttpResponseRedirect

            return HttpResponseRedirect(request.path)
        extra_context = {
            **(extra_context or {}),
            "resolve_form": form,
            "needs_human": needs_human,
            "answer_kind": protocol.answer_kind if form is not None else "",
        }
        return super().change_view(request, object_id, form_url, extra_context)

    change_form_template = "admin/judging/judgeitem/change_form.html"
