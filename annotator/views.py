"""The rating pages: Prolific arrival, consent, one item per page, completion;
and the gold annotators' entry. Thin: every change goes through annotator.actions."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotator import defaults, gold
from annotator.actions.arrival import (
    check_admit_return,
    check_start_assignment,
    validate_can_arrive,
    validate_prolific_id,
)
from annotator.actions.rating import check_complete_assignment, check_rate_item, do_note_item_served
from annotator.completion import completion_url
from annotator.errors import SESSION_REFUSED_TEXT, SessionRefused
from annotator.models import Assignment, Item, Participant, Rating, Study
from annotator.selectors import find_arrival, has_room, may_continue, missing_positions
from core.errors import ConcordError, Conflict
from corpus.models import Document
from users.models import User
from users.projects import writable_projects

View = Callable[..., HttpResponse]

BROWSER_MARK = "annotator_browser"  # what keeps a crowd worker's session (and its cookie) alive
SPEAKER_TURN = re.compile(r"^\s*[\(\[]([A-Z]+[0-9]*)[\)\]]\s*(.*)$")


def message(request: HttpRequest, title: str, text: str, status: int = 200) -> HttpResponse:
    return render(request, "annotator/message.html", {"title": title, "text": text}, status=status)


def wants_json(request: HttpRequest) -> bool:
    """The rating page's script saves with fetch and asks for JSON."""
    return "application/json" in request.headers.get("Accept", "")


def shows_refusals(title: str) -> Callable[[View], View]:
    """A ConcordError raised in the view (a service refusing: a closed study, a
    bad score) answers the participant with its message and its own status: on
    the message page under `title`, or as {"error", "code"} to the script."""

    def decorate(view: View) -> View:
        @wraps(view)
        def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                return view(request, *args, **kwargs)
            except ConcordError as error:
                if wants_json(request):
                    return JsonResponse(
                        {"error": error.message, "code": error.code}, status=error.http_status
                    )
                return message(request, title, error.message, status=error.http_status)

        return answer

    return decorate


def scale_points(study: Study) -> list[dict]:
    """The rating buttons: 1..scale_max, with their labels when the study has them."""
    labels = list(study.scale_labels or [])
    return [
        {"value": n, "label": labels[n - 1] if labels else ""}
        for n in range(1, study.scale_max + 1)
    ]


def rubric_context(study: Study) -> dict:
    labels = list(study.scale_labels or [])
    return {
        "study": study,
        "rubric_title": defaults.RUBRIC_TITLE,
        "rubric": study.rubric,
        "scale_max": study.scale_max,
        "scale_low": labels[0] if labels else defaults.SCALE_LOW,
        "scale_high": labels[-1] if labels else defaults.SCALE_HIGH,
    }


def browser_key(request: HttpRequest) -> str:
    """This browser, as `check_admit_return` knows it: the SHA-256 of its
    session key. The session (a cookie, no personal data) starts on the consent
    page, so that a second click on Start comes from the same browser."""
    session = request.session
    if not session.get(BROWSER_MARK):
        session[BROWSER_MARK] = True
    if session.session_key is None:
        session.save()  # creates the key (and the cookie, with the response)
    key = session.session_key or ""
    return hashlib.sha256(key.encode()).hexdigest() if key else ""


def refused_page(request: HttpRequest) -> HttpResponse:
    return message(request, "Not this browser", SESSION_REFUSED_TEXT, status=403)


