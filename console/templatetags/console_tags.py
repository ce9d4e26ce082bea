"""Small formatting filters for the console's pages."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds) -> str:
    """3 s, 4 min 10 s, 2 h 05 min, 3 d 4 h."""
    if seconds is None or seconds == "":
        return "–"
    seconds = int(round(float(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


@register.filter
def width(percent) -> str:
    """A CSS width from a percentage, clipped to 0-100 (always a dot decimal)."""
    value = max(0.0, min(100.0, float(percent or 0)))
    return f"{value:.1f}%"


@register.filter
def money(value) -> str:
    if value is None or value == "":
        return "–"
    return f"${float(value):,.4f}" if float(value) < 1 else f"${float(value):,.2f}"


@register.filter
def thousands(value) -> str:
    return f"{int(value or 0):,}"


@register.filter
def may_change(owned, user) -> bool:
    """Whether `user` may act on `owned` (a run, a study, an adaptive study):
    its project's owners and researchers may; a viewer only reads, so the
    page shows him no button he could not use."""
    from users.projects import can_change

    return can_change(user, owned.project_id)


@register.filter
def get_item(mapping, key):
    """mapping[key], or None (no mapping, or no such key)."""
    if not isinstance(mapping, dict):
        return None
    return mapping.get(key)
