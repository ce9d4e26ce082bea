"""Benchmarks in the browser: the list of what is imported with each
dataset's next steps, and the upload of a benchmark in any format Concord
reads, in three steps: the files are kept aside (corpus.staging), their
preview shows the first records, the field mapping and what the import would
write (a refusal names the line and field), and only the researcher's
confirmation writes anything. ELITR-Bench's archives are imported by a
worker, with a page that follows its progress."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from console.import_forms import (
    MAPPING_PREFIX,
    BenchmarkImportForm,
    MakeRulerForm,
    mapping_from,
)
from console.views.common import is_htmx
from console.views.staged_uploads import kept_fields, open_upload, to_preview
from core.words import count
from corpus.importers.errors import ImportFailure
from corpus.importers.formats import READERS
from corpus.importers.limits import size, upload_limits
from corpus.importers.preview import FilePreview, preview_benchmark
from corpus.models import Dataset
from corpus.services import import_benchmark
from corpus.staging import StagedUpload, discard, stage
from judging.importing import (
    ElitrImportSummary,
    preview_elitr_bench,
    start_benchmark_import,
    start_ruler_make,
)
from judging.models import BenchmarkImport
from runs.models import ACTIVE
from users.decorators import researcher_required
from users.permissions import signed_in_user
from users.projects import is_site_admin, writable_projects


def require_creator(request: HttpRequest) -> None:
    """Only a researcher or owner (of some project) imports; a viewer is told why."""
    if not (is_site_admin(request.user) or writable_projects(request.user).exists()):
        raise PermissionDenied("Viewers may read benchmarks, not import them.")


@researcher_required
@require_GET
def benchmarks(request: HttpRequest) -> HttpResponse:
    datasets = (
        Dataset.objects.select_related("benchmark")
        .annotate(questions_n=Count("question_texts", distinct=True))
        .order_by("benchmark__name", "version", "language", "split", "task")
    )
    return render(
        request,
        "console/benchmarks.html",
        {
            "datasets": datasets,
            "imported": request.GET.get("imported", ""),
            "nav": "benchmarks",
        },
    )


@researcher_required
def benchmark_upload(request: HttpRequest) -> HttpResponse:
    form = BenchmarkImportForm(request.POST or None)
    if request.method == "POST":
        require_creator(request)
        if form.is_valid():
            files = request.FILES.getlist("upload")
            try:
                upload = stage(
                    ((f.name or "upload", f.chunks()) for f in files),
                    owner=signed_in_user(request).pk,
                )
            except ImportFailure as failure:
                form.add_error("upload", str(failure))
            else:
                return to_preview(request, "console:benchmark_preview", upload)
    return render(
        request,
        "console/benchmark_upload.html",
        {"form": form, "max_bytes": upload_limits().max_bytes, "nav": "benchmarks"},
    )


@researcher_required
def ruler_make(request: HttpRequest) -> HttpResponse:
    """Make RULER at the lengths asked for: a worker makes and imports it,
    and the import's page follows it."""
    form = MakeRulerForm(request.POST or None)
    if request.method == "POST":
        require_creator(request)
        if form.is_valid():
            job = start_ruler_make(form.cleaned_data["order"], user=request.user)
            return redirect("console:benchmark_import", pk=job.pk)
    return render(request, "console/ruler_make.html", {"form": form, "nav": "benchmarks"})


def _named(text: str, upload: StagedUpload) -> str:
    """A message about a staged file names the file, not the folder it waits in."""
    return text.replace(f"{upload.files_folder}/", "").replace(str(upload.files_folder), "upload")


@researcher_required
def benchmark_preview(request: HttpRequest, token: str) -> HttpResponse:
    require_creator(request)
    form = BenchmarkImportForm(request.POST if request.method == "POST" else request.GET)
    upload = open_upload(request, token, form, "console:benchmark_upload")
    if isinstance(upload, HttpResponse):
        return upload
    query = request.POST if request.method == "POST" else request.GET
    columns = mapping_from(query)
    if request.method == "POST":
        return _import(request, form, upload, columns)
    return _preview_page(request, form, upload, columns, query)


def _preview_page(
    request: HttpRequest,
    form: BenchmarkImportForm,
    upload: StagedUpload,
    columns: dict[str, str] | None,
    query: QueryDict,
    error: str = "",
) -> HttpResponse:
    preview: FilePreview | None = None
    elitr: ElitrImportSummary | None = None
    try:
        if form.is_elitr:
            elitr = preview_elitr_bench(upload.files_folder, **form.elitr_options())
        else:
            preview = preview_benchmark(
                form.cleaned_data["format"], upload.first, columns, **form.reader_options()
            )
            error = error or preview.error
    except ImportFailure as failure:
        error = str(failure)
    # the options travel on, as hidden fields of the mapping's and the import's forms
    kept = kept_fields(query, leave_out=MAPPING_PREFIX)
    return render(
        request,
        "console/benchmark_preview.html",
        {
            "form": form,
            "upload": upload,
            "files": [(p.name, size(p.stat().st_size)) for p in upload.files],
            "preview": preview,
            "elitr": elitr,
            "error": _named(error, upload),
            "kept": kept,
            "mapping_prefix": MAPPING_PREFIX,
            "nav": "benchmarks",
        },
    )


def _import(
    request: HttpRequest,
    form: BenchmarkImportForm,
    upload: StagedUpload,
    columns: dict[str, str] | None,
) -> HttpResponse:
    if form.is_elitr:
        options = form.elitr_options()
        job = start_benchmark_import(
            str(upload.files_folder),
            ",".join(options["versions"]),
            ",".join(options["languages"]),
            options["with_responses"],
            user=request.user,
        )
        return redirect("console:benchmark_import", pk=job.pk)
    chosen = form.cleaned_data["format"]
    reader_options = form.reader_options()
    if chosen == "generic":
        reader_options["columns"] = columns or {}
    try:
        bundle = READERS[chosen](upload.first, **reader_options)
        bundle.origin = f"console upload {upload.first.name}"
        counts = import_benchmark(bundle)
    except ImportFailure as failure:
        # stored data is as it was (one transaction); the upload stays for another try
        return _preview_page(request, form, upload, columns, request.POST, error=str(failure))
    discard(upload.token)
    changed = ", ".join(
        f"{name} {c.created} new, {c.updated} changed, {c.unchanged} unchanged"
        for name, c in counts.items()
    )
    messages.info(
        request,
        f"Imported {bundle.name} ({bundle.split}): {count(len(bundle.documents), 'document')}, "
        f"{count(len(bundle.items), 'question')}; {changed}."
        + ("" if any(c.changed for c in counts.values()) else " Nothing changed: it was there."),
    )
    return redirect(reverse("console:benchmarks") + f"?imported={bundle.slug}")


@researcher_required
@require_GET
def benchmark_import(request: HttpRequest, pk: int) -> HttpResponse:
    """An ELITR-Bench import's progress, then its summary and next steps."""
    job = BenchmarkImport.objects.filter(pk=pk).first()
    if job is None or (job.created_by_id != request.user.pk and not is_site_admin(request.user)):
        raise Http404("No such import.")
    context = {"job": job, "active": job.status in ACTIVE, "nav": "benchmarks"}
    template = "console/_import_live.html" if is_htmx(request) else "console/benchmark_import.html"
    return render(request, template, context)
