"""/api/adaptive-studies/: plan, start, estimates, decisions, budget,
deadline, stop; bad input gets a 400 that says why and stores nothing."""

from __future__ import annotations

import numpy as np
import pytest

from adaptive import loop
from adaptive.models import AdaptiveStudy, Decision
from demo.bots import rate_as_bots

pytestmark = pytest.mark.django_db


def body(paper, **changes):
    data = {
        "name": "Adaptive through the API",
        "goal": "means",
        "half_width": 1.0,
        "population": "crowd",
        "dataset": paper["dataset"].pk,
        "mode": "st",
        "systems": [s.pk for s in paper["systems"]],
        "judge": paper["judge"].pk,
        "uncertainty_judge": paper["other"].pk,
        "prior_humans": paper["silver"].pk,
        "budget_pence": 30000,
        "deadline": "2099-01-01T12:00:00Z",
        "draws_per_wave": 80,
        "min_labels": 20,
    }
    data.update(changes)
    return data


def test_plan_start_and_decide_through_the_api(researcher_api, researcher, paper):
    answer = researcher_api.post("/api/adaptive-studies/", body(paper), format="json")
    assert answer.status_code == 201, answer.json()
    created = answer.json()
    assert created["status"] == "planned" and created["plan"]["places_median"] > 0
    assert created["design"] == created["plan"]["design"] == "ppi"  # the plan's choice
    assert created["plan"]["design_reason"].startswith("the fewest paid places")
    pk = created["id"]
    assert researcher_api.get(f"/api/adaptive-studies/{pk}/estimates/").json() == []
    answer = researcher_api.post(f"/api/adaptive-studies/{pk}/start/")
    assert answer.status_code == 200 and answer.json()["status"] == "running"
    adaptive = AdaptiveStudy.objects.get(pk=pk)
    rng = np.random.default_rng(0)
    for study in loop.batches(adaptive):
        rate_as_bots(study, lambda rid: paper["truth"][rid], rng, dropout=0)
    estimates = researcher_api.get(f"/api/adaptive-studies/{pk}/estimates/").json()
    assert {e["name"] for e in estimates} == {s.name for s in paper["systems"]}
    assert all(e["labels"] > 0 and e["lower"] <= e["mean"] <= e["upper"] for e in estimates)
    answer = researcher_api.post(
        f"/api/adaptive-studies/{pk}/budget/", {"budget_pence": 1}, format="json"
    )
    assert answer.status_code == 400 and "below what is spent" in answer.json()["detail"]
    answer = researcher_api.post(
        f"/api/adaptive-studies/{pk}/budget/", {"budget_pence": 40000}, format="json"
    )
    assert answer.json()["budget_pence"] == 40000
    answer = researcher_api.post(
        f"/api/adaptive-studies/{pk}/deadline/", {"deadline": "2000-01-01T00:00:00Z"}, format="json"
    )
    assert answer.status_code == 400
    answer = researcher_api.post(
        f"/api/adaptive-studies/{pk}/stop/", {"reason": "enough"}, format="json"
    )
    assert answer.json()["status"] in ("stopping", "finished")
    decisions = researcher_api.get(f"/api/adaptive-studies/{pk}/decisions/").json()
    assert [d["action"] for d in decisions][:3] == ["planned", "started", "wave"]
    assert {"budget", "stopping"} <= {d["action"] for d in decisions}
    assert any(d["actor"] == "rita" for d in decisions if d["action"] == "budget")


def test_a_design_stated_through_the_api_overrides_the_plan(researcher_api, paper):
    answer = researcher_api.post(
        "/api/adaptive-studies/", body(paper, design="uniform", floor=0.4), format="json"
    )
    assert answer.status_code == 201, answer.json()
    created = answer.json()
    assert created["design"] == created["plan"]["design"] == "uniform"
    assert created["plan"]["planned_design"] == "ppi" and created["floor"] == 0.4
    decisions = researcher_api.get(f"/api/adaptive-studies/{created['id']}/decisions/").json()
    assert [d["action"] for d in decisions] == ["planned", "design"]
    assert decisions[1]["actor"] == "rita" and "over the plan's" in decisions[1]["detail"]
    answer = researcher_api.post(
        "/api/adaptive-studies/", body(paper, name="Default floor"), format="json"
    ).json()
    assert answer["floor"] == 0.5 and answer["design"] == "ppi"


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"systems": []}, "systems"),
        ({"half_width": None}, "half_width"),
        ({"goal": "ranking", "probability": None}, "probability"),
        ({"goal": "alt_test", "epsilon": None}, "epsilon"),
        ({"goal": "alt_test", "epsilon": 0.2, "raters_per_item": 2}, "raters_per_item"),
        ({"half_width": "Infinity"}, "half_width"),
        ({"send_rate": 1.5}, "send_rate"),
        ({"deadline": "2001-01-01T00:00:00Z"}, "deadline"),
        ({"name": "bad\x00name"}, "name"),
        ({"budget_pence": -1}, "budget_pence"),
        ({"judge": 999999}, "judge"),
        ({"design": "sequential"}, "design"),
        ({"goal": "alt_test", "epsilon": 0.2, "design": "ppi"}, "design"),
        ({"defer_at": 0.5}, "defer_at"),
        # the paper's gpt-4-eval has no confidence signal (one score, no token probabilities)
        ({"defer_at": 0.2}, "gpt-4-eval cannot defer"),
    ],
)
def test_bad_bodies_are_refused_and_nothing_is_stored(researcher_api, paper, changes, field):
    answer = researcher_api.post("/api/adaptive-studies/", body(paper, **changes), format="json")
    assert answer.status_code == 400
    assert field in str(answer.json())
    assert not AdaptiveStudy.objects.exists() and not Decision.objects.exists()


def test_a_judge_that_scored_nothing_is_refused_with_the_reason(researcher_api, paper):
    from judging.models import Evaluator

    empty = Evaluator.objects.create(name="a judge with no scores", kind="llm_rubric")
    answer = researcher_api.post(
        "/api/adaptive-studies/", body(paper, judge=empty.pk), format="json"
    )
    assert answer.status_code == 400 and "has not scored" in answer.json()["detail"]
    assert not AdaptiveStudy.objects.exists()


def test_a_batch_study_cannot_be_deleted_from_under_its_adaptive_study(researcher_api, paper):
    from annotator.models import Study

    pk = researcher_api.post("/api/adaptive-studies/", body(paper), format="json").json()["id"]
    researcher_api.post(f"/api/adaptive-studies/{pk}/start/")
    batch = loop.batches(AdaptiveStudy.objects.get(pk=pk))[0]
    answer = researcher_api.delete(f"/api/studies/{batch.pk}/")
    assert answer.status_code == 409 and "adaptive study" in answer.json()["detail"]
    assert Study.objects.filter(pk=batch.pk).exists()
