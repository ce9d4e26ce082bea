"""CONCORD_OIDC_ROLE_MAP: which groups of the identity provider give which role.

One entry per grant, separated by `;` (whitespace and newlines around entries
are ignored, an empty entry too):

    GROUP=site:ROLE              ROLE: admin, researcher or gold_annotator
    GROUP=project:SLUG:ROLE      ROLE: owner, researcher or viewer

for example `lab-admins=site:admin; nlp-team=project:nlp:owner;
nlp-students=project:nlp:researcher; annotators=site:gold_annotator`. A group
may appear in several entries (one grant each); the group is everything before
the last `=`, so a group name may hold `=` or `:` but not `;`.

When a person's groups give several roles, the strongest wins: for the site,
admin > researcher > gold_annotator; in a project, owner > researcher > viewer.
A project role implies at least the researcher site role (users.oidc.sync).

Pure Python (no models): the settings parse the map at start-up, so that a bad
map stops Concord with a message naming the entry, not the first sign-in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.core.exceptions import ImproperlyConfigured

SITE_ROLES = ("admin", "researcher", "gold_annotator")  # strongest first
PROJECT_ROLES = ("owner", "researcher", "viewer")  # strongest first
# Django's SlugField, within Project.slug's 64 characters
SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")

SYNTAX = (
    "each entry is GROUP=site:ROLE (ROLE: admin, researcher, gold_annotator) or "
    "GROUP=project:SLUG:ROLE (ROLE: owner, researcher, viewer), entries separated by ';'"
)


class RoleMapError(ImproperlyConfigured):
    """CONCORD_OIDC_ROLE_MAP cannot be read; the message names the entry and why."""


@dataclass(frozen=True)
class Grant:
    """What one group gives: a site role (project None) or a role in a project."""

    role: str
    project: str | None = None

    def __str__(self) -> str:
        return f"project:{self.project}:{self.role}" if self.project else f"site:{self.role}"


@dataclass(frozen=True)
class Granted:
    """What a person's groups give, all entries taken together."""

    site_role: str = ""  # "" for none
    projects: dict[str, str] = field(default_factory=dict)  # slug -> project role

    @property
    def nothing(self) -> bool:
        return not self.site_role and not self.projects


@dataclass(frozen=True)
class RoleMap:
    grants: dict[str, tuple[Grant, ...]] = field(default_factory=dict)

    @property
    def projects(self) -> list[str]:
        """The slugs of the projects the map names."""
        return sorted({g.project for gs in self.grants.values() for g in gs if g.project})

    def resolve(self, groups: Iterable[str]) -> Granted:
        """What these groups give (groups the map does not name give nothing)."""
        site = ""
        projects: dict[str, str] = {}
        for group in set(groups):
            for grant in self.grants.get(group, ()):
                if grant.project is None:
                    site = strongest(SITE_ROLES, site, grant.role)
                else:
                    before = projects.get(grant.project, "")
                    projects[grant.project] = strongest(PROJECT_ROLES, before, grant.role)
        return Granted(site_role=site, projects=projects)


def strongest(order: tuple[str, ...], a: str, b: str) -> str:
    """The stronger of two roles of `order` ("" is weaker than any)."""
    if not a:
        return b
    if not b:
        return a
    return a if order.index(a) <= order.index(b) else b


def parse_role_map(text: str, name: str = "CONCORD_OIDC_ROLE_MAP") -> RoleMap:
    """The map written in `text`; RoleMapError for any entry that is not one of
    the two forms, with its position and text."""
    grants: dict[str, list[Grant]] = {}
    for number, raw in enumerate(text.split(";"), start=1):
        entry = raw.strip()
        if not entry:
            continue
        where = f"{name}, entry {number} ({entry!r})"
        group, equals, target = entry.rpartition("=")
        group, target = group.strip(), target.strip()
        if not equals:
            raise RoleMapError(f"{where}: no '='; {SYNTAX}.")
        if not group:
            raise RoleMapError(f"{where}: the group before '=' is empty; {SYNTAX}.")
        grant = _grant(target, where)
        for earlier in grants.get(group, []):
            if earlier == grant:
                raise RoleMapError(f"{where}: the same grant is given twice.")
            if earlier.project == grant.project:
                what = f"project {grant.project!r}" if grant.project else "the site"
                raise RoleMapError(
                    f"{where}: group {group!r} already gives {earlier} in {what}; "
                    "give one role per group and place."
                )
        grants.setdefault(group, []).append(grant)
    return RoleMap({group: tuple(gs) for group, gs in grants.items()})


def _grant(target: str, where: str) -> Grant:
    kind, _, rest = target.partition(":")
    parts = [part.strip() for part in rest.split(":")] if rest else []
    if kind == "site":
        if len(parts) != 1 or parts[0] not in SITE_ROLES:
            raise RoleMapError(
                f"{where}: {target!r} is not site:ROLE with ROLE one of {', '.join(SITE_ROLES)}."
            )
        return Grant(role=parts[0])
    if kind == "project":
        if len(parts) != 2:
            raise RoleMapError(f"{where}: {target!r} is not project:SLUG:ROLE.")
        slug, role = parts
        if not SLUG.match(slug):
            raise RoleMapError(
                f"{where}: {slug!r} is not a project slug (letters, digits, '-' and '_', "
                "at most 64)."
            )
        if role not in PROJECT_ROLES:
            raise RoleMapError(
                f"{where}: {role!r} is not a project role (one of {', '.join(PROJECT_ROLES)})."
            )
        return Grant(role=role, project=slug)
    raise RoleMapError(f"{where}: {target!r} starts with neither 'site:' nor 'project:'; {SYNTAX}.")
