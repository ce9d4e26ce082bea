"""The `--project SLUG` option of the management commands.

Commands are run by whoever holds the server's shell (an operator, a site
admin), so they may act in any project; the option says which. What a command
makes goes to that project (without the option: the default project, as
before projects existed), and the names it looks up are that project's or
shared ones: another project's system, evaluator, run or study is "no such",
as in the API."""

from __future__ import annotations

from typing import TypeVar

from django.core.management.base import CommandError, CommandParser
from django.db.models import Model, Q, QuerySet

from users.models import Project, default_project

M = TypeVar("M", bound=Model)


def add_project_argument(parser: CommandParser, *, default: str = "the default project") -> None:
    parser.add_argument(
        "--project",
        metavar="SLUG",
        help=f"The project to work in (default: {default}).",
    )


def named_project(options: dict) -> Project | None:
    """The project `--project` names, None when the option is not given; an
    unknown slug is a CommandError that lists the projects."""
    slug = options.get("project")
    if slug is None:
        return None
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        slugs = list(Project.objects.order_by("slug").values_list("slug", flat=True)[:50])
        raise CommandError(f"No project {slug!r}. Projects: {', '.join(slugs) or 'none'}.")
    return project


def command_project(options: dict) -> Project:
    """The project a command works in: the one named, else the default project."""
    return named_project(options) or default_project()


def in_project(
    queryset: QuerySet[M], project: Project | None, *, shared: bool = True
) -> QuerySet[M]:
    """The rows of `project` (and shared ones, whose project is null, when the
    model has them); every row when no project is given."""
    if project is None:
        return queryset
    mine = Q(project=project)
    return queryset.filter(mine | Q(project__isnull=True) if shared else mine)


def where(project: Project | None) -> str:
    """' in project 'slug'' for error messages ('' when none is named)."""
    return f" in project {project.slug!r}" if project is not None else ""
