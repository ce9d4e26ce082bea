"""Run pages: the list, one run's monitor and its actions (cancel, resume,
retry failed), starting a judging or generation run, and the workers that
run them with the runs queued for each queue."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from analysis.report.links import generation_run_selection, judging_run_selection, report_links
from console import monitors
from console.forms import NewGenerationRunForm, NewJudgingRunForm
from console.views.common import RUN_MODELS, is_htmx, mine, scoped_object
from core.words import count
from corpus.ruler.constants import ruler_task
from generation.models import GenerationRun
from generation.prompts_leval import authors_task
from generation.runner import (
    GenerationError,
    cancel_generation_run,
    resume_generation_run,
    start_generation_run,
)
from judging.judging_runs import (
    JudgingError,
    cancel_run,
    resume_run,
    retry_failed,
    start_judging_run,
)
from judging.leaderboard_exports import (
    BABILONG,
    LEVAL,
    LONGBENCH_V2,
    LOOGLE,
    RULER,
    leaderboard_of,
)
from judging.models import JudgingRun
from runs.lifecycle import Outcome
from runs.workers import WorkerState, inspect_workers, worker_states
from users.decorators import researcher_required
from users.permissions import signed_in_user


@researcher_required
@require_GET
def runs(request: HttpRequest) -> HttpResponse:
    show_imported = request.GET.get("imported") == "1"
    generation = (
        mine(request, GenerationRun.objects.all())
        .select_related("system", "dataset__benchmark")
        .order_by("-created_at")
    )
    if not show_imported:
        generation = generation.filter(origin=GenerationRun.Origin.GENERATED)
    context = {
        "judging_runs": mine(request, JudgingRun.objects.all())
        .select_related("evaluator", "dataset__benchmark")
        .order_by("-created_at"),
        "generation_runs": generation,
        "show_imported": show_imported,
        "nav": "runs",
    }
    return render(request, "console/runs.html", context)


def get_run(request: HttpRequest, kind: str, pk: int) -> JudgingRun | GenerationRun:
    """The run of this kind ("judging" or "generation"), with what its pages
    show, or the 404 page."""
    model = RUN_MODELS.get(kind)
    if model is None:
        raise Http404("No such kind of run.")
    related = (
        ("evaluator", "dataset__benchmark")
        if kind == "judging"
        else ("system", "dataset__benchmark")
    )
    return scoped_object(request, model._default_manager.select_related(*related), pk)


def run_context(
    run: JudgingRun | GenerationRun, outcome: Outcome | None = None
) -> dict[str, object]:
    monitor = monitors.run_monitor(run)
    context: dict[str, object] = {"m": monitor, "run": run, "outcome": outcome, "nav": "runs"}
    if isinstance(run, JudgingRun):  # the monitor's kind "judging"
        context["report_links"] = report_links(judging_run_selection(run))
        context["needs_human_url"] = (
            reverse("admin:judging_judgeitem_changelist") + f"?run__id__exact={run.pk}"
            "&status__exact=needs_human"
        )
    else:
        context["report_links"] = report_links(generation_run_selection(run))
        context["leaderboard_file"] = leaderboard_file_label(run)
    return context


def leaderboard_file_label(run: GenerationRun) -> str:
    """The run's leaderboard download, in words ("" where its benchmark has none)."""
    shape = leaderboard_of(run)
    if shape == LEVAL:
        return f"L-Eval predictions ({authors_task(run.dataset.task)}.pred.jsonl)"
    if shape == LONGBENCH_V2:
        return "LongBench v2 results (JSON Lines, as pred.py writes them)"
    if shape == RULER:
        return (
            f"RULER predictions ({ruler_task(run.dataset.task)}.jsonl, as call_api.py writes them)"
        )
    if shape == BABILONG:
        return "BABILong predictions (CSV, as run_model_on_babilong.py writes them)"
    if shape == LOOGLE:
        return f"LooGLE predictions ({run.dataset.task}_<model>.jsonl, as its scripts write them)"
    return "ZeroSCROLLS submission (CSV, all ten tasks)" if shape else ""


