"""What every console view shares: who may see it, whether htmx asked, and
the two kinds of run by their URL name."""

from __future__ import annotations

from typing import TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404

from generation.models import GenerationRun
from judging.models import JudgingRun
from users.permissions import project_id_of
from users.projects import can_change, scope

M = TypeVar("M", bound=Model)

RUN_MODELS: dict[str, type[JudgingRun] | type[GenerationRun]] = {
    "judging": JudgingRun,
    "generation": GenerationRun,
}


def is_htmx(request: HttpRequest) -> bool:
    """Whether htmx asked (the answer is then the fragment it replaces)."""
    return request.headers.get("HX-Request") == "true"


def mine(request: HttpRequest, queryset: QuerySet[M], path: str = "project") -> QuerySet[M]:
    """The rows of the user's projects (users.projects.scope)."""
    return scope(queryset, request.user, path)


def scoped_object(request: HttpRequest, queryset: QuerySet[M], pk: int, path: str = "project") -> M:
    """One object of the user's projects: another project's answers the 404
    page, as one that does not exist; a POST on it (an action, a change) needs
    a researcher's or owner's role in its project, a viewer gets the 403 page."""
    found = get_object_or_404(mine(request, queryset, path), pk=pk)
    if request.method not in ("GET", "HEAD") and not can_change(
        request.user, project_id_of(found, path)
    ):
        raise PermissionDenied("Viewers of a project may read it, not change it.")
    return found