@require_http_methods(["GET", "POST"])
@shows_refusals("Cannot start")
def study_entry(request: HttpRequest, public_id: uuid.UUID) -> HttpResponse:
    """Arrival from a Prolific study link. Nothing about the participant is stored
    before consent. A PROLIFIC_PID that already has work here is led to it only
    from a browser or a Prolific session that may take it up (admit_return)."""
    study = Study.objects.filter(public_id=public_id, kind=Study.Kind.CROWD).first()
    if study is None:
        raise Http404("No such study.")
    params = request.POST if request.method == "POST" else request.GET
    pid = validate_prolific_id(params.get("PROLIFIC_PID", ""))
    session_id = params.get("SESSION_ID", "")[:64]
    browser = browser_key(request)
    arrival = find_arrival(study, pid=pid)
    if arrival.state == "excluded":
        return message(request, "Thank you", "You can no longer take part in this study.")
    if arrival.assignment is not None and not check_admit_return(
        arrival.assignment, session_id, browser
    ):
        return refused_page(request)
    returning = arrival.state in ("resume", "completed", "unqualified")
    if (
        returning
        and arrival.assignment is not None
        and (arrival.state != "resume" or may_continue(study))
    ):
        return redirect("annotator:resume", token=arrival.assignment.token)
    validate_can_arrive(study)
    prolific = {
        "PROLIFIC_PID": pid,
        "STUDY_ID": params.get("STUDY_ID", "")[:64],
        "SESSION_ID": session_id,
    }
    if request.method == "POST":
        if params.get("consent") != "yes":
            return message(request, "Consent needed", "Please tick the box to agree first.", 400)
        try:
            assignment = check_start_assignment(
                study,
                pid=pid,
                prolific_study_id=prolific["STUDY_ID"],
                session_id=prolific["SESSION_ID"],
                browser=browser,
            )
        except SessionRefused as refusal:
            if refusal.assignment_id is None:
                raise
            # another browser started with this PID a moment ago: audited as above
            taken = Assignment.objects.get(pk=refusal.assignment_id)
            if not check_admit_return(taken, session_id, browser):
                return refused_page(request)
            assignment = taken
        return redirect("annotator:resume", token=assignment.token)
    if arrival.state == "new" and not has_room(study):
        return message(
            request,
            "Study full",
            "All places in this study are taken. Please return it on Prolific; thank you.",
        )
    context = rubric_context(study) | {
        "example": defaults.EXAMPLE,
        "prolific": prolific,
        "action": request.path,
        "returning": arrival.state != "new",
    }
    return render(request, "annotator/consent.html", context)


def load_assignment(request: HttpRequest, token: str) -> Assignment:
    """The assignment behind a token, or 404. Gold work also needs its owner's login."""
    assignment = (
        # Not the task's document: a transcript is tens of kilobytes, read only when shown.
        Assignment.objects.select_related("task__study", "participant").filter(token=token).first()
    )
    if assignment is None:
        raise Http404("No such task.")
    owner = assignment.participant.user_id
    if owner is not None and request.user.pk != owner:
        raise Http404("No such task.")
    return assignment


def closed_page(request: HttpRequest, assignment: Assignment) -> HttpResponse | None:
    if assignment.participant.status == Participant.Status.EXCLUDED:
        return message(request, "Thank you", "You can no longer take part in this study.")
    if assignment.status in (Assignment.Status.COMPLETED, Assignment.Status.NOT_QUALIFIED):
        return redirect("annotator:done", token=assignment.token)
    if assignment.status != Assignment.Status.ACTIVE:
        return message(
            request,
            "Time ran out",
            "Your time for this task ran out. Open the study link from Prolific again "
            "to continue if your place is still free; your ratings so far are kept.",
        )
    if not may_continue(assignment.task.study):
        return message(
            request,
            "Study closed",
            "The researchers closed this study. Your ratings so far are kept; please "
            "contact them through Prolific.",
        )
    return None


def resume(request: HttpRequest, token: str) -> HttpResponse:
    """Where the participant was: the first item not rated yet, or the finish page."""
    assignment = load_assignment(request, token)
    if (page := closed_page(request, assignment)) is not None:
        return page
    missing = missing_positions(assignment)
    if not missing:
        return redirect("annotator:finish", token=token)
    return redirect("annotator:item", token=token, position=missing[0])


def may_see_transcript(assignment: Assignment) -> bool:
    """Gold annotators always; crowd workers where the researcher allows it."""
    return assignment.participant.user_id is not None or assignment.task.study.transcript_for_crowd