@researcher_required
@require_GET
def run_detail(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    return render(request, "console/run.html", run_context(get_run(request, kind, pk)))


@researcher_required
@require_GET
def run_live(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    return render(request, "console/_run_live.html", run_context(get_run(request, kind, pk)))


# The actions on a run, by the kind and action in its URL.
JUDGING_ACTIONS: dict[str, Callable[[JudgingRun], Outcome]] = {
    "cancel": cancel_run,
    "resume": resume_run,
    "retry-failed": retry_failed,
}
GENERATION_ACTIONS: dict[str, Callable[[GenerationRun], Outcome]] = {
    "cancel": cancel_generation_run,
    "resume": resume_generation_run,
}
RUN_ACTIONS = {"judging": set(JUDGING_ACTIONS), "generation": set(GENERATION_ACTIONS)}


@researcher_required
@require_POST
def run_action(request: HttpRequest, kind: str, pk: int, action: str) -> HttpResponse:
    """Cancel, resume or retry failed: the same services as the admin's
    actions and the API's (each takes the run's row lock)."""
    if action not in RUN_ACTIONS.get(kind, set()):
        raise Http404("No such action.")
    run = get_run(request, kind, pk)
    if isinstance(run, JudgingRun):
        outcome = JUDGING_ACTIONS[action](run)
    else:
        outcome = GENERATION_ACTIONS[action](run)
    run = get_run(request, kind, pk)
    if is_htmx(request):
        return render(request, "console/_run_live.html", run_context(run, outcome))
    level = messages.INFO if outcome.changed else messages.WARNING
    messages.add_message(request, level, outcome.detail)
    return redirect("console:run", kind=kind, pk=pk)


def chosen_dataset(request: HttpRequest) -> dict[str, str]:
    """The dataset a link chose (the benchmarks page's next steps: ?dataset=<pk>)."""
    chosen = request.GET.get("dataset", "")
    return {"dataset": chosen} if chosen.isdigit() else {}


@researcher_required
def judging_run_new(request: HttpRequest) -> HttpResponse:
    form = NewJudgingRunForm(
        request.POST or None, user=signed_in_user(request), initial=chosen_dataset(request)
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = start_judging_run(
                data["evaluator"],
                data["dataset"],
                data["mode"],
                list(data.get("systems") or []),
                request.user,
                budget=data.get("budget"),
                refresh=data.get("refresh", False),
                use_batch=data.get("use_batch", False),
                confirm_over_budget=data.get("confirm_over_budget", False),
                project=data["project"],
            )
        except JudgingError as error:
            form.add_error(None, str(error))
        else:
            if run.status == JudgingRun.Status.FAILED:
                messages.error(request, f"Run {run.pk} not started: {run.message}")
            else:
                messages.info(request, f"Judging run {run.pk} queued: {count(run.total, 'item')}.")
            return redirect("console:run", kind="judging", pk=run.pk)
    return render(
        request,
        "console/form.html",
        {"form": form, "title": "Start a judging run", "submit": "Start the run", "nav": "runs"},
    )


@researcher_required
def generation_run_new(request: HttpRequest) -> HttpResponse:
    form = NewGenerationRunForm(
        request.POST or None, user=signed_in_user(request), initial=chosen_dataset(request)
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = start_generation_run(
                data["system"], data["dataset"], data["mode"], data["seed"], data["project"]
            )
        except GenerationError as error:
            form.add_error(None, str(error))
        else:
            if run.status == GenerationRun.Status.FAILED:
                messages.error(request, f"Run {run.pk} not started: {run.message}")
            else:
                messages.info(request, f"Generation run {run.pk} queued on '{run.queue()}'.")
            return redirect("console:run", kind="generation", pk=run.pk)
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "Start a generation run",
            "submit": "Start the run",
            "intro": "Systems are added in the admin (Generation > Systems), with their "
            "model and decoding configuration.",
            "nav": "runs",
        },
    )


@researcher_required
@require_GET
def workers(request: HttpRequest) -> HttpResponse:
    template = "console/_workers_live.html" if is_htmx(request) else "console/workers.html"
    queued = {
        queue: sum(
            model._default_manager.filter(status="queued", queue_name=queue).count()
            for model in RUN_MODELS.values()
        )
        for queue in ("default", "llm", "gpu")
    }
    workers = readable_running(request, worker_states())
    return render(request, template, {"workers": workers, "queued": queued, "nav": "workers"})


def readable_running(request: HttpRequest, states: list[WorkerState]) -> list[WorkerState]:
    """The workers as this reader may see them: a worker busy with another
    project's run says so, without the run's number or progress (the workers
    are shared; the runs are not)."""
    from django.apps import apps

    held: dict[str, set[int]] = {}
    for state in states:
        for entry in state.row.running or []:
            held.setdefault(entry.get("model", ""), set()).add(entry.get("id"))
    readable: dict[str, set[int]] = {}
    for label, ids in held.items():
        try:
            model = apps.get_model(label)
        except (LookupError, ValueError):
            continue
        readable[label] = set(
            mine(request, model._default_manager.filter(pk__in=ids)).values_list("pk", flat=True)
        )
    for state in states:
        state.row.running = [
            entry
            if entry.get("id") in readable.get(entry.get("model", ""), set())
            else {"hidden": True}
            for entry in state.row.running or []
        ]
    return states


@researcher_required
@require_GET
def workers_inspect(request: HttpRequest) -> HttpResponse:
    return render(request, "console/_workers_inspect.html", {"inspect": inspect_workers()})
