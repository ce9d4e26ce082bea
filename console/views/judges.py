"""LLM judges in the console: the list, a form per judge (fields, not JSON),
the prompt filled with a real item, and "Try it on 3 items": the raw answers
and the scores Concord reads in them, before any run is paid
(judging.trial)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from console.judge_forms import PAIRWISE, JudgeForm
from console.views.common import mine, scoped_object
from corpus.models import Dataset
from judging.evaluators import ConfigError
from judging.models import Evaluator
from judging.trial import TRIAL_ITEMS, TrialRefused, prompt_preview, sample_items, try_judge
from users.decorators import researcher_required
from users.permissions import signed_in_user


def llm_judges(request: HttpRequest):
    return mine(
        request,
        Evaluator.objects.filter(kind__in=[Evaluator.Kind.LLM_RUBRIC, Evaluator.Kind.LLM_PAIRWISE]),
    ).order_by("name")


@researcher_required
def judges(request: HttpRequest) -> HttpResponse:
    from console.views.panels import judge_panels

    return render(
        request,
        "console/judges.html",
        {"judges": llm_judges(request), "panels": judge_panels(request), "nav": "judges"},
    )


@researcher_required
def judge_new(request: HttpRequest) -> HttpResponse:
    form = JudgeForm(request.POST or None, user=signed_in_user(request))
    if request.method == "POST" and form.is_valid():
        judge = Evaluator.objects.create(
            name=form.cleaned_data["name"],
            kind=form.kind,
            config=form.config(),
            project=form.cleaned_data["project"],
        )
        messages.info(request, f"Judge {judge.name} saved. Try it on {TRIAL_ITEMS} items below.")
        return redirect("console:judge", pk=judge.pk)
    return render(
        request,
        "console/form.html",
        {
            "form": form,
            "title": "New LLM judge",
            "submit": "Save the judge",
            "intro": "A judge that scores each answer, or compares it with a baseline system's "
            "(pairwise). Save it, then try it on a few items before any run is paid: its "
            "prompt, its raw answers and the scores or verdicts read in them.",
            "nav": "judges",
        },
    )


def judge_context(request: HttpRequest, judge: Evaluator, form: JudgeForm | None) -> dict:
    config = judge.config if isinstance(judge.config, dict) else {}
    dataset_id = request.GET.get("dataset") or request.POST.get("dataset") or ""
    dataset = Dataset.objects.filter(pk=int(dataset_id)).first() if dataset_id.isdigit() else None
    preview, refusal, sample = "", "", []
    try:
        sample = sample_items(config, dataset)
        if sample:
            preview = prompt_preview(config, sample[0])
    except (ConfigError, TrialRefused) as error:
        refusal = str(error)
    if not sample and not refusal:
        refusal = "No single-turn responses yet: import or generate some to try the judge on."
        if config.get("protocol") in PAIRWISE:
            refusal = (
                f"No single-turn responses of another system beside the baseline "
                f"{config.get('baseline')!r}'s{' in ' + str(dataset) if dataset else ''}: "
                "import or generate some to try the judge on."
            )
    used = judge.judgments.exists() or judge.verdicts.exists()
    return {
        "judge": judge,
        "form": form,
        "used": used,
        "sample": sample,
        "pairwise": config.get("protocol") in PAIRWISE,
        "calls": len(sample) * (2 if config.get("protocol") in PAIRWISE else 1),
        "preview": preview,
        "refusal": refusal,
        "datasets": Dataset.objects.filter(pk__in=sample_datasets()).select_related("benchmark"),
        "dataset": dataset,
        "items": TRIAL_ITEMS,
        "nav": "judges",
    }


def sample_datasets():
    from generation.models import Response

    return Response.objects.filter(run__mode="st").values("run__dataset").distinct()


@researcher_required
def judge_detail(request: HttpRequest, pk: int) -> HttpResponse:
    judge = scoped_object(request, llm_judges(request), pk)
    form = JudgeForm(request.POST or None, user=signed_in_user(request), instance=judge)
    if request.method == "POST":
        if judge.judgments.exists() or judge.verdicts.exists():
            messages.error(
                request,
                "This judge has scores already: its settings stay as they gave them. "
                "Make a new judge to change them.",
            )
            return redirect("console:judge", pk=judge.pk)
        if form.is_valid():
            judge.name = form.cleaned_data["name"]
            judge.config = form.config()
            judge.project = form.cleaned_data["project"]
            judge.kind = form.kind
            judge.save(update_fields=["name", "config", "project", "kind"])
            messages.info(request, f"Judge {judge.name} saved.")
            return redirect("console:judge", pk=judge.pk)
    return render(request, "console/judge.html", judge_context(request, judge, form))


@researcher_required
@require_POST
def judge_try(request: HttpRequest, pk: int) -> HttpResponse:
    judge = scoped_object(request, llm_judges(request), pk)
    context = judge_context(request, judge, None)
    if not context["refusal"]:
        try:
            context["answers"] = try_judge(judge.config, context["sample"])
        except (ConfigError, TrialRefused) as error:
            context["refusal"] = str(error)
    context["form"] = JudgeForm(user=signed_in_user(request), instance=judge)
    return render(request, "console/judge.html", context)
