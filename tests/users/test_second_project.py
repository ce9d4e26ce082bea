"""Every project is a first-class project: what the default project can do,
another can, done by a member of that project only, of two projects, and
refused to its viewers."""

from __future__ import annotations

import pytest

from annotator.models import Study
from corpus.models import Dataset
from tests.users.test_projects import (  # noqa: F401 (fixtures)
    api_as,
    member,
    two_projects,
    two_projects_once,
)

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


def names_of_the_default_project() -> set[str]:
    """What another project's member must never read: the default project's
    studies, systems, evaluators, adaptive studies and webhooks by name, and
    the project itself."""
    from adaptive.models import AdaptiveStudy
    from generation.models import System
    from judging.models import Evaluator
    from users.models import default_project
    from webhooks.models import WebhookEndpoint

    project = default_project()
    names = {str(project)}
    for model in (Study, System, Evaluator, AdaptiveStudy, WebhookEndpoint):
        names |= {str(obj) for obj in model.objects.filter(project=project)}
    return names


def test_no_admin_filter_lists_another_projects_objects(two_projects):  # noqa: F811
    import re

    from django.contrib import admin
    from django.test import Client
    from django.urls import reverse
    from django.utils.html import escape

    from users.admin_scope import ProjectScopedAdmin
    from webhooks.models import WebhookEndpoint

    WebhookEndpoint.objects.create(
        project=two_projects["other"], url="https://hooks.example.org/o", events=["run.failed"]
    )
    secret = names_of_the_default_project()
    assert "Crowd pilot" in secret and "team-served" in secret
    browser = Client()
    browser.force_login(two_projects["outsider"])
    walked, leaks = 0, []
    for model, model_admin in admin.site._registry.items():
        if not isinstance(model_admin, ProjectScopedAdmin) or not model_admin.list_filter:
            continue
        changelist = f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
        page = browser.get(reverse(changelist)).content.decode()
        sidebar = re.search(r'id="changelist-filter".*?</nav>', page, re.S)
        # (no sidebar: every filter had a single choice or none)
        found = sidebar.group(0) if sidebar else ""
        links = re.findall(r'<a href="\?[^"]*"[^>]*>(.*?)</a>', found, re.S)
        leaks += [f"{model.__name__}: {text}" for text in links if text.strip() in
                  {escape(name) for name in secret}]  # fmt: skip
        walked += 1
    assert walked >= 15, walked
    assert not leaks, leaks


def test_a_filter_on_another_projects_object_answers_as_a_missing_one(two_projects):  # noqa: F811
    """Every API filter that names an object: another project's object gets the
    answer an id that names nothing gets (a 400 naming the filter), never an
    empty list that tells it exists."""
    import yaml
    from django.urls import resolve
    from django_filters import ModelChoiceFilter
    from rest_framework.test import APIClient

    from core.filters import FilterBackend
    from users.models import default_project
    from users.projects import project_path_of

    outsider = api_as(two_projects["outsider"])
    spec = yaml.safe_load(APIClient().get("/api/schema/").content)
    walked = []
    for path, operations in sorted(spec["paths"].items()):
        if "get" not in operations or "{" in path or not path.startswith("/api/"):
            continue
        match = resolve(path)
        view = match.func.cls(**match.func.initkwargs, action="list")
        queryset = getattr(view, "queryset", None)
        if queryset is None:
            continue
        filterset = FilterBackend().get_filterset_class(view, queryset)
        if filterset is None:
            continue
        for name, declared in filterset.base_filters.items():
            if not isinstance(declared, ModelChoiceFilter):
                continue
            model = declared.queryset.model
            where = project_path_of(model)
            if where is None:
                continue
            theirs = model.objects.filter(**{where: default_project()}).order_by("pk").first()
            assert theirs is not None, (path, name)
            answer = outsider.get(path, {name: theirs.pk})
            missing = outsider.get(path, {name: 987654321})
            assert answer.status_code == missing.status_code == 400, (path, name, answer.content)
            assert answer.json().keys() == missing.json().keys(), (path, name)
            walked.append(f"{path}?{name}")
    assert {"/api/judgments/?response", "/api/participants/?study", "/api/responses/?run",
            "/api/judge-items/?run"} <= set(walked), walked  # fmt: skip