def transcript_turns(text: str) -> list[dict]:
    """Speaker turns: '(PERSON4) text' lines become {speaker, text}."""
    turns = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = SPEAKER_TURN.match(line)
        if match:
            turns.append({"speaker": match.group(1), "text": match.group(2)})
        else:
            turns.append({"speaker": "", "text": line.strip()})
    return turns


def item_document(item: Item, assignment: Assignment) -> Document | None:
    if item.response_id is not None:
        return Document.objects.filter(questions__responses__pk=item.response_id).first()
    document_id = assignment.task.document_id  # none: a gold study's task of every meeting
    return Document.objects.filter(pk=document_id).first() if document_id is not None else None


def answers_shown(item: Item, swapped: bool) -> list[dict]:
    """Pairwise: the two answers as the participant sees them, A first."""
    first, second = item.answer, item.other_answer
    if swapped:
        first, second = second, first
    return [{"label": "A", "text": first}, {"label": "B", "text": second}]


def post_rating(request: HttpRequest, assignment: Assignment, position: int) -> HttpResponse:
    total = len(assignment.item_order)
    token = assignment.token
    if (page := closed_page(request, assignment)) is not None:
        if wants_json(request):
            raise Conflict("This task is no longer open.")
        return page
    data = request.POST
    result = check_rate_item(
        assignment,
        position,
        score=data.get("score"),
        choice=data.get("choice"),
        client_seconds=data.get("seconds"),
        comment=data.get("comment") if "comment" in data else None,
        flag=data.get("flag") if "flag" in data else None,
    )
    rating = result.rating
    next_url = (
        reverse("annotator:done", args=[token])
        if result.qualification == "failed"
        else reverse("annotator:item", args=[token, position + 1])
        if position < total
        else reverse("annotator:finish", args=[token])
    )
    if wants_json(request):
        return JsonResponse(
            {
                "saved": True,
                "position": position,
                "score": rating.score,
                "choice": rating.choice,
                "comment": rating.comment,
                "flag": rating.flag,
                "practice_ok": result.practice_ok,
                "feedback": result.practice_feedback,
                "qualification": result.qualification,
                "next": next_url,
            }
        )
    if result.practice_ok is not None and result.qualification != "failed":
        return redirect(reverse("annotator:item", args=[token, position]) + "?feedback=1")
    return redirect(next_url)


@require_http_methods(["GET", "POST"])
@shows_refusals("Rating not saved")
def item_page(request: HttpRequest, token: str, position: int) -> HttpResponse:
    assignment = load_assignment(request, token)
    total = len(assignment.item_order)
    if not 1 <= position <= total:
        raise Http404("No such item.")
    if request.method == "POST":
        return post_rating(request, assignment, position)
    if (page := closed_page(request, assignment)) is not None:
        return page
    study = assignment.task.study
    item = Item.objects.get(pk=assignment.item_order[position - 1])
    do_note_item_served(assignment, position)
    ratings = {
        r.item_id: r
        for r in assignment.ratings.only(
            "assignment_id", "item_id", "score", "choice", "comment", "flag"
        )
    }
    current = ratings.get(item.pk)
    document = item_document(item, assignment) if may_see_transcript(assignment) else None
    pairwise = study.is_pairwise and not item.is_practice
    context = rubric_context(study) | {
        "assignment": assignment,
        "item": item,
        "position": position,
        "total": total,
        "done": len(ratings),
        "percent": round(100 * len(ratings) / total),
        "current": current.score if current and current.score is not None else None,
        "current_choice": current.choice if current else "",
        "comment": current.comment if current else "",
        "flag": current.flag if current else "",
        "flags": [(v, label) for v, label in Rating.Flag.choices if v],
        "pairwise": pairwise,
        "answers": answers_shown(item, item.pk in assignment.swapped_item_ids) if pairwise else [],
        "points": scale_points(study),
        "is_gold": assignment.participant.user_id is not None,
        "show_feedback": bool(current and item.is_practice),
        "practice_ok": (
            item.in_expected_range(current.score) if current and item.is_practice else None
        ),
        "transcript": transcript_turns(document.text) if document else None,
        "meeting": document.external_id if document else "",
        # gold work comes meeting by meeting (annotator.gold): say where in it this item is
        "meeting_place": gold.place_in_meeting(assignment, position)
        if assignment.participant.user_id is not None
        else None,
        "previous": position - 1 if position > 1 else None,
        "next_url": (
            reverse("annotator:item", args=[token, position + 1])
            if position < total
            else reverse("annotator:finish", args=[token])
        ),
    }
    return render(request, "annotator/rate.html", context)


