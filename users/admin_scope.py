"""The admin as a project's members see it: their projects' rows.

Site admins (superusers and the admin role) use the admin as before: every
project's rows, every change. A researcher or viewer of a project may open
the admin to read the raw rows of his projects (and the shared ones:
benchmarks, metrics, a release's evaluators and systems); another project's
row is not listed and its page is "not found".

Members change things in the console and the API, where the domain's checks
and the roles apply. The admin is where some settings live only (a system's
model and decoding configuration, an evaluator's, a study's texts, scale and
Prolific settings, a webhook endpoint), so on those models (`members_write`)
an owner or researcher adds and changes rows of the projects he writes to: the
project is chosen among those when a row is added and never changes after,
and the related objects offered and accepted are the project's or shared
ones. A viewer reads only. Members run no admin action and delete nothing.

A model admin says how its rows reach their project (`project_path`, a query
path such as "run__project"; None for a model shared by every project);
tests/users/test_admin_scope.py fails when a registered model admin is neither
scoped nor listed as the site admins' own.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import NotRelationField, get_fields_from_path
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from users.models import Membership, Project, User
from users.projects import can_change, is_site_admin, scope, writable_projects


def is_member(user: Any) -> bool:
    """A researcher (or admin) who belongs to at least one project."""
    return bool(
        isinstance(user, User)
        and user.is_researcher
        and Membership.objects.filter(user=user).exists()
    )


def has_project(model: type[Model]) -> bool:
    return any(field.name == "project" for field in model._meta.get_fields())


class ProjectScopedAdmin(admin.ModelAdmin):
    """A model admin whose rows belong to a project (see the module's text)."""

    # how a row reaches its project; None: the model is shared by every project
    project_path: str | None = "project"
    # rows whose project is null are shared (systems, evaluators)
    shared_rows = False
    # owners and researchers add and change rows of their projects here (the
    # model has its own `project`)
    members_write = False

    # -- what a member sees --

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if is_site_admin(request.user) or self.project_path is None:
            return queryset
        return scope(queryset, request.user, self.project_path, shared=self.shared_rows)

    def get_list_filter(self, request: HttpRequest) -> Any:
        """A member's filter sidebar lists only the related objects of the rows he
        sees: a plain related filter would list every project's studies, systems,
        evaluators and projects by name."""
        filters = super().get_list_filter(request)
        if is_site_admin(request.user):
            return filters
        return [self._rows_only(spec) for spec in filters]

    def _rows_only(self, spec: Any) -> Any:
        if not isinstance(spec, str):
            return spec
        try:
            field = get_fields_from_path(self.model, spec)[-1]
        except (FieldDoesNotExist, NotRelationField):
            return spec
        if field.is_relation:
            return (spec, admin.RelatedOnlyFieldListFilter)
        return spec

    def has_module_permission(self, request: HttpRequest) -> bool:
        if is_site_admin(request.user):
            return super().has_module_permission(request)
        return is_member(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if is_site_admin(request.user):
            return super().has_view_permission(request, obj)
        # a row of another project never reaches here: get_queryset leaves it out
        return is_member(request.user)

    # -- what a member changes --

    def project_id_of(self, obj: Model) -> int | None:
        if self.project_path is None:
            return None
        if obj.pk is None:
            return getattr(obj, "project_id", None)
        return (
            self.model._default_manager.filter(pk=obj.pk)
            .values_list(self.project_path, flat=True)
            .first()
        )

    def member_writes(self, request: HttpRequest, obj: Any = None) -> bool:
        if not self.members_write:
            return False
        if obj is None:
            return writable_projects(request.user).exists()
        project_id = self.project_id_of(obj)
        return project_id is not None and can_change(request.user, project_id)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        if is_site_admin(request.user):
            return super().has_add_permission(request, *args)
        return self.member_writes(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if is_site_admin(request.user):
            return super().has_change_permission(request, obj)
        return self.member_writes(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_site_admin(request.user) and super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        if not is_site_admin(request.user):
            return {}
        return super().get_actions(request)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and self.members_write and "project" not in fields:
            fields.append("project")  # chosen when the row is added, never changed
        return fields

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if not is_site_admin(request.user):
            if db_field.name == "project" and db_field.related_model is Project:
                kwargs["queryset"] = writable_projects(request.user)
                kwargs["required"] = True  # a shared row is a site admin's to make
            elif has_project(db_field.related_model):
                kwargs["queryset"] = self._offered(db_field, request, kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if not is_site_admin(request.user) and has_project(db_field.related_model):
            kwargs["queryset"] = self._offered(db_field, request, kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    @staticmethod
    def _offered(db_field: Any, request: HttpRequest, kwargs: dict[str, Any]) -> QuerySet[Any]:
        queryset = kwargs.get("queryset", db_field.related_model._default_manager.all())
        return scope(queryset, request.user, shared=True)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if is_site_admin(request.user) or not self.members_write:
            return form
        owner = None if obj is None else self.project_id_of(obj)

        def clean(this: forms.ModelForm[Any]) -> dict[str, Any]:
            # before the model form's own checks: "another project's" says why
            chosen = this.cleaned_data.get("project") if owner is None else owner
            project_id = chosen.pk if isinstance(chosen, Project) else chosen
            if project_id is not None:
                refuse_other_projects(this.cleaned_data, project_id)
            return form.clean(this) or this.cleaned_data

        return type(form.__name__, (form,), {"clean": clean})

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if not is_site_admin(request.user):
            project_id = self.project_id_of(obj) if change else getattr(obj, "project_id", None)
            if project_id is None or not can_change(request.user, project_id):
                raise PermissionDenied("Only the project's owners and researchers change it.")
        super().save_model(request, obj, form, change)


def refuse_other_projects(cleaned: dict[str, Any], project_id: int) -> None:
    """A row uses its own project's objects and shared ones (as in the API,
    users.permissions.same_project): a member of two projects is offered both."""
    wrong: dict[str, str] = {}
    for name, value in cleaned.items():
        objects = list(value) if isinstance(value, QuerySet | list | tuple) else [value]
        for item in objects:
            if not isinstance(item, Model) or isinstance(item, Project):
                continue
            owner = getattr(item, "project_id", None)
            if owner is not None and owner != project_id:
                wrong[name] = f"{item} belongs to another project."
    if wrong:
        raise forms.ValidationError(wrong)


def site_or_member(request: HttpRequest) -> bool:
    """Who may open the admin at all: site admins (with the staff flag, as
    before), and members of a project (ProjectScopedAdmin's pages only). A
    staff flag alone opens nothing."""
    user = request.user
    if not user.is_active:
        return False
    return bool((user.is_staff and is_site_admin(user)) or is_member(user))
