"""What every console view shares: who may see it, whether htmx asked, and
the two kinds of run by their URL name."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from config.not_found import friendly_not_found
from generation.models import GenerationRun
from judging.models import JudgingRun

RUN_MODELS: dict[str, type[JudgingRun] | type[GenerationRun]] = {
    "judging": JudgingRun,
    "generation": GenerationRun,
}


def researcher_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Researchers and admins; anyone else signed in gets the 403 page, and
    an anonymous visitor the sign-in page. A study, run or document that does
    not exist (a mistyped number) answers the product's 404 page, even with
    DEBUG on."""
    view = friendly_not_found(view)

    @wraps(view)
    def check(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not request.user.is_researcher:
            raise PermissionDenied("The console is for researchers and admins.")
        return view(request, *args, **kwargs)

    return check


def is_htmx(request: HttpRequest) -> bool:
    """Whether htmx asked (the answer is then the fragment it replaces)."""
    return request.headers.get("HX-Request") == "true"
