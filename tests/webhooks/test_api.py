"""/api/webhooks/: endpoints of the user's projects (another project's are a
404), the secret shown once, deliveries with their attempts, redeliver, a
test event, the admin's pages and actions."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.webhooks.conftest import project_with
from users.models import ProjectRole, User
from webhooks import services
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def lab(researcher):
    return project_with(researcher, "lab")


@pytest.fixture
def outsider():
    user = User.objects.create_user("oscar", password="pw-oscar-123", role="researcher")
    project_with(user, "rival")
    return user


def create(client, **fields):
    """rita is in the default project too (a single-team install's): she names hers."""
    body = {
        "url": "https://hooks.example.org/concord",
        "events": ["run.finished"],
        "project": "lab",
        **fields,
    }
    return client.post("/api/webhooks/", body, format="json")


def test_create_shows_the_secret_once_and_never_again(researcher, lab):
    api = client_for(researcher)
    made = create(api, project="lab", events=["run.failed", "run.finished", "run.failed"])
    assert made.status_code == 201, made.json()
    body = made.json()
    assert body["secret"].startswith("whsec_") and len(body["secret"]) > 40
    assert body["project"] == "lab" and body["events"] == ["run.failed", "run.finished"]
    assert body["created_by"] == "rita"
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == body["secret"]
    listed = api.get("/api/webhooks/").json()["results"]
    assert [e["id"] for e in listed] == [endpoint.pk]
    assert "secret" not in listed[0]
    assert "secret" not in api.get(f"/api/webhooks/{endpoint.pk}/").json()
    rotated = api.post(f"/api/webhooks/{endpoint.pk}/rotate-secret/").json()["secret"]
    endpoint.refresh_from_db()
    assert rotated == endpoint.secret != body["secret"]


def test_create_refuses_what_is_wrong(researcher, lab, settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    api = client_for(researcher)
    refused = {
        "url": create(api, url="http://169.254.169.254/latest/").json()["url"][0],
        "scheme": create(api, url="ftp://example.org/").json()["url"][0],
        "events": create(api, events=["webhook.test"]).json()["events"],
        "none": create(api, events=[]).json()["events"][0],
        "unknown": create(api, secret="mine").json()["secret"],
        "project": create(api, project="rival").json()["project"][0],
    }
    assert "link-local" in refused["url"]
    assert "Enter a valid URL" in refused["scheme"] or "http" in refused["scheme"]
    assert "not a valid choice" in str(refused["events"])
    assert "empty" in refused["none"]
    assert refused["unknown"] == "Unknown field."
    assert refused["project"].startswith("No project 'rival'.")
    assert not WebhookEndpoint.objects.exists()


def test_another_projects_member_gets_404_and_a_viewer_403(researcher, lab, outsider):
    endpoint = WebhookEndpoint.objects.create(project=lab, url="https://a.example/", events=[])
    delivery = services.do_send_test(endpoint, researcher)
    stranger = client_for(outsider)
    assert stranger.get("/api/webhooks/").json()["results"] == []
    for method, path in [
        ("get", ""),
        ("patch", ""),
        ("delete", ""),
        ("get", "deliveries/"),
        ("post", "test/"),
        ("post", "rotate-secret/"),
    ]:
        answer = getattr(stranger, method)(f"/api/webhooks/{endpoint.pk}/{path}", {}, format="json")
        assert answer.status_code == 404, (method, path)
    answer = stranger.post(
        f"/api/webhooks/{endpoint.pk}/redeliver/", {"delivery": delivery.pk}, format="json"
    )
    assert answer.status_code == 404
    viewer = User.objects.create_user("vera", password="pw-vera-1234", role="researcher")
    project_with(viewer, "lab", role=ProjectRole.VIEWER)
    reader = client_for(viewer)
    assert reader.get(f"/api/webhooks/{endpoint.pk}/").status_code == 200
    assert reader.get(f"/api/webhooks/{endpoint.pk}/deliveries/").status_code == 200
    assert reader.patch(f"/api/webhooks/{endpoint.pk}/", {"active": False}).status_code == 403
    assert reader.delete(f"/api/webhooks/{endpoint.pk}/").status_code == 403
    assert reader.post(f"/api/webhooks/{endpoint.pk}/test/").status_code == 403
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk, active=True).exists()


def test_update_and_delete(researcher, lab):
    api = client_for(researcher)
    made = create(api).json()
    changed = api.patch(
        f"/api/webhooks/{made['id']}/",
        {"active": False, "events": ["study.completed"], "project": "lab"},
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json()["active"] is False and changed.json()["events"] == ["study.completed"]
    project_with(researcher, "second")
    moved = api.patch(f"/api/webhooks/{made['id']}/", {"project": "second"}, format="json")
    assert moved.status_code == 400 and "stays in its project" in str(moved.json())
    assert api.delete(f"/api/webhooks/{made['id']}/").status_code == 204
    assert not WebhookEndpoint.objects.exists()


def test_deliveries_with_attempts_redeliver_and_a_test_event(researcher, lab, receiver):
    api = client_for(researcher)
    made = create(api, url=receiver.url, events=["run.failed"]).json()
    receiver.secret = made["secret"]
    receiver.plan = [502]
    sent = api.post(f"/api/webhooks/{made['id']}/test/")
    assert sent.status_code == 201 and sent.json()["event_type"] == "webhook.test"
    delivery = WebhookDelivery.objects.get()
    assert services.attempt(delivery.pk) == "pending"
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed", next_attempt_at=None)
    again = api.post(
        f"/api/webhooks/{made['id']}/redeliver/", {"delivery": delivery.pk}, format="json"
    )
    assert again.status_code == 200 and again.json()["status"] == "pending"
    assert services.attempt(delivery.pk) == "delivered"
    listed = api.get(f"/api/webhooks/{made['id']}/deliveries/").json()
    assert listed["count"] == 1
    [row] = listed["results"]
    assert (row["status"], row["attempts"], row["event_id"]) == (
        "delivered",
        2,
        str(delivery.event_id),
    )
    assert [(a["number"], a["status_code"]) for a in row["attempt_log"]] == [(1, 502), (2, 200)]
    assert row["payload"]["data"]["sent_by"] == "rita"
    assert all(r.verified for r in receiver.received)
    assert "secret" not in str(listed)


def test_admin_pages_and_actions(admin_client, researcher, lab, receiver):
    endpoint = WebhookEndpoint.objects.create(project=lab, url=receiver.url, events=["run.failed"])
    added = admin_client.post(
        "/admin/webhooks/webhookendpoint/add/",
        {
            "project": lab.pk,
            "url": "https://hooks.example.org/x",
            "events": ["run.failed", "study.completed"],
            "active": "on",
        },
        follow=True,
    )
    made = WebhookEndpoint.objects.get(url="https://hooks.example.org/x")
    assert made.events == ["run.failed", "study.completed"]
    assert f"shown only now: {made.secret}" in added.content.decode()
    admin_client.post(
        "/admin/webhooks/webhookendpoint/",
        {"action": "send_test_event", "_selected_action": [endpoint.pk]},
    )
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    receiver.secret = endpoint.secret
    assert services.attempt(delivery.pk) == "delivered"
    page = admin_client.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/").content
    assert b"webhook.test" in page and endpoint.secret.encode() not in page
    page = admin_client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/").content
    assert b"attempt" in page.lower() and b"&quot;webhook.test&quot;" in page
    assert admin_client.get("/admin/webhooks/webhookdelivery/").status_code == 200
    admin_client.post(
        "/admin/webhooks/webhookdelivery/",
        {"action": "redeliver", "_selected_action": [delivery.pk]},
    )
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.max_attempts == 7


def test_a_form_body_without_active_makes_an_active_endpoint(researcher, lab):
    """DRF reads a checkbox missing from a multipart body as false: `active` left
    out means active, in a form body as in JSON; a PATCH without it keeps it."""
    api = client_for(researcher)
    body = {"url": "https://hooks.example.org/form", "events": ["run.finished"], "project": "lab"}
    made = api.post("/api/webhooks/", body, format="multipart")
    assert made.status_code == 201, made.content
    endpoint = WebhookEndpoint.objects.get()
    assert made.json()["active"] is True and endpoint.active
    api.patch(f"/api/webhooks/{endpoint.pk}/", {"active": "false"}, format="multipart")
    endpoint.refresh_from_db()
    assert not endpoint.active
    api.patch(f"/api/webhooks/{endpoint.pk}/", {"description": "x"}, format="multipart")
    endpoint.refresh_from_db()
    assert not endpoint.active and endpoint.description == "x"
