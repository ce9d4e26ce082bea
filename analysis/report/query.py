"""A selection read from a request's parameters, as the user may read it: the
report page and its API twin take the report's query parameters, the
planner's "select items for humans" form and call take them beside their own."""

from collections.abc import Mapping

from django.contrib.auth.models import AnonymousUser

from analysis.report.selection import PARAMETERS, Selection, SelectionError, selection_for
from users.models import User
from users.projects import is_site_admin, visible_projects

SELECTION_PARAMETERS = PARAMETERS
PAGE_PARAMETERS = ("format",)


def selection_from(
    params: Mapping[str, str], user: User | AnonymousUser, also: tuple[str, ...] = PAGE_PARAMETERS
) -> Selection:
    """The selection in a query, as the user may read it (selection_for: his
    project); a parameter it does not know (beside `also`) is an error (a
    misspelt `splti=test2` would otherwise give the report of everything)."""
    unknown = sorted(set(params) - set(SELECTION_PARAMETERS) - set(also))
    if unknown:
        raise SelectionError(
            f"unknown parameter(s) {', '.join(map(repr, unknown))}; the report takes "
            f"{', '.join(SELECTION_PARAMETERS)} and format."
        )
    if not set(params) & (set(SELECTION_PARAMETERS) - {"project"}):
        from analysis.report.scope import default_selection

        # the reader's project first: the default is chosen among its data only
        named = Selection.from_options({"project": parameter(params, "project")})
        project = reader_project(user, named.project)
        return selection_for(user, default_selection(project))
    options = {key: parameter(params, key) for key in SELECTION_PARAMETERS}
    return selection_for(user, Selection.from_options(options))


def reader_project(user: User | AnonymousUser, named: str | None = None) -> str | None:
    """The project a report opens on: the one named (if the reader sees it),
    else his only one, else, for a member of several, the one holding the
    most responses (data_project). A site admin naming none reads every
    project (None)."""
    if named is None and not is_site_admin(user):
        slugs = list(visible_projects(user).order_by("slug").values_list("slug", flat=True)[:2])
        if len(slugs) > 1:
            return data_project(user)
    return selection_for(user, Selection(project=named)).project


def data_project(user: User | AnonymousUser) -> str:
    """Of the reader's projects, the one holding the most responses (the first
    by slug on a tie, or when none holds any)."""
    from django.db.models import Count

    from generation.models import Response

    visible = visible_projects(user)
    busiest = (
        Response.objects.filter(run__project__in=visible)
        .values("run__project__slug")
        .annotate(n=Count("pk"))
        .order_by("-n", "run__project__slug")
        .first()
    )
    if busiest is not None:
        return busiest["run__project__slug"]
    first = visible.order_by("slug").values_list("slug", flat=True).first()
    if first is None:
        raise SelectionError("you are a member of no project: an owner of one adds you.")
    return first


LIST_PARAMETERS = frozenset({"systems", "evaluators", "judges", "humans"})


def parameter(params: Mapping[str, str], key: str) -> str | list[str] | None:
    """A query parameter's value; the builder's checkboxes send names as
    repeated parameters (systems=A&systems=B), links as one (systems=A,B),
    each with a comma inside a name written `\\,` (analysis.report.selection.split_names)."""
    if key in LIST_PARAMETERS and hasattr(params, "getlist"):
        values = [v for v in params.getlist(key) if v is not None]
        return values or None
    return params.get(key)
