"""Every project is a first-class project: what the default project can do,
another can, done by a member of that project only, of two projects, and
refused to its viewers."""

from __future__ import annotations

import pytest

from annotator.models import Study
from corpus.models import Dataset
from tests.users.test_projects import api_as, member, two_projects  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_researcher_of_another_project_makes_a_study_on_its_runs(two_projects):  # noqa: F811
    outsider = api_as(two_projects["outsider"])
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    answer = outsider.post(
        "/api/studies/",
        {"name": "theirs", "dataset": dataset.pk, "systems": ["other-served"],
         "completion_code": "C9"},
        format="json",
    )  # fmt: skip
    assert answer.status_code == 201, answer.content
    study = Study.objects.get(name="theirs")
    assert study.project == two_projects["other"]
    assert study.items.count() == dataset.question_texts.count()


def study_form(dataset, systems, **changes) -> dict:
    data = {
        "name": "Console study of the other team",
        "kind": "crowd",
        "rating_type": "rubric",
        "dataset": dataset.pk,
        "mode": "st",
        "systems": [s.pk for s in systems],
        "raters_per_task": 2,
        "scale_max": 10,
        "estimated_minutes": 30,
        "completion_code": "C0DE1234",
    }
    return data | changes


@pytest.mark.parametrize("of_two", [False, True], ids=["member of it only", "member of two"])
def test_a_study_from_the_console_in_another_project(two_projects, of_two):  # noqa: F811
    from django.test import Client
    from django.urls import reverse

    from generation.models import System
    from users.models import Membership

    user = two_projects["outsider"]
    if of_two:
        user = two_projects["insider"]
        Membership.objects.create(project=two_projects["other"], user=user, role="researcher")
    browser = Client()
    browser.force_login(user)
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    theirs = System.objects.filter(project=two_projects["other"])
    form = study_form(dataset, theirs)
    if of_two:
        form["project"] = two_projects["other"].pk
    answer = browser.post(reverse("console:study_new"), form)
    assert answer.status_code == 302, answer.context["form"].errors
    study = Study.objects.get(name=form["name"])
    assert study.project == two_projects["other"] and study.items.exists()


def test_a_site_admin_adds_a_study_to_another_project(two_projects):  # noqa: F811
    from django.test import Client
    from django.urls import reverse

    from generation.models import System
    from tests.annotator.test_researcher_actions import add_form
    from users.models import User

    boss = User.objects.create_superuser("root2", password="pw-root-123456")
    browser = Client()
    browser.force_login(boss)
    theirs = list(System.objects.filter(project=two_projects["other"]).values_list("pk", flat=True))
    form = add_form(project=two_projects["other"].pk, systems=theirs, name="Admin, other team")
    saved = browser.post(reverse("admin:annotator_study_add"), form, follow=True)
    assert "added successfully" in saved.content.decode(), saved.content.decode()[:3000]
    study = Study.objects.get(name="Admin, other team")
    assert study.project == two_projects["other"] and study.items.exists()
