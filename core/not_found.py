"""The product's 404 page for the links people paste or type, whatever DEBUG says.

With DEBUG on (the demo, a developer's machine) Django answers a 404 with its
technical page, which lists every URL pattern of the project and tells a
participant nothing they can act on. The views behind the links that people
copy by hand (a participant's study and task links, a researcher's study
monitor) answer the product's page themselves: `friendly_not_found` turns their
Http404 into it, and `handler404` (core.api.not_found) uses the same page
when DEBUG is off. A participant's page asks for no sign-in and says what to do:
open the study from Prolific again, or write to the researchers.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

# The participants' links: a study link from Prolific, a task link (annotator.urls)
PARTICIPANT_PREFIXES = ("/s/", "/r/")


def not_found_page(request: HttpRequest) -> HttpResponse:
    """templates/404.html, worded for a participant under their links."""
    participant = request.path.startswith(PARTICIPANT_PREFIXES)
    return render(request, "404.html", {"participant": participant}, status=404)


def friendly_not_found(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The view's Http404 answers the product's 404 page, even with DEBUG on."""

    @wraps(view)
    def answer(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except Http404:
            return not_found_page(request)

    return answer


def link_not_found(request: HttpRequest, **kwargs) -> HttpResponse:
    """A link that no view can read (a study link whose id is cut short or
    mistyped, so not even a UUID): the same page."""
    return not_found_page(request)
