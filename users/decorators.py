"""Who may open a page: the one researcher check of every app's pages (the
console's, the reports'). The API has its own permission classes
(users.permissions)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeGuard

from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from core.not_found import friendly_not_found
from users.models import User

View = Callable[..., HttpResponse]


def is_researcher(user: User | AnonymousUser) -> TypeGuard[User]:
    """Whether the user is signed in and a researcher (or an admin)."""
    return user.is_authenticated and user.is_researcher


def researcher_required(
    view: View | None = None, *, refusal: str = "The console is for researchers and admins."
) -> Any:
    """Researchers and admins; a gold annotator's browser asking for a page is
    sent to his start page (his gold studies), anyone else signed in gets the 403 page
    (with `refusal`), and an anonymous visitor the sign-in page. An object that does
    not exist (a mistyped number) answers the product's 404 page, even with
    DEBUG on. Use bare (`@researcher_required`) or with a refusal."""

    def decorate(view: View) -> View:
        shown = friendly_not_found(view)

        @wraps(view)
        def check(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not is_researcher(request.user):
                if (
                    request.method in ("GET", "HEAD")
                    and request.user.is_gold_annotator
                    and "text/html" in request.headers.get("Accept", "")
                ):
                    # a gold annotator's browser sent to a researcher's page (a shared
                    # link, sign-in with next=/console/) has work elsewhere: his start
                    # page. A figure or a download still answers 403.
                    return redirect("/")
                raise PermissionDenied(refusal)
            return shown(request, *args, **kwargs)

        return check

    return decorate(view) if view is not None else decorate
