"""`manage.py adaptive_study`: plan, start, step, budget, deadline, stop,
show, and the ranking goal run to its answer from the command line."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from adaptive import loop
from adaptive.models import AdaptiveStudy, Decision
from annotator.models import Study
from demo.bots import rate_as_bots

pytestmark = pytest.mark.django_db

PLAN = [
    "plan",
    "--name",
    "Ranking from the command line",
    "--goal",
    "ranking",
    "--probability",
    "0.9",
    "--judge",
    "gpt-4-eval",
    "--uncertainty-judge",
    "prometheus-eval",
    "--prior-humans",
    "silver-human-eval",
    "--systems",
    "GPT-4,LongAlpaca-7B,Vicuna-13B-v1.5",
    "--budget-gbp",
    "400",
    "--min-labels",
    "20",
    "--draws-per-wave",
    "80",
]


def run(*args: str) -> str:
    out = StringIO()
    call_command("adaptive_study", *args, stdout=out)
    return out.getvalue()


def test_the_ranking_goal_from_the_command_line(paper):
    printed = run(*PLAN)
    assert "Expected" in printed and "Assumed: the ranking planned as" in printed
    name = "Ranking from the command line"
    adaptive = AdaptiveStudy.objects.get(name=name)
    assert adaptive.goal == "ranking" and adaptive.status == "planned"
    # the design the plan chose, why, and each design's figures
    assert adaptive.design == "ppi" and "Design: a fixed design with the judge (PPI)" in printed
    assert "  ppi: " in printed and "<- runs" in printed and "  adaptive: " in printed
    run("budget", name, "450.50")
    run("deadline", name, "2099-03-01T10:00")
    assert "Running" in run("start", name)
    rng = np.random.default_rng(7)
    for _ in range(40):
        for study in loop.batches(adaptive):
            if study.status == Study.Status.OPEN:
                rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)
        run("step", name)
        adaptive.refresh_from_db()
        if adaptive.status == AdaptiveStudy.Status.FINISHED:
            break
    assert adaptive.status == "finished", adaptive.stop_reason
    # the paper's gold ranking of these three systems (Table 4)
    assert adaptive.report["answer"].startswith(
        "Answered: the ranking is GPT-4 > Vicuna-13B-v1.5 > LongAlpaca-7B"
    )
    found = {e["name"]: e for e in adaptive.report["estimates"]}
    # decided: the intervals (each at (1 - p) / 3) are apart
    assert found["GPT-4"]["lower"] > found["Vicuna-13B-v1.5"]["upper"]
    assert found["Vicuna-13B-v1.5"]["lower"] > found["LongAlpaca-7B"]["upper"]
    assert adaptive.budget_pence == 45050 and adaptive.deadline.year == 2099
    actions = set(Decision.objects.filter(adaptive=adaptive).values_list("action", flat=True))
    assert {"budget", "deadline", "started", "stopping", "finished"} <= actions
    assert "Answered" in run("show", name)
    # a fixed design: every draw sent, the ranking read on the fixed-n intervals
    assert "fixed-n" in adaptive.report["answer"] and adaptive.report["design"] == "ppi"


def test_a_design_stated_on_the_command_line(paper):
    name = "Adaptive by hand from the command line"
    printed = run(
        *[name if a == "Ranking from the command line" else a for a in PLAN], "--design", "adaptive"
    )
    adaptive = AdaptiveStudy.objects.get(name=name)
    assert adaptive.design == "adaptive" and adaptive.floor == 0.5
    assert "chosen by the researcher" in printed
    chosen = Decision.objects.get(adaptive=adaptive, action="design")
    assert chosen.actor is None and chosen.detail.startswith("a researcher chose adaptive waves")


def test_bad_commands_say_what_is_wrong(paper):
    with pytest.raises(CommandError, match="No such systems in project .default.: Nobody"):
        run(*PLAN[:-8], "--systems", "GPT-4,Nobody", "--budget-gbp", "10")
    with pytest.raises(CommandError, match="an amount such as"):
        run(*[a if a != "400" else "lots" for a in PLAN])
    with pytest.raises(CommandError, match="ranking goal needs a probability"):
        run(*[a if a != "0.9" else "1.5" for a in PLAN])
    with pytest.raises(CommandError, match="No adaptive study named"):
        run("start", "missing")
    run(*PLAN)
    with pytest.raises(CommandError, match="is taken"):
        run(*PLAN)
    name = "Ranking from the command line"
    with pytest.raises(CommandError, match="a date and time"):
        run("deadline", name, "soon")
    run("stop", name)
    with pytest.raises(CommandError, match="finished already"):
        run("stop", name)
    assert AdaptiveStudy.objects.count() == 1