@require_http_methods(["GET", "POST"])
@shows_refusals("Not finished yet")
def finish(request: HttpRequest, token: str) -> HttpResponse:
    assignment = load_assignment(request, token)
    if (page := closed_page(request, assignment)) is not None:
        return page
    missing = missing_positions(assignment)
    if request.method == "POST":
        check_complete_assignment(assignment)
        return redirect("annotator:done", token=token)
    return render(
        request,
        "annotator/finish.html",
        {
            "assignment": assignment,
            "study": assignment.task.study,
            "missing": missing,
            "total": len(assignment.item_order),
        },
    )


def done(request: HttpRequest, token: str) -> HttpResponse:
    assignment = load_assignment(request, token)
    if assignment.status not in (Assignment.Status.COMPLETED, Assignment.Status.NOT_QUALIFIED):
        return redirect("annotator:resume", token=token)
    is_crowd = assignment.participant.user_id is None
    return render(
        request,
        "annotator/done.html",
        {
            "assignment": assignment,
            "code": assignment.completion_code,
            "prolific_url": completion_url(assignment.completion_code) if is_crowd else None,
            "not_qualified": assignment.status == Assignment.Status.NOT_QUALIFIED,
        },
    )


# --- Gold annotators ---------------------------------------------------------------------------


def gold_rater(request: HttpRequest) -> User | None:
    """The signed-in account when it may rate gold studies (gold annotators and
    researchers), else None."""
    user = request.user
    if isinstance(user, User) and (user.is_gold_annotator or user.is_researcher):
        return user
    return None


def gold_studies_for(user: User) -> QuerySet[Study]:
    """The gold studies an account may rate: a gold annotator those he is
    assigned to, a researcher those of the projects he writes to (a viewer's
    ratings would become the gold the judges are measured against). Any other
    is not found."""
    studies = Study.objects.filter(kind=Study.Kind.GOLD)
    if user.is_researcher:
        return studies.filter(project__in=writable_projects(user))
    return studies.filter(gold_annotators=user)


@login_required
def gold_home(request: HttpRequest) -> HttpResponse:
    user = gold_rater(request)
    if user is None:
        return message(request, "Not allowed", "Your account may not rate gold studies.", 403)
    studies = gold_studies_for(user).filter(status=Study.Status.OPEN).order_by("name")
    mine = {
        a.participant.study_id: a
        for a in Assignment.objects.filter(participant__user=user).select_related("participant")
    }
    progress = dict(
        Rating.objects.filter(assignment__in=mine.values())
        .values_list("assignment_id")
        .annotate(n=Count("id"))
    )
    rows = [
        {
            "study": s,
            "assignment": mine.get(s.pk),
            "done": progress.get(mine[s.pk].pk, 0) if s.pk in mine else 0,
            "total": len(mine[s.pk].item_order) if s.pk in mine else s.items.count(),
            "meetings": gold.meeting_progress(mine[s.pk])
            if s.pk in mine
            else gold.study_meetings(s),
        }
        for s in studies
    ]
    return render(request, "annotator/gold_home.html", {"rows": rows})


@login_required
@require_POST
@shows_refusals("Cannot start")
def gold_start(request: HttpRequest, study_id: int) -> HttpResponse:
    user = gold_rater(request)
    if user is None:
        return message(request, "Not allowed", "Your account may not rate gold studies.", 403)
    study = get_object_or_404(gold_studies_for(user), pk=study_id)
    assignment = check_start_assignment(study, user=user)
    return redirect("annotator:resume", token=assignment.token)
