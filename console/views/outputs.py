"""Model outputs made elsewhere, uploaded in the browser: the file is kept
aside (corpus.staging) and read in full at once, so that a refusal names its
line on the form; then its preview (the first records, the fields read, each
system's responses and what the import would write, from a dry run that is
rolled back) waits for the researcher's confirmation before anything is
stored (generation.response_import)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse

from console.forms import ResponseUploadForm
from console.views.runs import chosen_dataset
from console.views.staged_uploads import kept_fields, open_upload, to_preview
from core.words import count
from corpus.importers.errors import ImportFailure
from corpus.importers.limits import size, upload_limits
from corpus.importers.preview import first_rows
from corpus.staging import StagedUpload, discard, stage
from generation.response_import import (
    ResponseImport,
    dry_run_import,
    import_responses,
    read_response_file,
    responses_by_system,
)
from users.decorators import researcher_required
from users.permissions import signed_in_user

FIELDS_READ = (
    ("document_id", "the question's document, as imported"),
    ("question_id", "the question's id in it"),
    ("response", "the model's answer (may be empty)"),
    ("system", "the system that answered"),
    ("task", "the task's dataset"),
    ("seed", "one run per system, dataset, mode and seed"),
    ("mode", "st (single-turn) or mt (multi-turn)"),
)


class ResponseOptionsForm(ResponseUploadForm):
    """The upload's options without its file: what the preview and the
    confirmation read back from the query string."""

    file = None  # type: ignore[assignment]


def _named(text: str, upload: StagedUpload) -> str:
    return text.replace(str(upload.first), upload.first.name)


def _import(form: ResponseUploadForm, upload: StagedUpload, *, dry: bool) -> ResponseImport:
    data = form.cleaned_data
    dataset = data["dataset"]
    parsed = read_response_file(
        upload.first, system=data["system"], task=dataset.task, mode=data["mode"]
    )
    write = dry_run_import if dry else import_responses
    return write(
        parsed,
        benchmark=dataset.benchmark.slug,
        split=dataset.split,
        version=dataset.version,
        language=dataset.language,
        origin=f"console upload {upload.first.name}"[:500],
        project=data["project"],
    )


@researcher_required
def responses_upload(request: HttpRequest) -> HttpResponse:
    """The file, read in full and tried (nothing stored): a refusal shows on
    the form; else its preview."""
    user = signed_in_user(request)
    form = ResponseUploadForm(
        request.POST or None, request.FILES or None, user=user, initial=chosen_dataset(request)
    )
    if request.method == "POST" and form.is_valid():
        file = form.cleaned_data["file"]
        try:
            upload = stage([(file.name or "responses", file.chunks())], owner=user.pk)
        except ImportFailure as failure:
            form.add_error("file", str(failure))
        else:
            try:
                _import(form, upload, dry=True)
            except ImportFailure as failure:
                form.add_error("file", _named(str(failure), upload))
                discard(upload.token)
            else:
                project = str(form.cleaned_data["project"].pk)
                return to_preview(request, "console:responses_preview", upload, project=project)
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "Import responses",
            "submit": "Upload and preview",
            "max_bytes": upload_limits().max_bytes,
            "intro": "Outputs a model gave elsewhere, for a benchmark imported here: each "
            "system's become an imported run that judges and studies can score. The next page "
            "previews the file; nothing is stored before you confirm.",
            "nav": "runs",
        },
    )


@researcher_required
def responses_preview(request: HttpRequest, token: str) -> HttpResponse:
    user = signed_in_user(request)
    query = request.POST if request.method == "POST" else request.GET
    form = ResponseOptionsForm(query, user=user)
    upload = open_upload(request, token, form, "console:responses_upload")
    if isinstance(upload, HttpResponse):
        return upload
    try:
        result = _import(form, upload, dry=request.method != "POST")
    except ImportFailure as failure:
        # stored data changed meanwhile (or the file did): say so, keep nothing half-done
        return _preview(request, form, upload, query, _named(str(failure), upload), None)
    if request.method != "POST":
        return _preview(request, form, upload, query, "", result)
    discard(token)
    counts = result.counts["responses"]
    messages.info(
        request,
        f"Imported {count(counts.created, 'response')} "
        f"({counts.updated} changed, {counts.unchanged} already there) into "
        f"{count(len(result.runs), 'run')}, one per system. Next: judge them "
        "(Judge responses), then open the report.",
    )
    if len(result.runs) > 1:  # every system's run, not the first one's alone
        return redirect(reverse("console:runs") + "?imported=1#generation-runs")
    return redirect("console:run", kind="generation", pk=result.runs[0])


def _preview(
    request: HttpRequest,
    form: ResponseUploadForm,
    upload: StagedUpload,
    query: QueryDict,
    error: str,
    result: ResponseImport | None,
) -> HttpResponse:
    data = form.cleaned_data
    columns, rows = first_rows(upload.first)
    systems: dict[str, int] = {}
    if result is not None:
        systems = responses_by_system(
            read_response_file(
                upload.first, system=data["system"], task=data["dataset"].task, mode=data["mode"]
            )
        )
    fields: list[dict[str, Any]] = [
        {
            "field": name,
            "source": name if name in columns else "",
            "note": note,
            "default": {
                "system": data["system"],
                "task": data["dataset"].task,
                "mode": data["mode"],
            }.get(name, ""),
        }
        for name, note in FIELDS_READ
    ]
    kept = kept_fields(query)
    return render(
        request,
        "console/responses_preview.html",
        {
            "form": form,
            "dataset": data["dataset"],
            "project": data["project"],
            "file": (upload.first.name, size(upload.first.stat().st_size)),
            "columns": columns,
            "rows": rows,
            "fields": fields,
            "systems": systems,
            "result": result,
            "error": error,
            "kept": kept,
            "nav": "runs",
        },
    )
