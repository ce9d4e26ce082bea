"""What a sign-in with the identity provider changes: the account's site role
and its memberships of source "oidc", set to exactly what the claims give.

Memberships granted in Concord (source "local") are never changed or removed
by a sign-in; where the claims name a project the person is already a local
member of, the local membership stays as it is.
"""

from __future__ import annotations

from django.db import transaction

from users.models import Membership, Project, User
from users.oidc.mapping import SITE_ROLES, Granted, strongest


def site_role(granted: Granted) -> str:
    """The site role the claims give: the strongest of the site role they name
    and "researcher" when they give any project role ("" when they give nothing)."""
    implied = User.Role.RESEARCHER.value if granted.projects else ""
    return strongest(SITE_ROLES, granted.site_role, implied)


def project_named(slug: str) -> Project:
    """The project of the role map's slug, created (named by its slug; an admin
    may rename it) the first time a sign-in grants a role in it."""
    project = Project.objects.filter(slug=slug).first()
    if project is not None:
        return project
    name, n = slug, 1
    while Project.objects.filter(name=name).exists():
        n += 1
        name = f"{slug} ({n})"
    project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": name})
    return project


def apply_grants(user: User, granted: Granted) -> None:
    """Set the user's identity-provider memberships and site role to `granted`."""
    with transaction.atomic():
        wanted = {project_named(slug).pk: role for slug, role in granted.projects.items()}
        held = {m.project_id: m for m in Membership.objects.select_for_update().filter(user=user)}
        for project_id, role in wanted.items():
            membership = held.pop(project_id, None)
            if membership is None:
                Membership.objects.create(
                    project_id=project_id, user=user, role=role, source=Membership.Source.OIDC
                )
            elif membership.source == Membership.Source.OIDC and membership.role != role:
                membership.role = role
                membership.save(update_fields=["role"])
        stale = [m.pk for m in held.values() if m.source == Membership.Source.OIDC]
        Membership.objects.filter(pk__in=stale).delete()
        role = site_role(granted)
        # the admin is the site admins' to change (users.admin_scope): the
        # provider's admins reach it, and lose it with the role; a superuser
        # made in Concord keeps his flags
        staff = user.is_superuser or role == User.Role.ADMIN
        if user.role != role or user.is_staff != staff:
            user.role = role
            user.is_staff = staff
            # a full save: its post_save signal (users.projects.join_the_only_project)
            # makes a researcher of a single-project install a member of it
            user.save()
