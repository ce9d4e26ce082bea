"""Gold annotators see only the studies they are assigned to, and a site with
one project puts each new researcher in it. Apart from test_projects.py,
whose tests share one module's data: these build their own, or need a site
with one project."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from annotator.models import Participant, Study
from tests.annotator.conftest import make_study
from users.models import Project, User

pytestmark = pytest.mark.django_db


def test_gold_annotators_see_only_the_studies_they_are_assigned_to(two_meetings, gold_annotator):
    mine = make_study(name="Gold mine", kind=Study.Kind.GOLD, raters=1)
    theirs = make_study(name="Gold theirs", kind=Study.Kind.GOLD, raters=1)
    mine.gold_annotators.add(gold_annotator)
    browser = Client()
    browser.force_login(gold_annotator)
    page = browser.get("/gold/").content.decode()
    assert "Gold mine" in page and "Gold theirs" not in page
    assert browser.post(f"/gold/{theirs.pk}/start/").status_code == 404
    assert not Participant.objects.filter(study=theirs).exists()
    started = browser.post(f"/gold/{mine.pk}/start/")
    assert started.status_code == 302
    assert Participant.objects.filter(study=mine, user=gold_annotator).exists()


def test_gold_annotators_are_assigned_through_the_api(two_meetings, researcher, gold_annotator):
    study = make_study(name="Gold by API", kind=Study.Kind.GOLD, raters=1)
    client = APIClient()
    client.force_login(researcher)
    answer = client.patch(f"/api/studies/{study.pk}/", {"gold_annotators": ["gina"]}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["gold_annotators"] == ["gina"]
    assert list(study.gold_annotators.all()) == [gold_annotator]
    wrong = client.patch(f"/api/studies/{study.pk}/", {"gold_annotators": ["rita"]}, format="json")
    assert wrong.status_code == 400  # a researcher is no gold annotator


def test_one_project_installs_notice_nothing():
    first = User.objects.create_user("first", role="researcher")
    assert [m.project.slug for m in first.memberships.all()] == ["default"]
    assert User.objects.create_user("nobody").memberships.count() == 0  # no role, no project
    Project.objects.create(name="Second", slug="second")
    later = User.objects.create_user("later", role="researcher")
    assert later.memberships.count() == 0  # with two projects an owner adds members
