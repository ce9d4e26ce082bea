"""Adaptive study pages: the goal and budget form, the plan before anything
is spent, and the monitor (estimates against the goal, money, waves,
decisions) with the researcher's start, stop, budget and deadline. Every
change goes through adaptive.loop, which records it as a decision."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from adaptive.errors import AdaptiveError
from adaptive.models import AdaptiveStudy, Decision, Snapshot
from console.adaptive_forms import BudgetForm, DeadlineForm, NewAdaptiveStudyForm
from console.views.common import mine, scoped_object
from users.decorators import researcher_required
from users.permissions import signed_in_user

# adaptive.loop loads numpy and pandas: imported by the views that need it, not
# when the server starts (tests/test_startup.py)


@researcher_required
@require_GET
def adaptive_list(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "console/adaptive_list.html",
        {"studies": mine(request, AdaptiveStudy.objects.all())[:100], "nav": "adaptive"},
    )


@researcher_required
def adaptive_new(request: HttpRequest) -> HttpResponse:
    from adaptive import loop

    form = NewAdaptiveStudyForm(request.POST or None, user=signed_in_user(request))
    if request.method == "POST" and form.is_valid():
        adaptive = form.save()
        try:
            loop.check_create(
                adaptive,
                list(form.cleaned_data["systems"]),
                signed_in_user(request),
                groups=list(form.cleaned_data["participant_groups"]),
            )
        except AdaptiveError as error:
            form.add_error(None, str(error))
        else:
            messages.info(request, "Planned: nothing is spent until you start it.")
            return redirect("console:adaptive", pk=adaptive.pk)
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "New adaptive study",
            "submit": "Plan it",
            "intro": "State what the humans must answer and the money and time it may take. "
            "Concord simulates the study on the data at hand and shows the plan; nothing is "
            "spent until you start it.",
            "nav": "adaptive",
        },
    )


def plan_designs(adaptive: AdaptiveStudy) -> list[dict]:
    """The plan's figures for each design it simulated, the one that runs marked."""
    from analysis.planning.study_plan import DESIGN_WORDS

    names = adaptive.plan.get("systems") or []
    rows = []
    for name, d in (adaptive.plan.get("designs") or {}).items():
        first = d.get("first_wave") or []
        rows.append(
            {
                "name": name,
                "words": DESIGN_WORDS.get(name, name),
                "runs": name == adaptive.design,
                "planned": name == adaptive.plan.get("planned_design", adaptive.plan.get("design")),
                "first_wave": ", ".join(f"{s} {n}" for s, n in zip(names, first, strict=False))
                if name != "adaptive"
                else "",
                **{k: d.get(k) for k in ("paid_median", "paid_p95", "coverage", "answered")},
                "within_budget": d.get("answered_within_budget"),
            }
        )
    return rows


def dearer_design(adaptive: AdaptiveStudy) -> dict | None:
    """When the design that runs is expected to pay more than the plan's own
    choice (the cheapest design that holds): both, and the difference in GBP.
    Starting it then asks for a confirmation."""
    from analysis.planning.study_plan import DESIGN_WORDS

    plan = adaptive.plan or {}
    designs = plan.get("designs") or {}
    chosen = str(plan.get("planned_design", plan.get("design")) or "")
    if adaptive.goal == AdaptiveStudy.Goal.ALT_TEST or chosen not in designs:
        return None
    running = designs.get(adaptive.design)
    if running is None or adaptive.design == chosen:
        return None
    place = float(plan.get("place_pence") or 0) / 100
    more = running["paid_median"] - designs[chosen]["paid_median"]
    if more <= 0:
        return None
    return {
        "runs": DESIGN_WORDS.get(adaptive.design, adaptive.design),
        "runs_places": running["paid_median"],
        "runs_gbp": running["paid_median"] * place,
        "cheaper": DESIGN_WORDS.get(chosen, chosen),
        "cheaper_places": designs[chosen]["paid_median"],
        "cheaper_gbp": designs[chosen]["paid_median"] * place,
        "more_gbp": more * place,
    }


