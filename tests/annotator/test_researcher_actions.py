"""Researcher actions through the admin and the API, each checked by its effect."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_rate_item
from annotator.models import AuditEvent, Participant, Rating, Study
from corpus.models import Dataset, Document
from judging.models import Judgment
from tests.annotator.conftest import finished, make_study
from users.models import default_project

pytestmark = pytest.mark.django_db


# --- Admin --------------------------------------------------------------------------------------


def test_admin_exclusion_asks_for_a_reason_and_excludes(superuser_client, crowd_study):
    worker = finished(crowd_study, "SLOPPY").participant
    url = reverse("admin:annotator_participant_changelist")
    confirm = superuser_client.post(
        url, {"action": "exclude_action", ACTION_CHECKBOX_NAME: [worker.pk]}, follow=True
    )
    page = confirm.content.decode()
    assert "Exclude participants" in page and 'name="action" value="exclude_action"' in page
    done = superuser_client.post(
        url,
        {
            "action": "exclude_action",
            ACTION_CHECKBOX_NAME: [worker.pk],
            "apply": "1",
            "reason": "r = -0.40 with gold, 0.1 s per item",
        },
        follow=True,
    )
    assert "Excluded 1 participant(s)" in done.content.decode()
    assert "No action selected" not in done.content.decode()
    worker.refresh_from_db()
    assert worker.status == Participant.Status.EXCLUDED
    assert not Judgment.objects.filter(rater="SLOPPY").exists()
    event = AuditEvent.objects.get(action="excluded", participant=worker)
    assert event.detail == "r = -0.40 with gold, 0.1 s per item" and event.actor.username == "boss"
    superuser_client.post(url, {"action": "reinstate_action", ACTION_CHECKBOX_NAME: [worker.pk]})
    worker.refresh_from_db()
    assert worker.status == Participant.Status.ACCEPTED
    assert (
        Judgment.objects.filter(rater="SLOPPY").count()
        == Rating.objects.filter(assignment__participant=worker).count()
    )


def test_admin_progress_counts_people_not_items(superuser_client, crowd_study):
    crowd_study.raters_per_task = 10
    crowd_study.save()
    finished(crowd_study, "ONE")
    page = superuser_client.get(
        reverse("admin:annotator_study_change", args=[crowd_study.pk])
    ).content.decode()
    assert "<td>1 / 10</td>" in page  # one participant, not their 18 ratings
    assert "<td>18 / 10</td>" not in page


def test_admin_warns_about_a_local_prolific_link(superuser_client, crowd_study, settings):
    settings.CONCORD_PUBLIC_URL = ""
    settings.ALLOWED_HOSTS = ["*"]
    page = superuser_client.get(
        reverse("admin:annotator_study_change", args=[crowd_study.pk]), HTTP_HOST="127.0.0.1:8000"
    ).content.decode()
    assert "id='local-url-warning'" in page and "id='copy-prolific-url'" in page
    settings.CONCORD_PUBLIC_URL = "https://concord.example.org"
    page = superuser_client.get(
        reverse("admin:annotator_study_change", args=[crowd_study.pk])
    ).content.decode()
    assert "local-url-warning" not in page
    assert f"https://concord.example.org/s/{crowd_study.public_id}/" in page


def test_admin_pause_and_reopen_actions(superuser_client, crowd_study):
    url = reverse("admin:annotator_study_changelist")
    superuser_client.post(url, {"action": "pause_action", ACTION_CHECKBOX_NAME: [crowd_study.pk]})
    crowd_study.refresh_from_db()
    assert crowd_study.status == Study.Status.PAUSED
    superuser_client.post(url, {"action": "open_action", ACTION_CHECKBOX_NAME: [crowd_study.pk]})
    crowd_study.refresh_from_db()
    assert crowd_study.status == Study.Status.OPEN


def test_admin_build_items_after_an_arrival_shows_the_reason(superuser_client, crowd_study):
    check_start_assignment(crowd_study, pid="P1")
    items = sorted(crowd_study.items.values_list("pk", flat=True))
    url = reverse("admin:annotator_study_changelist")
    answer = superuser_client.post(
        url, {"action": "build_items_action", ACTION_CHECKBOX_NAME: [crowd_study.pk]}, follow=True
    )
    assert answer.status_code == 200
    shown = [str(m) for m in answer.context["messages"]]
    assert any("has 1 participant with a task, so its items cannot change" in m for m in shown)
    assert sorted(crowd_study.items.values_list("pk", flat=True)) == items


def test_admin_cannot_delete_human_data(superuser_client, crowd_study):
    assignment = finished(crowd_study, "KEEP")
    for name, pk in (
        ("annotator_participant", assignment.participant_id),
        ("annotator_assignment", assignment.pk),
        ("annotator_rating", Rating.objects.first().pk),
        ("annotator_study", crowd_study.pk),
    ):
        assert superuser_client.post(
            reverse(f"admin:{name}_delete", args=[pk]), {"post": "yes"}
        ).status_code in (
            302,
            403,
        )
    assert Rating.objects.count() == len(assignment.item_order)
    assert Participant.objects.filter(pk=assignment.participant_id).exists()
    assert Study.objects.filter(pk=crowd_study.pk).exists()


def add_form(**changes) -> dict:
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    data = {
        "project": default_project().pk,  # the admin asks which project a study is for
        "name": "Admin study",
        "kind": "crowd",
        "rating_type": "rubric",
        "dataset": dataset.pk,
        "mode": "st",
        "systems": list(dataset.runs.values_list("system_id", flat=True).distinct()),
        "scale_max": 10,
        "scale_labels": "[]",
        "practice_items": "[]",
        "practice_pass": 0,
        "raters_per_task": 2,
        "estimated_minutes": 30,
        "hourly_pay": "9.00",
        "completion_code": "C0DE1234",
        "failed_attention_code": "FA1LED00",
        "guidelines": "Rate.",
        "rubric": "Rubric.",
    }
    return data | changes


def test_admin_refuses_an_empty_selection_before_saving(superuser_client, two_meetings):
    answer = superuser_client.post(reverse("admin:annotator_study_add"), add_form(mode="mt"))
    page = answer.content.decode()
    assert answer.status_code == 200 and "No multi-turn run" in page
    assert "added successfully" not in page and not Study.objects.exists()
    saved = superuser_client.post(reverse("admin:annotator_study_add"), add_form(), follow=True)
    assert "added successfully" in saved.content.decode()
    assert Study.objects.get().items.count() == 2 * 6 * 3


def test_admin_documents_picker_lists_the_datasets_meetings(superuser_client, two_meetings):
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    stranger = Document.objects.create(
        benchmark=dataset.benchmark,
        external_id="meeting_en_dev_099",
        split="dev",
        text="x",
        word_count=1,
    )
    page = superuser_client.get(reverse("admin:annotator_study_add") + f"?dataset={dataset.pk}")
    html = page.content.decode()
    assert "meeting_en_synthetic_001" in html and stranger.external_id not in html
    refused = superuser_client.post(
        reverse("admin:annotator_study_add"), add_form(documents=[stranger.pk])
    )
    assert stranger.external_id in refused.content.decode() and not Study.objects.exists()


# --- API ----------------------------------------------------------------------------------------


def test_api_exclude_and_reinstate_with_a_reason(researcher_api, crowd_study):
    worker = finished(crowd_study, "API1").participant
    url = f"/api/participants/{worker.pk}/"
    assert researcher_api.post(url + "exclude/", {}, format="json").status_code == 400  # no reason
    answer = researcher_api.post(url + "exclude/", {"reason": "failed attention"}, format="json")
    assert answer.status_code == 200 and answer.json()["status"] == "excluded"
    assert not Judgment.objects.filter(rater="API1").exists()
    listed = researcher_api.get(f"/api/participants/?study={crowd_study.pk}&status=excluded").json()
    assert [p["rater"] for p in listed["results"]] == ["API1"]
    assert researcher_api.post(url + "reinstate/", {"reason": "mistake"}, format="json").json()[
        "changed"
    ]
    assert Judgment.objects.filter(rater="API1").exists()
    assert researcher_api.delete(url).status_code == 405


def test_api_pause_close_reopen_refill_and_progress(researcher_api, crowd_study):
    url = f"/api/studies/{crowd_study.pk}/"
    assert researcher_api.post(url + "pause/").json() == {"status": "paused"}
    assert researcher_api.post(url + "close/").json() == {"status": "closed"}
    assert researcher_api.post(url + "open/").json() == {"status": "open"}
    finished(crowd_study, "P1")
    body = researcher_api.get(url).json()
    assert body["progress"]["completed"] == 1 and body["progress"]["wanted"] == 4
    assert [t["completed"] for t in body["progress"]["tasks"]].count(1) == 1
    refill = researcher_api.post(url + "refill/").json()
    assert refill["open_places"] == 3


def test_api_rated_study_answers_409_for_rubric_changes(researcher_api, crowd_study):
    check_rate_item(check_start_assignment(crowd_study, pid="P1"), 1, score=5)
    url = f"/api/studies/{crowd_study.pk}/"
    refused = researcher_api.patch(url, {"rubric": "Something else"}, format="json")
    assert refused.status_code == 409 and "rubric" in refused.json()["detail"]
    crowd_study.refresh_from_db()
    assert crowd_study.rubric != "Something else"
    assert AuditEvent.objects.filter(action="changed").count() == 0
    renamed = researcher_api.patch(url, {"name": "Renamed"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["evaluator"] == "crowd human (Renamed)"
    assert AuditEvent.objects.filter(action="changed", detail="name").count() == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"raters_per_task": 0},
        {"raters_per_task": -3},
        {"scale_max": 4},
        {"scale_labels": "not a list"},
        {"practice_items": [{"question": "only"}], "practice_pass": 1},
        {"attention_checks": True, "failed_attention_code": ""},
        {"rating_type": "pairwise"},
        {"systems": ["No such system"]},
        {"systems": ["Synthetic-Echo\u0000"]},
        {"dataset": 99999},
        {"raters_per_tsak": 3},
        {
            "practice_items": [
                {
                    "question": "q\u0000",
                    "correct_answer": "c",
                    "answer": "a",
                    "expected_min": 1,
                    "expected_max": 2,
                }
            ],
            "practice_pass": 1,
        },
        {"name": "nul\u0000name"},
    ],
)
def test_api_malformed_studies_answer_400(researcher_api, two_meetings, bad):
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    body = {
        "name": "Bad",
        "kind": "crowd",
        "dataset": dataset.pk,
        "mode": "st",
        "systems": ["Synthetic-Echo"],
    } | bad
    answer = researcher_api.post("/api/studies/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert not Study.objects.exists()


def test_api_study_with_participants_cannot_be_deleted(researcher_api, two_meetings):
    study = make_study(name="Keep me")
    check_start_assignment(study, pid="P1")
    assert researcher_api.delete(f"/api/studies/{study.pk}/").status_code == 409
    assert Study.objects.filter(pk=study.pk).exists()


def test_an_unrated_study_is_deleted_with_its_empty_evaluator(
    researcher_api, superuser_client, two_meetings
):
    from judging.models import Evaluator

    first, second = make_study(name="Draft one"), make_study(name="Draft two")
    evaluators = [Study.objects.get(pk=s.pk).evaluator_id for s in (first, second)]
    assert researcher_api.delete(f"/api/studies/{first.pk}/").status_code == 204
    superuser_client.post(
        reverse("admin:annotator_study_delete", args=[second.pk]), {"post": "yes"}
    )
    assert not Study.objects.exists()
    assert not Evaluator.objects.filter(pk__in=evaluators).exists()
