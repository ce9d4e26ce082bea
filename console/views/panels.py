"""Judge panels in the console: a form to make one (its members ticked, its
rule chosen) and a page per panel with the reports that read it."""

from __future__ import annotations

import dataclasses

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from analysis.report.links import report_url
from console.panel_forms import PanelForm
from console.views.common import mine, scoped_object
from judging.models import Evaluator
from judging.panel_rules import PAIRWISE_RULE_TEXT, RULE_TEXT
from users.decorators import researcher_required
from users.permissions import signed_in_user


def judge_panels(request: HttpRequest):
    return mine(request, Evaluator.objects.filter(kind=Evaluator.Kind.PANEL)).order_by("name")


@researcher_required
def panel_new(request: HttpRequest) -> HttpResponse:
    form = PanelForm(request.POST or None, user=signed_in_user(request))
    if request.method == "POST" and form.is_valid():
        panel = Evaluator.objects.create(
            name=form.cleaned_data["name"],
            kind=Evaluator.Kind.PANEL,
            config=form.cleaned_data["config"],
            project=form.cleaned_data["project"],
            description=f"A panel of {', '.join(form.cleaned_data['config']['members'])}.",
        )
        messages.info(request, f"Panel {panel.name} saved: every report now reads it as a judge.")
        return redirect("console:panel", pk=panel.pk)
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "New judge panel",
            "submit": "Save the panel",
            "intro": "A judge made of several judges: a report scores each answer every member "
            "scored by the rule you choose, and analyses the panel as any judge (agreement, "
            "alt-test, rankings). Its cost is the sum of its members'.",
            "nav": "judges",
        },
    )


@researcher_required
def panel_detail(request: HttpRequest, pk: int) -> HttpResponse:
    from analysis.report.scope import default_selection  # pandas: loaded when asked

    panel = scoped_object(request, judge_panels(request), pk)
    config = panel.config if isinstance(panel.config, dict) else {}
    members = config.get("members", [])
    pairwise = config.get("pairwise") is True
    # the report of the setting with the most human scores, the panel beside its members
    selection = default_selection(panel.project.slug if panel.project else None)
    report = report_url(dataclasses.replace(selection, judges=(panel.name, *members)))
    return render(
        request,
        "console/panel.html",
        {
            "panel": panel,
            "members": members,
            "rule": config.get("rule", "mean"),
            "rule_text": (PAIRWISE_RULE_TEXT if pairwise else RULE_TEXT).get(
                config.get("rule", "mean"), ""
            ),
            "pairwise": pairwise,
            "report_url": report,
            "nav": "judges",
        },
    )


@researcher_required
def probes_new(request: HttpRequest) -> HttpResponse:
    """Make answers known to be bad for a dataset's questions
    (generation.probes), to judge beside the real systems' answers."""
    from console.probe_forms import ProbesForm
    from generation.probes import ProbeError, make_probes

    form = ProbesForm(request.POST or None, user=signed_in_user(request))
    if request.method == "POST" and form.is_valid():
        try:
            made = make_probes(
                form.cleaned_data["dataset"],
                form.cleaned_data["project"],
                form.cleaned_data["kinds"],
            )
        except ProbeError as error:
            form.add_error(None, str(error))
        else:
            total = sum(made.values())
            messages.info(
                request,
                f"{total} probe answers made ({', '.join(f'probe-{k}' for k in made)}); "
                "judge them with a judging run that names those systems: the report's Probes "
                "part then compares their scores with the good answers'.",
            )
            return redirect("console:judges")
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "Probes: answers known to be bad",
            "submit": "Make the probe answers",
            "intro": "For each question of a dataset, answers a good judge scores low: the "
            'question restated, "I don\'t know", the answer to another question of the meeting, '
            "a confident wrong number, a long passage of the transcript. Judge them as any "
            "system; the report shows how often each fools each judge.",
            "nav": "judges",
        },
    )
