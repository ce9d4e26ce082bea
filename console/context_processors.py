"""What every page's template may ask about the reader's roles."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject


def roles(request: HttpRequest) -> dict[str, object]:
    """`can_create`: whether the reader may create in at least one project (a
    viewer of every project he is in may not), so that the console hides
    "New study", "Judge responses" and the like from him. Asked once per page,
    and only by a page that shows such a button."""
    from users.projects import is_site_admin, writable_projects

    def may_create() -> bool:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return False
        return is_site_admin(user) or writable_projects(user).exists()

    return {"can_create": SimpleLazyObject(may_create)}
