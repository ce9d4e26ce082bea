from collections.abc import Container

from django import template

register = template.Library()


@register.filter
def get(mapping: object, key: object) -> object:
    """mapping[key] in templates (None when absent): for the report's
    dictionaries keyed by names from the data (systems, evaluators)."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def not_computable(value: object) -> bool:
    """A statistic of the report that could not be computed (it has a reason)."""
    from analysis.report.report_types import NotComputable  # pydantic: with the first report

    return isinstance(value, NotComputable)


@register.filter
def computed(value: object) -> bool:
    """A statistic of the report that is there and was computed."""
    from analysis.report.report_types import NotComputable

    return value is not None and not isinstance(value, NotComputable)


@register.filter
def score(value: float | str | None) -> str:
    if value is None:
        return "–"
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pvalue(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


@register.filter
def percent(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{float(value):.0%}"


@register.filter
def fewer_than(with_judge: int | None, without: int | None) -> str:
    """How many fewer gold ratings a judge's PPI++ needs than gold alone, in
    words ("38% fewer"); empty when either is unknown."""
    if with_judge is None or not without:
        return ""
    return f"{1 - with_judge / without:.0%} fewer"


VERDICT_WORDS = {
    "passes": "passes",
    "fails": "fails",
    "inconclusive": "inconclusive",
    "no_data": "no verdict",
}


@register.filter
def verdict(value: object) -> str:
    """An alt-test verdict as the report writes it."""
    return VERDICT_WORDS.get(str(value), str(value))


@register.filter
def has(collection: Container[object], item: object) -> bool:
    """`item in collection` in templates (the builder's chosen names)."""
    return item in collection


@register.filter
def as_parameter(name: str) -> str:
    """One name as a list parameter's value (a comma in it escaped: analysis.report.selection)."""
    from analysis.report.selection import join_names

    return join_names([name])


@register.filter
def use_words(verdict: str) -> str:
    """A cell's verdict of the table of judges x uses, in words."""
    from analysis.report.uses import CELL_WORDS

    return CELL_WORDS.get(verdict, verdict)


@register.filter
def rating(value: float | None) -> str:
    """An Elo-scale rating or difference, to the point."""
    return "–" if value is None else f"{float(value):.0f}"


@register.filter
def rank_set(bounds: list | None) -> str:
    """A rank-set as the ranks it holds: {1}, {2, 3}, {2, ..., 5}; – when none is given."""
    if not bounds or bounds[0] is None or bounds[1] is None:
        return "–"
    best, worst = int(bounds[0]), int(bounds[1])
    if best == worst:
        return f"{{{best}}}"
    if worst == best + 1:
        return f"{{{best}, {worst}}}"
    return f"{{{best}, …, {worst}}}"


@register.filter
def rank_or_range(value: int | list | None) -> str:
    """A rank (3) or, where a tie allows several, their range (2-3)."""
    if value is None:
        return "–"
    if isinstance(value, list):
        return f"{value[0]}-{value[1]}"
    return str(value)


@register.filter
def get_system(rows: list, name: str) -> object:
    """The row of `rows` (report parts with a `system`) for system `name`."""
    return next((row for row in rows if row.system == name), None)
