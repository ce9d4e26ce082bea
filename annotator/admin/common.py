"""What the admin's pages share: the public address, Prolific's client, CSV answers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse

from annotator.errors import StudyError
from annotator.prolific_api import ProlificClient, ProlificError
from core.downloads import as_attachment

T = TypeVar("T")


def public_base_url(request: HttpRequest | None) -> str:
    """Where participants reach Concord: CONCORD_PUBLIC_URL, else this request's host."""
    return settings.CONCORD_PUBLIC_URL or (request.build_absolute_uri("/") if request else "/")


def prolific_client(request: HttpRequest) -> ProlificClient | None:
    try:
        return ProlificClient(settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_API_URL)
    except ProlificError as error:
        messages.error(request, str(error))
        return None


def for_each_on_prolific(
    request: HttpRequest, objects: Iterable[T], work: Callable[[ProlificClient, T], str]
) -> None:
    """Run `work(client, obj)` for each object and show what it returns; Prolific's
    and Concord's refusals become error messages and stop the rest."""
    client = prolific_client(request)
    if client is None:
        return
    try:
        for obj in objects:
            messages.info(request, work(client, obj))
    except (ProlificError, StudyError) as error:
        messages.error(request, str(error))


def csv_response(text: str, filename: str) -> HttpResponse:
    return as_attachment(HttpResponse(text, content_type="text/csv; charset=utf-8"), filename)
