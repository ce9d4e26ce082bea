"""Study pages: creating a study, its monitor (progress, quality control,
rater plots, arrivals, audit) and the actions on it and its participants,
each through annotator.actions under the study's lock."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from analysis.report.links import report_links, study_selection
from analysis.report.study_reliability import DESCRIPTION as RELIABILITY_DESCRIPTION
from analysis.report.study_reliability import study_rater_reliability
from annotator import exports
from annotator.actions.arrival import OTHER_DEVICE_HOURS, check_allow_other_device
from annotator.actions.items import sample_per_task
from annotator.actions.participants import (
    check_exclude_participant,
    check_refill_quota,
    check_reinstate_participant,
)
from annotator.actions.prolific_sync import is_local_url, prolific_study_url
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.admin import public_base_url
from annotator.completion import completion_url
from annotator.errors import StudyError
from annotator.models import Participant, Study
from annotator.prolific_api import ProlificError, prolific_client_or_none
from annotator.quality import participant_quality
from annotator.selectors import device_access, progress
from annotator.wording import refill_result_summary
from console import monitors
from console.forms import ExclusionForm, NewStudyForm
from console.views.common import is_htmx, scoped_object
from core.words import count
from users.decorators import researcher_required
from users.permissions import signed_in_user


@researcher_required
@require_GET
def study_meetings(request: HttpRequest) -> HttpResponse:
    """The new-study form's meetings field for the dataset just chosen."""
    form = NewStudyForm(dataset_id=request.GET.get("dataset"), user=signed_in_user(request))
    return render(request, "console/_field.html", {"field": form["documents"]})


def save_selection(form: NewStudyForm, study: Study) -> None:
    """The form's systems and meetings, then (items per task chosen) the
    responses drawn of each meeting, before the items are built."""
    form.save_m2m()
    per_task = form.cleaned_data.get("items_per_task")
    if per_task:
        study.responses.set(sample_per_task(study, per_task))


@researcher_required
def study_new(request: HttpRequest) -> HttpResponse:
    dataset_id = request.POST.get("dataset") or request.GET.get("dataset")
    form = NewStudyForm(request.POST or None, dataset_id=dataset_id, user=signed_in_user(request))
    if request.method == "POST" and form.is_valid():
        study = form.save(commit=False)
        try:
            check_save_study(
                study,
                list(form.changed_data),
                actor=signed_in_user(request),
                after_save=lambda saved: save_selection(form, saved),
            )
        except StudyError as error:
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


def bonus_key(request: HttpRequest, study: Study, *, fresh: bool = False) -> str:
    """The bonus form's request key, kept in the session until a bonus is
    recorded with it: two loads of the page (two tabs, a reload) send one key,
    so they make one payment."""
    name = f"bonus-key-{study.pk}"
    if fresh or not request.session.get(name):
        request.session[name] = uuid.uuid4().hex
    return str(request.session[name])


def study_context(request: HttpRequest, study: Study, note: dict | None = None) -> dict:
    now = timezone.now()
    rows = progress(study)
    wanted = sum(r.wanted for r in rows)
    base = public_base_url(request)
    quality = participant_quality(study)
    access = device_access(study, now)
    reliability = study_rater_reliability(study) if quality else {"reason": "no participant yet"}
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
        "other_device_hours": OTHER_DEVICE_HOURS,
        # each row with its participant's device access (annotator.selectors.device_access)
        "quality_rows": [(q, access.get(q.participant_id)) for q in quality],
        "reliability": reliability,
        "reliability_description": RELIABILITY_DESCRIPTION,
        "qc_plots": qc_plots(study, quality),
        "feedback": exports.feedback_rows(study),
        "arrivals": monitors.study_arrivals(study, now),
        "audit": monitors.audit_entries(study),
        "note": note,
        "live": study.status != Study.Status.CLOSED,
        "nav": "home",
    }
    if study.kind == Study.Kind.CROWD:
        context["prolific_url"] = prolific_study_url(study, base)
        context["local_url"] = is_local_url(base)
        context["completion_url"] = completion_url(study.completion_code)
        context["failed_check"] = monitors.failed_check_label(study)
        context["failed_check_url"] = completion_url(study.failed_attention_code)
        if study.prolific_study_id:
            context["prolific"] = monitors.prolific_card(study, bonus_key(request, study))
    else:
        context["gold_url"] = base.rstrip("/") + reverse("annotator:gold_home")
    context["report_links"] = report_links(study_selection(study))
    return context


@researcher_required
@require_GET
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = scoped_object(request, Study.objects.select_related("dataset__benchmark"), pk)
    return render(request, "console/study.html", study_context(request, study))


@researcher_required
@require_GET
def study_live(request: HttpRequest, pk: int) -> HttpResponse:
    study = scoped_object(request, Study.objects.all(), pk)
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
    """Open, pause or close (annotator.actions.status.check_set_study_status, under the
    study lock)."""
    study = scoped_object(request, Study.objects.all(), pk)
    if action not in STUDY_STATES:
        raise Http404("No such action.")
    try:
        study = check_set_study_status(study, STUDY_STATES[action], signed_in_user(request))
    except StudyError as error:
        return answer_study(request, study, str(error), False)
    return answer_study(
        request, study, f"{study.name} is now {study.get_status_display().lower()}.", True
    )


@researcher_required
@require_POST
def study_refill(request: HttpRequest, pk: int) -> HttpResponse:
    """Release stale work and, on Prolific, raise the places (check_refill_quota)."""
    study = scoped_object(request, Study.objects.all(), pk)
    client = prolific_client_or_none() if study.prolific_study_id else None
    try:
        result = check_refill_quota(study, signed_in_user(request), client=client)
    except (StudyError, ProlificError) as error:
        return answer_study(request, study, str(error), False)
    return answer_study(request, study, refill_result_summary(result, study), True)


@researcher_required
@require_POST
def participant_exclude(request: HttpRequest, pk: int) -> HttpResponse:
    """Exclude with a reason (check_exclude_participant, under the study lock)."""
    participant = scoped_object(
        request, Participant.objects.select_related("study"), pk, "study__project"
    )
    form = ExclusionForm(request.POST)
    reason = form.data.get("reason", "")
    try:
        changed = check_exclude_participant(participant, signed_in_user(request), reason)
    except StudyError as error:
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
    participant = scoped_object(
        request, Participant.objects.select_related("study"), pk, "study__project"
    )
    changed = check_reinstate_participant(
        participant, signed_in_user(request), "reinstated from the console"
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
    (check_allow_other_device, under the study lock)."""
    participant = scoped_object(
        request, Participant.objects.select_related("study"), pk, "study__project"
    )
    try:
        check_allow_other_device(participant, signed_in_user(request), "allowed from the console")
    except StudyError as error:
        return answer_study(request, participant.study, str(error), False)
    text = (
        f"{participant.rater_id} may now continue once from another browser, within "
        f"{OTHER_DEVICE_HOURS} hours."
    )
    return answer_study(request, participant.study, text, True)


@researcher_required
@require_GET
def participant_plot(request: HttpRequest, pk: int) -> HttpResponse:
    """A participant's ratings against gold and their spread, as SVG: drawn
    once per state of their ratings (analysis.report.caching's cache), then read."""
    from analysis.figures import drawing
    from analysis.report.caching import cache, code_version

    participant = scoped_object(
        request, Participant.objects.select_related("study"), pk, "study__project"
    )
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
