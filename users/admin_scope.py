"""The admin as a project's members see it: their projects' rows, read only.

Site admins (superusers and the admin role) use the admin as before: every
project's rows, every change. A researcher or viewer of a project may open
the admin to read the raw rows of his projects (and the shared ones:
benchmarks, metrics, a release's evaluators and systems); another project's
row is not listed and its page is "not found". Changes stay in the console and
the API, where the domain's checks and the project's roles apply: in the
admin, members change nothing, add nothing, delete nothing and run no action.

A model admin says how its rows reach their project (`project_path`, a query
path such as "run__project"; None for a model shared by every project);
tests/users/test_admin_scope.py fails when a registered model admin is neither
scoped nor listed as the site admins' own.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from users.models import Membership, User
from users.projects import is_site_admin, scope


def is_member(user: Any) -> bool:
    """A researcher (or admin) who belongs to at least one project."""
    return bool(
        isinstance(user, User)
        and user.is_researcher
        and Membership.objects.filter(user=user).exists()
    )


class ProjectReadableAdmin(admin.ModelAdmin):
    """A model admin whose rows belong to a project (see the module's text)."""

    # how a row reaches its project; None: the model is shared by every project
    project_path: str | None = "project"
    # rows whose project is null are shared (systems, evaluators)
    shared_rows = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if is_site_admin(request.user) or self.project_path is None:
            return queryset
        return scope(queryset, request.user, self.project_path, shared=self.shared_rows)

    def has_module_permission(self, request: HttpRequest) -> bool:
        if is_site_admin(request.user):
            return super().has_module_permission(request)
        return is_member(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if is_site_admin(request.user):
            return super().has_view_permission(request, obj)
        # a row of another project never reaches here: get_queryset leaves it out
        return is_member(request.user)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return is_site_admin(request.user) and super().has_add_permission(request, *args)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_site_admin(request.user) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_site_admin(request.user) and super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        if not is_site_admin(request.user):
            return {}
        return super().get_actions(request)


def site_or_member(request: HttpRequest) -> bool:
    """Who may open the admin at all: site admins (with the staff flag, as
    before), and members of a project, who see only ProjectReadableAdmin's
    pages, read only. A staff flag alone opens nothing."""
    user = request.user
    if not user.is_active:
        return False
    return bool((user.is_staff and is_site_admin(user)) or is_member(user))
