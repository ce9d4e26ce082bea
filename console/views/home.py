"""The console's entry points: `/` sends each role to its start, and the
console's home lists studies, recent runs, workers and report links."""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from adaptive.models import AdaptiveStudy, Draw
from analysis.report.links import report_links, selection_words, study_selection
from analysis.report.query import reader_project
from analysis.report.scope import default_selection
from analysis.report.selection import Selection, SelectionError
from annotator.models import Participant, Study
from console.views.common import RUN_MODELS, mine
from corpus.models import Benchmark, Dataset, Document
from corpus.services import SYNTHETIC_ELITR_BENCH
from generation.models import GenerationRun
from judging.models import JudgingRun
from runs.models import ACTIVE
from runs.workers import worker_states
from users.decorators import researcher_required


def start_page(request: HttpRequest) -> HttpResponse:
    """`/`: the console for researchers, the gold studies for gold annotators."""
    if not request.user.is_authenticated:
        return redirect_to_login("/")
    if request.user.is_researcher:
        return redirect("console:home")
    if request.user.is_gold_annotator:
        return redirect("annotator:gold_home")
    raise PermissionDenied("Your account has no role yet: an admin grants one.")


@researcher_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    # an adaptive study's batches are listed under it (its page), not one row each
    batch_studies = Draw.objects.values("study")
    adaptive_studies = (
        mine(request, AdaptiveStudy.objects.all())
        .annotate(batches_n=Count("draws__study", distinct=True))
        .order_by("-created_at")[:8]
    )
    studies = (
        mine(request, Study.objects.exclude(pk__in=batch_studies))
        .annotate(
            participants_n=Count("participants", distinct=True),
            completed_n=Count(
                "participants",
                filter=Q(
                    participants__assignment__status="completed",
                    participants__status=Participant.Status.ACCEPTED,
                ),
                distinct=True,
            ),
            tasks_n=Count("tasks", distinct=True),
        )
        .order_by("-created_at")
    )
    judging = (
        mine(request, JudgingRun.objects.all())
        .select_related("evaluator", "dataset__benchmark")
        .order_by("-created_at")[:8]
    )
    generation = (
        mine(request, GenerationRun.objects.filter(origin=GenerationRun.Origin.GENERATED))
        .select_related("system", "dataset__benchmark")
        .order_by("-created_at")[:8]
    )
    active = sum(
        mine(request, model._default_manager.filter(status__in=ACTIVE)).count()
        for model in RUN_MODELS.values()
    )
    workers = worker_states()
    reports = []
    try:
        # a member of several projects: the one holding the most responses
        project = reader_project(request.user)
    except SelectionError:  # a member of no project
        project = None
        default = Selection()
    else:
        # chosen among the reader's project's data only: another project's systems and
        # settings are never named here
        default = default_selection(project)
    if default != Selection(project=project):
        # the synthetic meeting's scores (the human ones too) are invented, and said to be
        invented = default.benchmark == SYNTHETIC_ELITR_BENCH["slug"]
        reports.append(
            {
                "title": "Where the human scores are: "
                + selection_words(default)
                + (
                    " (the synthetic demo meeting: invented scores, the human ones included)"
                    if invented
                    else ""
                ),
                "links": report_links(default),
            }
        )
    for study in studies.select_related("dataset__benchmark", "project")[:5]:
        reports.append(
            {"title": f"Study: {study.name}", "links": report_links(study_selection(study))}
        )
    # the other benchmarks' results, in their authors' shape (analysis.report.benchmark_report)
    benchmark_reports = [
        {
            "title": f"{name} {split}: task scores",
            "url": reverse("analysis-benchmark-report", args=[slug]) + f"?split={split}",
        }
        for slug, name, split in Dataset.objects.exclude(
            benchmark__format=Benchmark.Format.ELITR_BENCH
        )
        .values_list("benchmark__slug", "benchmark__name", "split")
        .distinct()
        .order_by("benchmark__name", "split")
    ]
    context = {
        "benchmark_reports": benchmark_reports,
        "studies": studies,
        "adaptive_studies": adaptive_studies,
        "judging_runs": judging,
        "generation_runs": generation,
        "active_runs": active,
        "workers": workers,
        "workers_up": sum(w.state == "up" for w in workers),
        "reports": reports,
        "documents": Document.objects.count(),
        "nav": "home",
    }
    return render(request, "console/home.html", context)
