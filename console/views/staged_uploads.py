"""What the two upload previews share (benchmarks: console.views.imports;
model outputs: console.views.outputs): the staged upload a preview names,
or the form to go back to, saying why."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import reverse

from corpus.importers.errors import ImportFailure
from corpus.staging import StagedUpload, discard, staged
from users.permissions import signed_in_user


def open_upload(
    request: HttpRequest, token: str, form: forms.Form, back: str
) -> StagedUpload | HttpResponse:
    """The uploader's staged upload with valid options; else the redirect to
    `back` (a URL name) with the reason: gone (imported, swept, another
    account's), discarded on request ("Discard the upload"), or options that
    no longer hold (the upload is discarded then)."""
    try:
        upload = staged(token, signed_in_user(request).pk)
    except ImportFailure as failure:
        messages.error(request, str(failure))
        return redirect(back)
    if request.method == "POST" and request.POST.get("action") == "cancel":
        discard(token)
        messages.info(request, "Upload discarded; nothing was imported.")
        return redirect(back)
    if not form.is_valid():
        discard(token)
        errors = "; ".join(f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items())
        messages.error(request, f"Not imported: {errors}")
        return redirect(back)
    return upload


def kept_fields(query: QueryDict, leave_out: str = "") -> list[tuple[str, str]]:
    """The upload's options, to travel on as the preview forms' hidden fields
    (not the CSRF token, the button pressed, or keys starting `leave_out`)."""
    return [
        (key, value)
        for key in query
        if key not in ("csrfmiddlewaretoken", "action")
        and not (leave_out and key.startswith(leave_out))
        for value in query.getlist(key)
    ]


def to_preview(
    request: HttpRequest, preview: str, upload: StagedUpload, **more: str
) -> HttpResponse:
    """The preview of `upload` (a URL name), with the options the upload form
    sent (and `more`) in its query string."""
    query = request.POST.copy()
    query.pop("csrfmiddlewaretoken", None)
    for key, value in more.items():
        query[key] = value
    return redirect(reverse(preview, args=[upload.token]) + "?" + query.urlencode())
