"""The console's adaptive study pages: the goal form, the plan before
anything is spent, start, the monitor and its plot, the researcher's
decisions (each recorded), and what a bad request gets."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse
from django.utils.html import escape

from adaptive import loop
from adaptive.models import AdaptiveStudy, Decision, Draw
from demo.bots import rate_as_bots

pytestmark = pytest.mark.django_db


def form_data(paper, **changes):
    data = {
        "name": "Adaptive from the console",
        "goal": "means",
        "half_width": "1.0",
        "population": "crowd",
        "dataset": paper["dataset"].pk,
        "mode": "st",
        "systems": [s.pk for s in paper["systems"]],
        "judge": paper["judge"].pk,
        "uncertainty_judge": paper["other"].pk,
        "prior_humans": paper["silver"].pk,
        "deadline": "2099-01-01T12:00",
        "hourly_pay": "9.00",
        "minutes_per_item": "2",
        "draws_per_wave": "80",
        "send_rate": "0.3",
        "floor": "0.3",
        "min_labels": "20",
        "budget_gbp": "300",
        "bonus_gbp": "0",
        "closing_message": "",
    }
    data.update(changes)
    return data


def test_plan_start_monitor_and_decide(client, researcher, paper):
    client.force_login(researcher)
    assert client.get(reverse("console:adaptive_list")).status_code == 200
    assert client.get(reverse("console:adaptive_new")).status_code == 200
    answer = client.post(reverse("console:adaptive_new"), form_data(paper))
    assert answer.status_code == 302, answer.context["form"].errors
    adaptive = AdaptiveStudy.objects.get(name="Adaptive from the console")
    assert adaptive.budget_pence == 30000 and adaptive.created_by == researcher
    page = client.get(answer["Location"]).content.decode()
    # the plan, before anything is spent: the design it chose and why, and
    # what each design was expected to pay
    assert "Chance of an answer within the budget" in page
    assert escape(adaptive.plan["summary"]) in page
    assert adaptive.design == "ppi"
    assert escape(adaptive.plan["design_reason"]) in page
    assert 'id="plan-design"' in page and "Design: A fixed design with the judge (PPI)" in page
    for name, figures in adaptive.plan["designs"].items():
        assert f"({name})" in page and f"<td>{figures['paid_median']:.0f}</td>" in page
    assert "· runs" in page and "not anytime-valid" in page
    assert not Draw.objects.filter(adaptive=adaptive).exists()
    listing = client.get(reverse("console:adaptive_list")).content.decode()
    assert "<td>ppi</td>" in listing

    answer = client.post(reverse("console:adaptive_action", args=[adaptive.pk, "start"]))
    assert answer.status_code == 302
    adaptive.refresh_from_db()
    assert adaptive.status == "running" and Draw.objects.filter(adaptive=adaptive).exists()
    rng = np.random.default_rng(0)
    for study in loop.batches(adaptive):
        rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)
    loop.check_advance(adaptive.pk)
    page = client.get(reverse("console:adaptive", args=[adaptive.pk])).content.decode()
    assert 'id="adaptive-estimates"' in page and "GPT-4" in page
    assert "Fixed-n interval" in page and 'id="fixed-note"' in page
    live = client.get(reverse("console:adaptive", args=[adaptive.pk]), {"live": "1"})
    assert live.content.decode().startswith('<div id="adaptive-live"')
    plot = client.get(reverse("console:adaptive_plot", args=[adaptive.pk]))
    assert plot["Content-Type"] == "image/svg+xml" and b"<svg" in plot.content

    # below what is spent or reserved: refused, nothing changes
    client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "budget"]), {"budget_gbp": "1"}
    )
    adaptive.refresh_from_db()
    assert adaptive.budget_pence == 30000
    client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "budget"]), {"budget_gbp": "400"}
    )
    client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "deadline"]),
        {"deadline": "2099-06-01T12:00"},
    )
    client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "stop"]), {"reason": "enough"}
    )
    adaptive.refresh_from_db()
    assert adaptive.budget_pence == 40000 and adaptive.deadline.year == 2099
    assert adaptive.status == "stopping" and "enough" in adaptive.stop_reason
    trail = list(Decision.objects.filter(adaptive=adaptive).values_list("action", "actor"))
    assert ("budget", researcher.pk) in trail and ("deadline", researcher.pk) in trail
    assert ("stopping", researcher.pk) in trail
    # a stopped study cannot be started or stopped again
    answer = client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "start"]), follow=True
    )
    assert "only a planned study starts" in answer.content.decode()


def test_a_researcher_chooses_the_design_over_the_plan(client, researcher, paper):
    client.force_login(researcher)
    page = client.get(reverse("console:adaptive_new")).content.decode()
    assert "Let the plan choose" in page
    answer = client.post(
        reverse("console:adaptive_new"),
        form_data(paper, name="Adaptive by hand", design="adaptive"),
    )
    assert answer.status_code == 302, answer.context["form"].errors
    adaptive = AdaptiveStudy.objects.get(name="Adaptive by hand")
    assert adaptive.design == "adaptive" and adaptive.plan["planned_design"] == "ppi"
    chosen = Decision.objects.get(adaptive=adaptive, action="design")
    assert chosen.actor == researcher
    page = client.get(answer["Location"]).content.decode()
    assert "Design: Adaptive waves with an anytime interval" in page
    assert "chosen by the researcher; the plan chose a fixed design with the judge (PPI)" in page
    assert "· the plan's choice" in page and "Design chosen by a researcher" in page
    # the dearer design: advice on the plan, and a start that asks to confirm the difference
    designs, place = adaptive.plan["designs"], adaptive.plan["place_pence"] / 100
    more = (designs["adaptive"]["paid_median"] - designs["ppi"]["paid_median"]) * place
    assert more > 0
    assert 'id="plan-advice"' in page and f"GBP {more:.2f} less" in page
    assert 'id="confirm-dearer"' in page
    refused = client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "start"]), follow=True
    )
    assert escape(f"expected to cost GBP {more:.2f} more than the plan's choice") in (
        refused.content.decode()
    )
    adaptive.refresh_from_db()
    assert adaptive.status == AdaptiveStudy.Status.PLANNED and not loop.batches(adaptive)
    client.post(
        reverse("console:adaptive_action", args=[adaptive.pk, "start"]), {"confirm_dearer": "1"}
    )
    adaptive.refresh_from_db()
    assert adaptive.status == AdaptiveStudy.Status.RUNNING
    rng = np.random.default_rng(2)
    for study in loop.batches(adaptive):
        rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)
    loop.check_advance(adaptive.pk)
    page = client.get(reverse("console:adaptive", args=[adaptive.pk])).content.decode()
    assert "Anytime-valid interval" in page and 'id="fixed-note"' not in page
    # the alt-test goal runs its own waves
    answer = client.post(
        reverse("console:adaptive_new"),
        form_data(paper, name="Alt", goal="alt_test", half_width="", epsilon="0.2", design="ppi"),
    )
    assert answer.status_code == 200 and "runs its own waves" in answer.content.decode()


def test_bad_forms_and_strangers(client, researcher, gold_annotator, paper):
    client.force_login(researcher)
    answer = client.post(reverse("console:adaptive_new"), form_data(paper, half_width=""))
    assert answer.status_code == 200 and "needs a half-width" in answer.content.decode()
    answer = client.post(reverse("console:adaptive_new"), form_data(paper, send_rate="1.5"))
    assert "Between 0" in answer.content.decode()
    answer = client.post(
        reverse("console:adaptive_new"), form_data(paper, judge=paper["other"].pk, systems=[])
    )
    assert answer.status_code == 200
    assert not AdaptiveStudy.objects.exists()
    answer = client.post(
        reverse("console:adaptive_new"), form_data(paper, deadline="2001-01-01T00:00")
    )
    assert "deadline has passed" in answer.content.decode()
    assert not AdaptiveStudy.objects.exists()
    client.force_login(gold_annotator)
    assert client.get(reverse("console:adaptive_list")).status_code == 403
    assert client.post(reverse("console:adaptive_new"), form_data(paper)).status_code == 403
    assert not AdaptiveStudy.objects.exists()


def test_the_alt_test_goal_from_the_console(client, researcher, paper):
    client.force_login(researcher)
    data = form_data(
        paper, name="Alt-test from the console", goal="alt_test", half_width="", epsilon="0.2"
    )
    answer = client.post(reverse("console:adaptive_new"), data)
    assert answer.status_code == 302, answer.context["form"].errors
    page = client.get(answer["Location"]).content.decode()
    assert "not simulated for this goal" in page and "at epsilon 0.2" in page
    adaptive = AdaptiveStudy.objects.get(name="Alt-test from the console")
    client.post(reverse("console:adaptive_action", args=[adaptive.pk, "start"]))
    rng = np.random.default_rng(1)
    for study in loop.batches(adaptive):
        rate_as_bots(study, lambda rid: paper["truth"][rid], rng, noise=3.0, dropout=0)
    loop.check_advance(adaptive.pk)
    page = client.get(reverse("console:adaptive", args=[adaptive.pk])).content.decode()
    # the first of 5 looks spends q * 1 / 15 (adaptive.alt_goal.q_at_look)
    assert "Looked (alt-test)" in page and "look 1 of 5 (q 0.0033)" in page
    plot = client.get(reverse("console:adaptive_plot", args=[adaptive.pk]))
    assert plot.status_code == 200
    answer = client.post(reverse("console:adaptive_new"), form_data(paper, goal="alt_test"))
    assert "needs epsilon" in answer.content.decode()


def test_the_admin_shows_an_adaptive_study_and_changes_nothing(client, django_user_model, paper):
    from tests.adaptive.conftest import make

    adaptive = make(paper, name="Adaptive in the admin")
    loop.check_start(adaptive)
    admin = django_user_model.objects.create_superuser("ada", password="pw-ada-12345")
    client.force_login(admin)
    page = client.get(reverse("admin:adaptive_adaptivestudy_change", args=[adaptive.pk]))
    assert page.status_code == 200 and "Adaptive in the admin" in page.content.decode()
    draws = client.get(reverse("admin:adaptive_draw_changelist"), {"adaptive": adaptive.pk})
    assert draws.status_code == 200
    decisions = client.get(reverse("admin:adaptive_decision_changelist"))
    assert "Wave sent" in decisions.content.decode()
    answer = client.post(
        reverse("admin:adaptive_adaptivestudy_delete", args=[adaptive.pk]), {"post": "yes"}
    )
    assert answer.status_code == 403 and AdaptiveStudy.objects.filter(pk=adaptive.pk).exists()
