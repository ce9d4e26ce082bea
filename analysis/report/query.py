"""A selection read from a request's parameters, as the user may read it: the
report page and its API twin take the report's query parameters, the
planner's "select items for humans" form and call take them beside their own."""

from collections.abc import Mapping

from django.contrib.auth.models import AnonymousUser

from analysis.report.selection import PARAMETERS, Selection, SelectionError, selection_for
from users.models import User

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
        project = selection_for(user, named).project
        return selection_for(user, default_selection(project))
    options = {key: parameter(params, key) for key in SELECTION_PARAMETERS}
    return selection_for(user, Selection.from_options(options))


LIST_PARAMETERS = frozenset({"systems", "evaluators", "judges", "humans"})


def parameter(params: Mapping[str, str], key: str) -> str | list[str] | None:
    """A query parameter's value; the builder's checkboxes send names as
    repeated parameters (systems=A&systems=B), links as one (systems=A,B),
    each with a comma inside a name written `\\,` (analysis.report.selection.split_names)."""
    if key in LIST_PARAMETERS and hasattr(params, "getlist"):
        values = [v for v in params.getlist(key) if v is not None]
        return values or None
    return params.get(key)
