"""An adaptive study made in a project that is not the default one, on that
project's runs, through the API and the console, by a member of that project
only and by a member of two."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from adaptive.models import AdaptiveStudy
from generation.models import GenerationRun, System
from tests.adaptive.test_api import body
from tests.adaptive.test_pages import form_data
from users.models import Membership, Project, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def other(paper):
    """The paper's runs and systems moved to project "other"."""
    project = Project.objects.create(name="Other team", slug="other")
    GenerationRun.objects.filter(system__in=paper["systems"]).update(project=project)
    System.objects.filter(pk__in=[s.pk for s in paper["systems"]]).update(project=project)
    return project


def member(username: str, *projects: Project) -> User:
    user = User.objects.create_user(username, password=f"pw-{username}-123", role="researcher")
    user.memberships.all().delete()
    for project in projects:
        Membership.objects.create(project=project, user=user, role="researcher")
    return user


@pytest.mark.parametrize("of_two", [False, True], ids=["member of it only", "member of two"])
def test_an_adaptive_study_through_the_api_in_another_project(paper, other, researcher, of_two):
    from users.models import default_project

    user = member("olga", other, default_project()) if of_two else member("olga", other)
    api = APIClient()
    api.force_login(user)
    answer = api.post("/api/adaptive-studies/", body(paper, project="other"), format="json")
    assert answer.status_code == 201, answer.content
    adaptive = AdaptiveStudy.objects.get(pk=answer.json()["id"])
    assert adaptive.project == other and adaptive.plan["places_median"] > 0


@pytest.mark.parametrize("of_two", [False, True], ids=["member of it only", "member of two"])
def test_an_adaptive_study_from_the_console_in_another_project(paper, other, of_two):
    from users.models import default_project

    user = member("olga", other, default_project()) if of_two else member("olga", other)
    browser = Client()
    browser.force_login(user)
    answer = browser.post(reverse("console:adaptive_new"), form_data(paper, project=other.pk))
    assert answer.status_code == 302, answer.context["form"].errors
    adaptive = AdaptiveStudy.objects.get(name="Adaptive from the console")
    assert adaptive.project == other
