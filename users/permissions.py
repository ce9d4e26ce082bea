from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import SAFE_METHODS, BasePermission

from core.serializers import NameRelatedField
from users.models import Project, User
from users.projects import (
    NoProjectChosen,
    can_change,
    project_for_create,
    scope,
    visible_projects,
)

if TYPE_CHECKING:
    # DRF's views read this module's IsResearcher from the settings when imported
    from rest_framework.request import Request
    from rest_framework.views import APIView


class IsResearcher(BasePermission):
    """Research data is for admins and researchers only.

    Anonymous users get 401/403; gold annotators get 403, because responses and
    judgments would reveal the systems and scores they must rate blind.
    """

    message = "Only researchers and admins may read research data."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and getattr(user, "is_researcher", False))


def signed_in_user(request: HttpRequest | Request) -> User:
    """The account a request acts for (the audit log's actor). The views that call
    this let only signed-in people in; an anonymous request is refused here too."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("Sign in first.")
    return user


class CanChangeProject(BasePermission):
    """Reading is for every member; changing an object is for its project's
    owners and researchers (viewers get 403: they may see that it exists).
    Shared objects (no project) are changed by site admins only."""

    message = "Viewers of a project may read it, not change it: an owner can make you a researcher."

    def has_object_permission(self, request: Request, view: APIView, obj: Model) -> bool:
        if request.method in SAFE_METHODS:
            return True
        project_id = project_id_of(obj, getattr(view, "project_path", "project"))
        if project_id is None:
            self.message = "Shared by every project: only a site admin changes it."
        return can_change(request.user, project_id)


def project_id_of(obj: Model, path: str) -> int | None:
    """The project id of an object, reached by a `__` path ("run__project")."""
    *steps, last = path.split("__")
    for step in steps:
        obj = getattr(obj, step)
    return getattr(obj, f"{last}_id")


if TYPE_CHECKING:  # the mixin goes before a DRF generic view
    from rest_framework.generics import GenericAPIView

    _ViewBase = GenericAPIView
else:
    _ViewBase = object


class ProjectScopedMixin(_ViewBase):
    """A viewset over objects that belong to projects: lists and every detail
    route (retrieve, change, delete, actions) see only the user's projects, so
    an object of another project answers 404 exactly like one that does not
    exist. `project_path` reaches the project; `shared_projects` also shows
    objects without one (shared metrics, a release's systems)."""

    project_path = "project"
    shared_projects = False
    permission_classes = [IsResearcher, CanChangeProject]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """A route on one object finds it first, whatever the action does next:
        another project's object is 404 (and a viewer's change 403) before a
        body is read, so that no answer tells it from an id that does not exist."""
        super().initial(request, *args, **kwargs)
        method = str(request.method).lower()
        allowed = method in self.http_method_names and getattr(self, method, None) is not None
        if allowed and (self.lookup_url_kwarg or self.lookup_field) in kwargs:
            self.get_object()

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        return super().filter_queryset(self.scope_queryset(queryset))

    def scope_queryset(self, queryset: QuerySet) -> QuerySet:
        return scope(queryset, self.request.user, self.project_path, shared=self.shared_projects)

    def project_for_create(self, chosen: Project | str | None) -> Project:
        """The project a POST creates in (its `project` field, or the user's only
        one); a 400 naming the choices otherwise."""
        try:
            return project_for_create(self.request.user, chosen)
        except NoProjectChosen as error:
            raise ValidationError({"project": [str(error)]}) from error


def same_project(project: Project, **named: Model | list[Model] | None) -> None:
    """Refuse (400) related objects of another project: a run, a study or an
    adaptive study uses its own project's objects and shared ones only."""
    wrong: dict[str, list[str]] = {}
    for field, value in named.items():
        objects = value if isinstance(value, list) else [value] if value is not None else []
        for obj in objects:
            owner = getattr(obj, "project_id", None)
            if owner is not None and owner != project.pk:
                wrong.setdefault(field, []).append(f"{obj} belongs to another project.")
    if wrong:
        raise ValidationError(wrong)


class ProjectField(NameRelatedField):
    """The project an object belongs to, by slug: written once, at creation
    (optional when the user writes to one project only); a project the user
    does not see is "not found"; a slug with a NUL character is refused
    before PostgreSQL is asked for it (NameRelatedField)."""

    def __init__(self, **kwargs: Any) -> None:
        if not kwargs.get("read_only"):
            kwargs.setdefault("required", False)
            kwargs["queryset"] = Project.objects.all()
        super().__init__(slug_field="slug", **kwargs)

    def get_queryset(self) -> QuerySet[Project]:
        request = self.context.get("request")
        if request is None:
            return Project.objects.none()
        return visible_projects(request.user)
