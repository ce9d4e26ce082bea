"""Studies through the REST API."""

import pytest
from rest_framework.test import APIClient

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_rate_item
from annotator.models import Study
from corpus.models import Dataset

pytestmark = pytest.mark.django_db


def payload(**changes):
    data = {
        "name": "API study",
        "kind": "crowd",
        "dataset": Dataset.objects.get(version="qa", language="en", split="test2").pk,
        "mode": "st",
        "systems": ["Synthetic-Echo", "Synthetic-Terse"],
        "raters_per_task": 3,
    }
    return data | changes


def test_create_build_open_and_arrive(researcher_api, two_meetings):
    created = researcher_api.post("/api/studies/", payload(), format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["item_count"] == 2 * 6 * 2 and body["task_count"] == 2
    assert "PROLIFIC_PID={{%PROLIFIC_PID%}}" in body["participant_url"]
    assert researcher_api.post(f"/api/studies/{body['id']}/open/").status_code == 200
    study = Study.objects.get(pk=body["id"])
    assert study.is_open
    check_start_assignment(study, pid="P1")
    quality = researcher_api.get(f"/api/studies/{body['id']}/quality/").json()
    assert quality[0]["rater"] == "P1" and quality[0]["ratings"] == 0
    export = researcher_api.get(f"/api/studies/{body['id']}/export/tidy/")
    assert export["Content-Type"] == "text/csv"
    assert export.content.startswith(b'"study","meeting"')


def test_selection_without_responses_is_refused_and_nothing_saved(researcher_api, two_meetings):
    answer = researcher_api.post("/api/studies/", payload(mode="mt"), format="json")
    assert answer.status_code == 400
    assert "No multi-turn run" in answer.json()["detail"]
    assert not Study.objects.exists()


def test_items_are_frozen_after_the_first_rating(researcher_api, two_meetings):
    study_id = researcher_api.post("/api/studies/", payload(), format="json").json()["id"]
    researcher_api.post(f"/api/studies/{study_id}/open/")
    study = Study.objects.get(pk=study_id)
    check_rate_item(check_start_assignment(study, pid="P1"), 1, score=5)
    refused = researcher_api.patch(
        f"/api/studies/{study_id}/", {"systems": ["Synthetic-Echo"]}, format="json"
    )
    assert refused.status_code == 409 and "already has ratings" in refused.json()["detail"]
    assert (
        researcher_api.patch(
            f"/api/studies/{study_id}/", {"estimated_minutes": 25}, format="json"
        ).status_code
        == 200
    )
    assert researcher_api.delete(f"/api/studies/{study_id}/").status_code == 409
    assert study.items.count() == 24


def test_rebuilding_after_an_arrival_answers_409_with_the_reason(researcher_api, two_meetings):
    study_id = researcher_api.post("/api/studies/", payload(), format="json").json()["id"]
    researcher_api.post(f"/api/studies/{study_id}/open/")
    study = Study.objects.get(pk=study_id)
    assert researcher_api.post(f"/api/studies/{study_id}/build/").status_code == 200  # nobody yet
    items = sorted(study.items.values_list("pk", flat=True))
    check_start_assignment(study, pid="P1")
    refused = researcher_api.post(f"/api/studies/{study_id}/build/")
    assert refused.status_code == 409
    assert refused.json()["code"] == "study_conflict"
    assert "has 1 participant with a task" in refused.json()["detail"]
    changed = researcher_api.patch(
        f"/api/studies/{study_id}/", {"systems": ["Synthetic-Echo"]}, format="json"
    )
    assert changed.status_code == 409 and "participant with a task" in changed.json()["detail"]
    assert sorted(study.items.values_list("pk", flat=True)) == items


def test_studies_are_for_researchers_only(two_meetings, gold_annotator):
    assert APIClient().get("/api/studies/").status_code == 401
    client = APIClient()
    client.force_login(gold_annotator)
    assert client.get("/api/studies/").status_code == 403
