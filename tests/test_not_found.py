"""A mistyped participant, task or study link answers the product's 404 page,
never Django's technical page, with DEBUG on (the demo) as with it off
(core.not_found)."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from tests.annotator.conftest import make_study

pytestmark = pytest.mark.django_db

TECHNICAL = ("URLconf", "Page not found at", "Django tried these URL patterns", "DEBUG = True")
PARTICIPANT_TEXT = "Open the study again from Prolific"


def assert_friendly(answer, participant: bool) -> str:
    html = answer.content.decode()
    assert answer.status_code == 404
    assert not any(marker in html for marker in TECHNICAL), html[:300]
    assert "concord/concord.css" in html and 'class="code">404' in html
    assert (PARTICIPANT_TEXT in html) == participant
    return html


@pytest.mark.parametrize("debug", [True, False])
def test_participant_links_with_a_mistake(two_meetings, settings, debug):
    settings.DEBUG = debug
    study = make_study()
    anonymous = Client()
    for path in (
        f"/s/{uuid.uuid4()}/?PROLIFIC_PID=P1",  # a study that does not exist
        f"/s/{str(study.public_id)[:-3]}/?PROLIFIC_PID=P1",  # cut short: no UUID at all
        f"/s/{study.public_id}x/",
        "/r/not-a-token/",
        "/r/not-a-token/item/1/",
        "/r/not-a-token/finish/",
        "/r/not-a-token/done/",
    ):
        html = assert_friendly(anonymous.get(path), participant=True)
        # no sign-in asked, and it says what to do and whom to ask
        assert "researchers" in html and "/accounts/login/" not in html, path
    # the right link still works
    assert anonymous.get(f"/s/{study.public_id}/?PROLIFIC_PID=P1").status_code == 200


@pytest.mark.parametrize("debug", [True, False])
def test_researcher_links_with_a_mistake(two_meetings, settings, researcher, debug):
    settings.DEBUG = debug
    client = Client()
    client.force_login(researcher)
    for path in ("/console/studies/999999/", "/console/runs/judging/999999/"):
        html = assert_friendly(client.get(path), participant=False)
        assert "Your start page" in html
    # an anonymous visitor is asked to sign in first, as before
    assert Client().get("/console/studies/999999/").status_code == 302


def test_other_addresses_and_the_api(settings, client):
    settings.DEBUG = False
    assert_friendly(client.get("/no-such-page/"), participant=False)
    api = client.get("/api/no-such-thing/")
    assert api.status_code == 404 and api.json() == {"detail": "Not found.", "code": "not_found"}