def monitor_context(adaptive: AdaptiveStudy) -> dict:
    from adaptive import loop
    from adaptive.estimates import estimates

    found = estimates(adaptive) if adaptive.status != AdaptiveStudy.Status.PLANNED else []
    last = Snapshot.objects.filter(adaptive=adaptive).order_by("-created_at", "-pk").first()
    money = loop.money(adaptive)
    return {
        "adaptive": adaptive,
        "estimates": found,
        "money": {k: v / 100 for k, v in money.items()},
        "budget": adaptive.budget_pence / 100,
        "batches": loop.batches(adaptive),
        "decisions": Decision.objects.filter(adaptive=adaptive).select_related("actor"),
        "plot_version": f"{last.pk if last else 0}-{adaptive.budget_pence}",
        "designs": plan_designs(adaptive) if adaptive.goal != AdaptiveStudy.Goal.ALT_TEST else [],
        "plan_cost": {
            "median": adaptive.plan.get("cost_median_pence", 0) / 100,
            "p95": adaptive.plan.get("cost_p95_pence", 0) / 100,
        },
        "simulated": getattr(settings, "CONCORD_DEMO_SIMULATED_PARTICIPANTS", False),
        "dearer": dearer_design(adaptive),
        "nav": "adaptive",
    }


@researcher_required
@require_GET
def adaptive_detail(request: HttpRequest, pk: int) -> HttpResponse:
    adaptive = scoped_object(request, AdaptiveStudy.objects.all(), pk)
    context = monitor_context(adaptive)
    context["budget_form"] = BudgetForm(initial={"budget_gbp": context["budget"]})
    context["deadline_form"] = DeadlineForm(
        initial={"deadline": timezone.localtime(adaptive.deadline).strftime("%Y-%m-%dT%H:%M")}
    )
    template = "console/_adaptive_live.html" if request.GET.get("live") else "console/adaptive.html"
    return render(request, template, context)


@researcher_required
@require_GET
def adaptive_plot(request: HttpRequest, pk: int) -> HttpResponse:
    from adaptive.plot import monitor_svg

    adaptive = scoped_object(request, AdaptiveStudy.objects.all(), pk)
    response = HttpResponse(monitor_svg(adaptive), content_type="image/svg+xml")
    response["Cache-Control"] = "no-store"
    return response


@researcher_required
@require_POST
def adaptive_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    from adaptive import changes, loop
    from adaptive.tasks import advance_adaptive

    adaptive = scoped_object(request, AdaptiveStudy.objects.all(), pk)
    actor = signed_in_user(request)
    try:
        if action == "start":
            dearer = dearer_design(adaptive)
            if dearer is not None and request.POST.get("confirm_dearer") != "1":
                raise AdaptiveError(
                    f"Not started: this design ({dearer['runs']}) is expected to cost "
                    f"GBP {dearer['more_gbp']:.2f} more than the plan's choice "
                    f"({dearer['cheaper']}). Tick the confirmation to start it all the same."
                )
            loop.check_start(adaptive, actor)
            note = "Started: the first wave is open."
        elif action == "stop":
            changes.check_stop(adaptive, actor, (request.POST.get("reason") or "")[:150])
            note = "Stopping: no new arrivals; work in progress may finish."
        elif action == "budget":
            form = BudgetForm(request.POST)
            if not form.is_valid():
                raise AdaptiveError("Give the new budget as an amount such as 250.00.")
            changes.check_change_budget(adaptive, int(form.cleaned_data["budget_gbp"] * 100), actor)
            note = "Budget changed."
        elif action == "deadline":
            deadline_form = DeadlineForm(request.POST)
            if not deadline_form.is_valid():
                raise AdaptiveError("Give the new deadline as a date and time.")
            changes.check_change_deadline(adaptive, deadline_form.cleaned_data["deadline"], actor)
            note = "Deadline changed."
        else:
            raise AdaptiveError(f"Unknown action {action!r}: start, stop, budget or deadline.")
    except AdaptiveError as error:
        messages.error(request, str(error))
    else:
        messages.info(request, note)
        # the step and Prolific's side on the worker, once this is committed
        transaction.on_commit(lambda: advance_adaptive.delay(adaptive.pk))
    return redirect("console:adaptive", pk=adaptive.pk)
