"""Judged data is never lost or silently changed: what "judged" means, and an
admin mixin that refuses to delete it.

A response is judged when a judgment, a pairwise verdict (as the response or
as its opponent) or a human-study item (likewise) points to it. The runs,
questions, question texts, documents, datasets, benchmarks and systems that
hold judged responses are protected with them: correcting any of them is a
new run or a new study, never an edit or a delete. (The database refuses too:
those references are on_delete=PROTECT; the admin says so before it gets
there.)

This module sits in the leftmost app so that every app's admin can use it;
the models of the apps to its right are named by string (``apps.get_model``),
never imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.contrib.admin.actions import delete_selected
from django.db.models import Exists, Model, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.text import capfirst

CORRECTION = "a correction is a new run / a new study"
JUDGED = "judged responses (judgments, pairwise verdicts or human-study items)"

# (app label, model, field pointing to a response) of everything that judges a response.
RESPONSE_REFERENCES = (
    ("judging", "Judgment", "response"),
    ("judging", "PairwiseVerdict", "response"),
    ("judging", "PairwiseVerdict", "opponent"),
    ("annotator", "Item", "response"),
    ("annotator", "Item", "opponent"),
)


def judged_condition() -> Q:
    """A condition on responses: something judges them."""
    condition = Q()
    for app, model, field in RESPONSE_REFERENCES:
        condition |= Q(Exists(apps.get_model(app, model).objects.filter(**{field: OuterRef("pk")})))
    return condition


def judged_responses() -> QuerySet:
    return apps.get_model("generation", "Response").objects.filter(judged_condition())


def judged_summary(response_ids: Iterable[int]) -> str:
    """What judges these responses, in words, e.g. "3 judgments and 1 human-study
    item"; empty when nothing does."""
    ids = list(response_ids)
    either = Q(response_id__in=ids) | Q(opponent_id__in=ids)
    counts = (
        (apps.get_model("judging", "Judgment").objects.filter(response_id__in=ids), "judgment"),
        (apps.get_model("judging", "PairwiseVerdict").objects.filter(either), "pairwise verdict"),
        (apps.get_model("annotator", "Item").objects.filter(either), "human-study item"),
    )
    parts = []
    for queryset, word in counts:
        n = queryset.count()
        if n:
            parts.append(f"{n:,} {word}{'' if n == 1 else 's'}")
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


if TYPE_CHECKING:  # the mixin goes before a ModelAdmin class
    _ModelAdminBase = ModelAdmin
else:
    _ModelAdminBase = object


class ProtectJudgedAdmin(_ModelAdminBase):
    """ModelAdmin mixin: rows that hold judged data cannot be deleted.

    Their page has no delete button (its delete URL leads back with a message),
    and the "delete selected" action refuses a selection that holds any of
    them, saying how many, and deletes nothing. ``judged_path`` is the path
    from a response to this model ("run" for runs, "question__document" for
    documents, "" for responses); override ``protected`` for anything else.
    """

    judged_path: str = ""
    protected_reason: str = JUDGED
    correction: str = CORRECTION

    def protected(self, queryset: QuerySet) -> QuerySet:
        """The rows of ``queryset`` that must not be deleted."""
        if not self.judged_path:
            return queryset.filter(judged_condition())
        responses = judged_responses().filter(**{self.judged_path: OuterRef("pk")})
        return queryset.filter(Exists(responses))

    def is_protected(self, obj: Model) -> bool:
        return self.protected(self.model._default_manager.filter(pk=obj.pk)).exists()

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        if obj is not None and self.is_protected(obj):
            return False
        return super().has_delete_permission(request, obj)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        if obj is not None and self.is_protected(obj):
            opts = self.model._meta
            self.message_user(
                request,
                f"{capfirst(opts.verbose_name)} “{obj}” cannot be deleted: it holds "
                f"{self.protected_reason}; {self.correction}.",
                messages.ERROR,
            )
            return HttpResponseRedirect(
                reverse(
                    f"admin:{opts.app_label}_{opts.model_name}_change",
                    args=[obj.pk],
                    current_app=self.admin_site.name,
                )
            )
        return super().delete_view(request, object_id, extra_context)

    def get_actions(
        self, request: HttpRequest
    ) -> dict[str, tuple[Callable[..., str], str, str] | None]:
        actions = super().get_actions(request)
        action = actions.get("delete_selected")
        if action is not None:
            _, name, description = action
            # The stubs (Django 5 branch) say an action returns a str; it returns an
            # HttpResponse or None, as Django's own delete_selected does.
            actions["delete_selected"] = (delete_unprotected, name, description)  # type: ignore[assignment]
        return actions


def delete_unprotected(
    modeladmin: ProtectJudgedAdmin, request: HttpRequest, queryset: QuerySet
) -> TemplateResponse | None:
    """Django's "delete selected", refused (nothing deleted) when the selection
    holds protected rows."""
    protected = modeladmin.protected(queryset).count()
    if not protected:
        return delete_selected(modeladmin, request, queryset)
    opts = modeladmin.model._meta
    total = queryset.count()
    modeladmin.message_user(
        request,
        f"Nothing was deleted: {protected} of the {total} selected "
        f"{opts.verbose_name if total == 1 else opts.verbose_name_plural} "
        f"{'holds' if protected == 1 else 'hold'} {modeladmin.protected_reason} and "
        f"{'is' if protected == 1 else 'are'} protected; {modeladmin.correction}.",
        messages.ERROR,
    )
    return None
