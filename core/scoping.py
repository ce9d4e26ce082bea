"""Which related objects a user may name in a body or a filter: the ground
floor asks, the app that knows answers. `CONCORD_SCOPE_CHOICES` names the
function (default `users.projects.scope_choices`: a user's projects' objects
and shared ones), read when first asked, so that core imports no app."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.utils.module_loading import import_string


@cache
def _chooser() -> Callable[[QuerySet, Any], QuerySet]:
    return import_string(settings.CONCORD_SCOPE_CHOICES)


def scope_choices(queryset: QuerySet, user: Any) -> QuerySet:
    """The objects of `queryset` that `user` may name."""
    return _chooser()(queryset, user)
