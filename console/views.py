"""The researcher console: pages that read, and thin POST views that call the
same services as the admin and the API (judging.runs, generation.runner,
annotator.services) and answer with the new state.

A POST from htmx (the `HX-Request` header) answers the fragment it replaces,
with what the action did; a plain POST (no JavaScript) redirects back to the
page with the same words as a message.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from analysis.links import (
    generation_run_selection,
    judging_run_selection,
    report_links,
    selection_words,
    study_selection,
)
from analysis.scope import default_selection
from analysis.selection import Selection
from annotator import exports, services
from annotator.admin import public_base_url
from annotator.models import Participant, Study
from annotator.prolific import ProlificError, prolific_client_or_none
from annotator.quality import participant_quality
from annotator.views import PROLIFIC_COMPLETE_URL, transcript_turns
from annotator.wording import refill_result_summary
from config.not_found import friendly_not_found
from config.words import count
from console import monitors
from console.forms import ExclusionForm, NewGenerationRunForm, NewJudgingRunForm, NewStudyForm
from corpus.models import Document, Question
from corpus.passages import PassageFinder
from corpus.services import SYNTHETIC_ELITR_BENCH
from generation.models import GenerationRun
from generation.runner import (
    GenerationError,
    cancel_generation_run,
    resume_generation_run,
    start_generation_run,
)
from judging.models import JudgingRun
from judging.runs import (
    JudgingError,
    cancel_run,
    ensure_metric_evaluators,
    resume_run,
    retry_failed,
    start_judging_run,
)
from runs.lifecycle import Outcome
from runs.models import ACTIVE
from runs.workers import inspect_workers, worker_states

RUN_MODELS: dict[str, type[JudgingRun] | type[GenerationRun]] = {
    "judging": JudgingRun,
    "generation": GenerationRun,
}


def researcher_required(view):
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
    return request.headers.get("HX-Request") == "true"


def start_page(request: HttpRequest) -> HttpResponse:
    """`/`: the console for researchers, the gold studies for gold annotators."""
    if not request.user.is_authenticated:
        return redirect_to_login("/")
    if request.user.is_researcher:
        return redirect("console:home")
    if request.user.is_gold_annotator:
        return redirect("annotator:gold_home")
    raise PermissionDenied("Your account has no role yet: an admin grants one.")


# --- home ----------------------------------------------------------------------------------


@researcher_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    studies = Study.objects.annotate(
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
    ).order_by("-created_at")
    judging = JudgingRun.objects.select_related("evaluator", "dataset__benchmark").order_by(
        "-created_at"
    )[:8]
    generation = (
        GenerationRun.objects.filter(origin=GenerationRun.Origin.GENERATED)
        .select_related("system", "dataset__benchmark")
        .order_by("-created_at")[:8]
    )
    active = sum(
        model._default_manager.filter(status__in=ACTIVE).count() for model in RUN_MODELS.values()
    )
    workers = worker_states()
    reports = []
    default = default_selection()
    if default != Selection():
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
    for study in studies.select_related("dataset__benchmark")[:5]:
        reports.append(
            {"title": f"Study: {study.name}", "links": report_links(study_selection(study))}
        )
    context = {
        "studies": studies,
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


# --- runs ----------------------------------------------------------------------------------


@researcher_required
@require_GET
def runs(request: HttpRequest) -> HttpResponse:
    show_imported = request.GET.get("imported") == "1"
    generation = GenerationRun.objects.select_related("system", "dataset__benchmark").order_by(
        "-created_at"
    )
    if not show_imported:
        generation = generation.filter(origin=GenerationRun.Origin.GENERATED)
    context = {
        "judging_runs": JudgingRun.objects.select_related(
            "evaluator", "dataset__benchmark"
        ).order_by("-created_at"),
        "generation_runs": generation,
        "show_imported": show_imported,
        "nav": "runs",
    }
    return render(request, "console/runs.html", context)


def get_run(kind: str, pk: int):
    model = RUN_MODELS.get(kind)
    if model is None:
        raise Http404("No such kind of run.")
    related = (
        ("evaluator", "dataset__benchmark")
        if kind == "judging"
        else ("system", "dataset__benchmark")
    )
    return get_object_or_404(model._default_manager.select_related(*related), pk=pk)


def run_context(run, outcome: Outcome | None = None) -> dict:
    monitor = monitors.run_monitor(run)
    context = {"m": monitor, "run": run, "outcome": outcome, "nav": "runs"}
    if monitor.kind == "judging":
        context["report_links"] = report_links(judging_run_selection(run))
        context["needs_human_url"] = (
            reverse("admin:judging_judgeitem_changelist") + f"?run__id__exact={run.pk}"
            "&status__exact=needs_human"
        )
    else:
        context["report_links"] = report_links(generation_run_selection(run))
    return context


@researcher_required
@require_GET
def run_detail(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    return render(request, "console/run.html", run_context(get_run(kind, pk)))


@researcher_required
@require_GET
def run_live(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    return render(request, "console/_run_live.html", run_context(get_run(kind, pk)))


RUN_ACTIONS: dict[tuple[str, str], Callable[[Any], Outcome]] = {
    ("judging", "cancel"): cancel_run,
    ("judging", "resume"): resume_run,
    ("judging", "retry-failed"): retry_failed,
    ("generation", "cancel"): cancel_generation_run,
    ("generation", "resume"): resume_generation_run,
}


@researcher_required
@require_POST
def run_action(request: HttpRequest, kind: str, pk: int, action: str) -> HttpResponse:
    """Cancel, resume or retry failed: the same services as the admin's
    actions and the API's (each takes the run's row lock)."""
    service = RUN_ACTIONS.get((kind, action))
    if service is None:
        raise Http404("No such action.")
    outcome = service(get_run(kind, pk))
    run = get_run(kind, pk)
    if is_htmx(request):
        return render(request, "console/_run_live.html", run_context(run, outcome))
    level = messages.INFO if outcome.changed else messages.WARNING
    messages.add_message(request, level, outcome.detail)
    return redirect("console:run", kind=kind, pk=pk)


@researcher_required
def judging_run_new(request: HttpRequest) -> HttpResponse:
    ensure_metric_evaluators()  # so that the metrics are there to choose
    form = NewJudgingRunForm(request.POST or None)
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
    form = NewGenerationRunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = start_generation_run(data["system"], data["dataset"], data["mode"], data["seed"])
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


# --- studies -------------------------------------------------------------------------------


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    dataset_id = request.POST.get("dataset") or request.GET.get("dataset")
    form = NewStudyForm(request.POST or None, dataset_id=dataset_id)
    if request.method == "POST" and form.is_valid():
        study = form.save(commit=False)
        try:
            services.save_study(
                study,
                list(form.changed_data),
                actor=request.user,
                after_save=lambda _: form.save_m2m(),
            )
        except services.StudyError as error:
            form.add_error(None, str(error))
        else:
            messages.info(
                request,
                f"Study created: {study}, {count(study.tasks.count(), 'task')}, "
                f"{count(study.items.count(), 'item')}. It is closed: open it when it is ready.",
            )
            return redirect("console:study", pk=study.pk)
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "New study",
            "submit": "Create the study",
            "intro": "Texts (guidelines, rubric), scale labels and the qualification round "
            "keep the paper's defaults; change them in the admin before the first arrival.",
            "nav": "home",
        },
    )


def completion_url(code: str) -> str:
    """Where a participant with `code` is sent back to on Prolific."""
    return f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"


def qc_plots(study: Study, quality: list) -> list[dict]:
    """A rubric study's participants who rated, each with the URL of their plot
    against gold; the URL carries the state it is drawn from, so the browser
    keeps the image until their ratings change (the live part polls every 5 s)."""
    if study.rating_type != Study.RatingType.RUBRIC:
        return []
    return [
        {
            "row": row,
            "url": reverse("console:participant_plot", args=[row.participant_id])
            + "?v="
            + monitors.rater_plot_state(row, study.scale_max),
        }
        for row in quality
        if row.scores
    ]


def study_context(request: HttpRequest, study: Study, note: dict | None = None) -> dict:
    now = timezone.now()
    quality = participant_quality(study)
    rows = services.progress(study)
    wanted = sum(r.wanted for r in rows)
    base = public_base_url(request)
    quality = participant_quality(study)
    access = services.device_access(study, now)
    context = {
        "study": study,
        "rows": [
            {
                "row": r,
                "done_percent": 100 * min(r.completed, r.wanted) / r.wanted if r.wanted else 0,
                "active_percent": 100 * min(r.active, max(r.wanted - r.completed, 0)) / r.wanted
                if r.wanted
                else 0,
            }
            for r in rows
        ],
        "totals": {
            "completed": sum(r.completed for r in rows),
            "active": sum(r.active for r in rows),
            "wanted": wanted,
            "excluded": sum(r.excluded for r in rows),
            "open": sum(r.open_places for r in rows),
        },
        "quality": quality,
        "other_device_hours": services.OTHER_DEVICE_HOURS,
        # each row with its participant's device access (services.device_access)
        "quality_rows": [(q, access.get(q.participant_id)) for q in quality],
        "qc_plots": qc_plots(study, quality),
        "feedback": exports.feedback_rows(study),
        "arrivals": monitors.study_arrivals(study, now),
        "audit": monitors.audit_entries(study),
        "note": note,
        "live": study.status != Study.Status.CLOSED,
        "nav": "home",
    }
    if study.kind == Study.Kind.CROWD:
        context["prolific_url"] = services.prolific_study_url(study, base)
        context["local_url"] = services.is_local_url(base)
        context["completion_url"] = completion_url(study.completion_code)
        context["failed_check"] = monitors.failed_check_label(study)
        context["failed_check_url"] = completion_url(study.failed_attention_code)
    else:
        context["gold_url"] = base.rstrip("/") + reverse("annotator:gold_home")
    context["report_links"] = report_links(study_selection(study))
    return context


@researcher_required
@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("dataset__benchmark"), pk=pk)
    return render(request, "console/study.html", study_context(request, study))


@researcher_required
@require_GET
def study_live(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study, pk=pk)
    return render(request, "console/_study_live.html", study_context(request, study))


def answer_study(request: HttpRequest, study: Study, text: str, ok: bool) -> HttpResponse:
    study.refresh_from_db()
    if is_htmx(request):
        context = study_context(request, study, {"text": text, "ok": ok})
        return render(request, "console/_study_live.html", context)
    messages.add_message(request, messages.INFO if ok else messages.ERROR, text)
    return redirect("console:study", pk=study.pk)


STUDY_STATES = {
    "open": Study.Status.OPEN,
    "pause": Study.Status.PAUSED,
    "close": Study.Status.CLOSED,
}


@researcher_required
@require_POST
def study_status(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """Open, pause or close (annotator.services.set_study_status, under the study lock)."""
    study = get_object_or_404(Study, pk=pk)
    if action not in STUDY_STATES:
        raise Http404("No such action.")
    try:
        study = services.set_study_status(study, STUDY_STATES[action], request.user)
    except services.StudyError as error:
        return answer_study(request, study, str(error), False)
    return answer_study(
        request, study, f"{study.name} is now {study.get_status_display().lower()}.", True
    )


@researcher_required
@require_POST
def study_refill(request: HttpRequest, pk: int) -> HttpResponse:
    """Release stale work and, on Prolific, raise the places (services.refill_quota)."""
    study = get_object_or_404(Study, pk=pk)
    client = prolific_client_or_none() if study.prolific_study_id else None
    try:
        result = services.refill_quota(study, request.user, client=client)
    except (services.StudyError, ProlificError) as error:
        return answer_study(request, study, str(error), False)
    return answer_study(request, study, refill_result_summary(result, study), True)


@researcher_required
@require_POST
def participant_exclude(request: HttpRequest, pk: int) -> HttpResponse:
    """Exclude with a reason (services.exclude_participant, under the study lock)."""
    participant = get_object_or_404(Participant.objects.select_related("study"), pk=pk)
    form = ExclusionForm(request.POST)
    reason = form.data.get("reason", "")
    try:
        changed = services.exclude_participant(participant, request.user, reason)
    except services.StudyError as error:
        return answer_study(request, participant.study, str(error), False)
    text = (
        f"Excluded {participant.rater_id}: their ratings left the analysis and their place "
        "is open again."
        if changed
        else f"{participant.rater_id} was already excluded."
    )
    return answer_study(request, participant.study, text, True)


@researcher_required
@require_POST
def participant_reinstate(request: HttpRequest, pk: int) -> HttpResponse:
    participant = get_object_or_404(Participant.objects.select_related("study"), pk=pk)
    changed = services.reinstate_participant(
        participant, request.user, "reinstated from the console"
    )
    text = (
        f"Reinstated {participant.rater_id}: their ratings count again."
        if changed
        else f"{participant.rater_id} was not excluded."
    )
    return answer_study(request, participant.study, text, True)


@researcher_required
@require_POST
def participant_allow_other_device(request: HttpRequest, pk: int) -> HttpResponse:
    """Let a crowd worker continue once from another browser
    (services.allow_other_device, under the study lock)."""
    participant = get_object_or_404(Participant.objects.select_related("study"), pk=pk)
    try:
        services.allow_other_device(participant, request.user, "allowed from the console")
    except services.StudyError as error:
        return answer_study(request, participant.study, str(error), False)
    text = (
        f"{participant.rater_id} may now continue once from another browser, within "
        f"{services.OTHER_DEVICE_HOURS} hours."
    )
    return answer_study(request, participant.study, text, True)


@researcher_required
@require_GET
def participant_plot(request: HttpRequest, pk: int) -> HttpResponse:
    """A participant's ratings against gold and their spread, as SVG: drawn
    once per state of their ratings (analysis.caching's cache), then read."""
    from analysis import drawing
    from analysis.caching import cache, code_version

    participant = get_object_or_404(Participant.objects.select_related("study"), pk=pk)
    study = participant.study
    if study.rating_type != Study.RatingType.RUBRIC:
        raise Http404("Pairwise studies have no scores to plot against gold.")
    (row,) = participant_quality(study, only=participant.pk)
    state = monitors.rater_plot_state(row, study.scale_max)
    key = f"rater-figure:{participant.pk}:{state}:{code_version()[:16]}"
    svg = cache().get(key)
    if svg is None:
        svg = drawing.draw(monitors.rater_plot_figure(row, study.scale_max), "svg")
        cache().set(key, svg)
    response = HttpResponse(svg, content_type=drawing.FORMATS["svg"])
    # the page asks with the state in the URL: that URL's image never changes
    fresh = request.GET.get("v") == state
    response["Cache-Control"] = "private, max-age=86400" if fresh else "no-store"
    return response


# --- workers -------------------------------------------------------------------------------


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
    return render(
        request, template, {"workers": worker_states(), "queued": queued, "nav": "workers"}
    )


@researcher_required
@require_GET
def workers_inspect(request: HttpRequest) -> HttpResponse:
    return render(request, "console/_workers_inspect.html", {"inspect": inspect_workers()})


# --- documents ------------------------------------------------------------------------------


@researcher_required
@require_GET
def documents(request: HttpRequest) -> HttpResponse:
    docs = (
        Document.objects.defer("text")
        .select_related("benchmark")
        .annotate(questions_n=Count("questions"))
        .order_by("benchmark__name", "split", "external_id")
    )
    return render(request, "console/documents.html", {"documents": docs, "nav": "documents"})


POSITION_LABELS = dict(Question.AnswerPosition.choices)
THIRD_NAMES = {"B": "Beginning", "M": "Middle third", "E": "Final third"}


@researcher_required
@require_GET
def document_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The transcript as speaker turns, searchable, with the questions beside
    it, each linked to where its answer lies (its third, and the passage that
    words the reference answer when there is one)."""
    document = get_object_or_404(Document.objects.select_related("benchmark"), pk=pk)
    turns = transcript_turns(document.text)
    finder = PassageFinder([f"{t['speaker']} {t['text']}" for t in turns])
    speakers: dict[str, str] = {}
    for turn in turns:
        speaker = turn["speaker"]
        if speaker and speaker not in speakers:
            speakers[speaker] = f"s{len(speakers) % 5}"
        turn["speaker_class"] = speakers.get(speaker, "")
        turn["third"] = ""
    for code, start in zip("BME", finder.starts, strict=True):
        if turns:
            turns[start]["third"] = THIRD_NAMES[code]
    questions = []
    for question in (
        Question.objects.filter(document=document)
        .prefetch_related("texts__dataset")
        .order_by("order")
    ):
        texts = sorted(
            question.texts.all(),
            key=lambda t: (t.dataset.language != "en", t.dataset.version != "qa", t.dataset_id),
        )
        if not texts:
            continue
        main = texts[0]
        position = question.answer_position
        passage = None
        for text in texts:
            if text.dataset.language == main.dataset.language:
                passage = finder.find(text.reference_answer, position)
                if passage is not None:
                    break
        questions.append(
            {
                "question": question,
                "main": main,
                "others": [t for t in texts[1:] if t.text != main.text],
                "position": position,
                "position_label": POSITION_LABELS.get(position, ""),
                "third_turn": finder.starts["BME".index(position)]
                if position in "BME" and position
                else None,
                "passage": passage,
            }
        )
    context = {
        "document": document,
        "transcript": turns,
        "anchors": True,
        "questions": questions,
        "speakers": len(speakers),
        "nav": "documents",
    }
    return render(request, "console/document.html", context)
