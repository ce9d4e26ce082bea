"""Who sees and changes what: every scoping rule of projects, in one module.

Plain querysets, not per-object permission rows (django-guardian) or rule
predicates (django-rules): what a user may see is "the objects whose project
he is a member of", which is one filter on a foreign key. One filter scales to
any list (no join through a permission table per object), and the same filter
serves the API, the console, the admin, reports and exports.

Site admins (superusers and the admin role) see every project. A researcher
sees the projects he is a member of; gold annotators see no project data at
all, only the studies they are assigned to (annotator's own rule).
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.db.models import Model, Q, QuerySet

from users.models import Membership, Project, ProjectRole, User, default_project

WRITING_ROLES = (ProjectRole.OWNER, ProjectRole.RESEARCHER)

M = TypeVar("M", bound=Model)
AnyUser = User | AnonymousUser


class NoProjectChosen(ValueError):
    """A create that must name its project did not, or named one the user may not write to."""


def is_site_admin(user: AnyUser) -> bool:
    return bool(
        user.is_authenticated
        and isinstance(user, User)
        and user.is_active
        and (user.is_superuser or user.role == User.Role.ADMIN)
    )


def visible_projects(user: AnyUser) -> QuerySet[Project]:
    if is_site_admin(user):
        return Project.objects.all()
    if not (isinstance(user, User) and user.is_researcher):
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user)


def writable_projects(user: AnyUser) -> QuerySet[Project]:
    if is_site_admin(user):
        return Project.objects.all()
    if not (isinstance(user, User) and user.is_researcher):
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user, memberships__role__in=WRITING_ROLES)


def role_in(user: AnyUser, project: Project | int | None) -> str | None:
    """The user's role in a project ("owner" for site admins), None for none."""
    if project is None:
        return ProjectRole.OWNER if is_site_admin(user) else None
    if is_site_admin(user):
        return ProjectRole.OWNER
    if not (isinstance(user, User) and user.is_researcher):
        return None
    project_id = project if isinstance(project, int) else project.pk
    return (
        Membership.objects.filter(user=user, project_id=project_id)
        .values_list("role", flat=True)
        .first()
    )


def can_change(user: AnyUser, project_id: int | None) -> bool:
    """Owners and researchers change their project's objects; only site admins
    change shared ones (project None)."""
    return role_in(user, project_id) in WRITING_ROLES


def scope(
    queryset: QuerySet[M], user: AnyUser, path: str = "project", *, shared: bool = False
) -> QuerySet[M]:
    """The rows of `queryset` the user may see: those whose project (reached by
    `path`) he is a member of; with `shared`, also those without a project."""
    if is_site_admin(user):
        return queryset
    if not (isinstance(user, User) and user.is_researcher):
        return queryset.none()
    mine = Q(**{f"{path}__memberships__user": user})
    if shared:
        mine |= Q(**{f"{path}__isnull": True})
    # a subquery, not a join: a join through memberships could repeat rows
    ids = queryset.model._default_manager.filter(mine).values("pk")
    return queryset.filter(pk__in=ids)


def project_for_create(user: AnyUser, chosen: Project | str | None) -> Project:
    """The project a new object goes to: the one named (by slug or object), which
    the user must be able to write to, or his only writable project.

    Raises NoProjectChosen with a message that lists what he may choose; a
    project he cannot see is reported as unknown, never as forbidden."""
    writable = writable_projects(user)
    if chosen is not None:
        slug = chosen.slug if isinstance(chosen, Project) else str(chosen)
        project = writable.filter(slug=slug).first()
        if project is None:
            if visible_projects(user).filter(slug=slug).exists():
                raise NoProjectChosen(
                    f"You may only read project {slug!r}: its viewers cannot create."
                )
            raise NoProjectChosen(f"No project {slug!r}. {_choices(writable)}")
        return project
    options = list(writable[:2])
    if len(options) == 1:
        return options[0]
    if not options:
        raise NoProjectChosen(
            "You are not a researcher of any project: an owner of a project adds you to it."
        )
    raise NoProjectChosen(f"Name the project. {_choices(writable)}")


def _choices(writable: QuerySet[Project]) -> str:
    slugs = list(writable.values_list("slug", flat=True)[:20])
    return f"Yours: {', '.join(slugs)}." if slugs else "You may create in no project."


def join_the_only_project(instance: User, **_: Any) -> Membership | None:
    """A single-team install notices no projects: while only one project exists,
    a researcher with no membership is made a researcher of it (an account made
    by a script or the identity provider; the admin's form asks for the first
    role instead). With two or more projects an owner or admin adds members by
    hand (or the identity provider does)."""
    user = instance
    if getattr(user, "first_project_role_chosen", False):
        return None  # whoever created the account chose (users.admin.FirstRoleCreationForm)
    if not user.is_researcher or user.memberships.exists():
        return None
    projects = list(Project.objects.all()[:2])
    if len(projects) > 1:
        return None
    project = projects[0] if projects else default_project()
    membership, _created = Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": ProjectRole.RESEARCHER}
    )
    return membership


def scope_choices(queryset: QuerySet[M], user: AnyUser) -> QuerySet[M]:
    """What a user may name in a related field or filter: objects of his
    projects and shared ones; models that belong to no project (benchmarks,
    meetings) are everyone's. A model without a project of its own is scoped
    through the row it belongs to (a response through its run). Another
    project's object then reads as "does not exist"."""
    model = queryset.model
    path = project_path_of(model)
    if path is None:
        return queryset
    if path == "project":
        return scope(queryset, user, shared=model._meta.get_field("project").null)
    return scope(queryset, user, path)


@cache
def project_path_of(model: type[Model], depth: int = 0) -> str | None:
    """How a model's rows reach their project: "project" for a model with its
    own, else the path through the rows it cannot exist without ("run__project"
    for a response, "response__run__project" for a judgment); None for a model
    every project shares. Only required links and a required project count,
    so a judgment is not scoped by its (possibly shared) evaluator."""
    fields = model._meta.get_fields()
    for field in fields:
        if field.name == "project" and field.many_to_one and field.related_model is Project:
            return "project"
    if depth >= 3:
        return None
    for field in fields:
        target = field.related_model
        if not field.many_to_one or getattr(field, "null", True) or target is Project:
            continue
        assert isinstance(target, type)
        inner = project_path_of(target, depth + 1)
        if inner is None:
            continue
        if inner == "project" and target._meta.get_field("project").null:
            continue  # a shared row (a release's evaluator) says nothing of the project
        return f"{field.name}__{inner}"
    return None
