"""The admin as a project's members see it (users.admin_scope): their
projects' rows and the shared ones, read only; site admins as before."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.authtoken.models import TokenProxy

from llm.models import LLMCall
from tests.conftest import database_snapshot
from tests.users.test_projects import (  # noqa: F401 (fixtures)
    member,
    two_projects,
    two_projects_once,
)
from users.admin_scope import ProjectScopedAdmin
from users.models import Membership, Project, User
from users.projects import scope

pytestmark = pytest.mark.django_db

# the site admins' own pages: accounts, groups, API tokens, projects and the ledger of
# every call
SITE_ADMINS_ONLY = {User, Group, TokenProxy, Project, LLMCall}


def scoped_admins() -> list[tuple[type, ProjectScopedAdmin]]:
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if isinstance(model_admin, ProjectScopedAdmin)
    ]


def test_every_model_admin_is_scoped_or_the_site_admins_own():
    unclassified = [
        model.__name__
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, ProjectScopedAdmin) and model not in SITE_ADMINS_ONLY
    ]
    assert unclassified == [], "say how these rows reach their project (project_path)"


def url(model, name: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{name}", args=args)


def test_a_viewer_reads_his_projects_rows_and_changes_nothing(two_projects):  # noqa: F811
    outsider = member("vicky", two_projects["other"], role="viewer")
    browser = Client()
    browser.force_login(outsider)
    assert browser.get(reverse("admin:index")).status_code == 200
    before = database_snapshot()
    listed = 0
    for model, model_admin in scoped_admins():
        everything = model._default_manager.all()
        if model_admin.project_path is None:
            mine, theirs = everything, everything.none()
        else:
            mine = scope(everything, outsider, model_admin.project_path,
                         shared=model_admin.shared_rows)  # fmt: skip
            theirs = everything.exclude(pk__in=mine.values("pk"))
        changelist = browser.get(url(model, "changelist"))
        assert changelist.status_code == 200, model.__name__
        page = changelist.content.decode()
        assert 'name="action"' not in page, f"{model.__name__}: a member runs no action"
        assert browser.get(url(model, "add")).status_code == 403, model.__name__
        own = mine.order_by("pk").first()
        if own is not None:
            listed += 1
            view = browser.get(url(model, "change", own.pk))
            assert view.status_code == 200, model.__name__
            assert 'name="_save"' not in view.content.decode(), model.__name__
            assert browser.post(url(model, "change", own.pk), {}).status_code == 403
            # refused (403), or sent back to the row as a judged row is (nothing deleted:
            # the snapshot below)
            deleting = browser.post(url(model, "delete", own.pk), {"post": "yes"})
            assert deleting.status_code in (302, 403), model.__name__
            if deleting.status_code == 302:
                assert deleting["Location"] == url(model, "change", own.pk)
        other = theirs.order_by("pk").first()
        if other is not None:
            # another project's row: answered as one that does not exist
            answer = browser.get(url(model, "change", other.pk))
            assert answer.status_code == 302 and answer["Location"] == reverse("admin:index")
            assert browser.get(url(model, "history", other.pk)).status_code in (302, 404)
    assert listed >= 8  # the fixture gives the other project runs, a study, a judge ...
    for model in SITE_ADMINS_ONLY:
        assert browser.get(url(model, "changelist")).status_code == 403, model.__name__
    assert database_snapshot() == before


def test_the_changelist_lists_only_the_members_rows(two_projects):  # noqa: F811
    from annotator.models import Study

    browser = Client()
    browser.force_login(two_projects["outsider"])
    page = browser.get(url(Study, "changelist")).content.decode()
    assert "other team&#x27;s study" in page or "other team's study" in page
    assert "Crowd pilot" not in page  # the default project's


def test_who_may_open_the_admin(two_projects, admin_user, gold_annotator):  # noqa: F811
    browser = Client()
    nobody = User.objects.create_user("noproj", role="researcher")
    nobody.memberships.all().delete()
    for person in (nobody, gold_annotator):
        browser.force_login(person)
        assert browser.get(reverse("admin:index")).status_code == 302  # to the admin's sign-in
    browser.force_login(admin_user)
    from annotator.models import Study

    page = browser.get(url(Study, "changelist")).content.decode()
    assert "Crowd pilot" in page and "study" in page  # every project's
    assert 'name="action"' in page


def system_form(project: str, name: str, **more) -> dict:
    return {
        "project": Project.objects.get(slug=project).pk if project else "",
        "name": name,
        "model_name": "m",
        "backend": "openai",
        "config": '{"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}',
        "description": "",
        **more,
    }


def test_a_researcher_adds_and_changes_settings_in_his_projects_only(two_projects):  # noqa: F811
    from annotator.models import Study
    from generation.models import System

    researcher = two_projects["outsider"]  # a researcher of "other"
    browser = Client()
    browser.force_login(researcher)
    added = browser.post(url(System, "add"), system_form("other", "other-lab-model"))
    assert added.status_code == 302, added.content.decode()[-2000:]
    made = System.objects.get(name="other-lab-model")
    assert made.project == two_projects["other"]
    # another project (or none: shared) is not his to choose
    before = database_snapshot()
    for project in ("default", ""):
        refused = browser.post(url(System, "add"), system_form(project, "sneaky"))
        assert refused.status_code == 200 and "errorlist" in refused.content.decode()
    assert database_snapshot() == before
    # his row changes (not its project); another project's does not exist here
    changed = browser.post(
        url(System, "change", made.pk),
        system_form("default", "other-lab-model", description="vLLM on gpu2"),
    )
    assert changed.status_code == 302
    made.refresh_from_db()
    assert made.description == "vLLM on gpu2" and made.project == two_projects["other"]
    theirs = System.objects.filter(project=two_projects["default"]).first()
    assert browser.get(url(System, "change", theirs.pk)).status_code == 302
    before = database_snapshot()
    assert browser.post(
        url(System, "change", theirs.pk), system_form("other", "x")
    ).status_code in (
        302,
        403,
    )
    # a shared row (the release's) is read, not changed
    shared = System.objects.filter(project__isnull=True).first()
    assert (
        browser.post(url(System, "change", shared.pk), system_form("other", "x")).status_code == 403
    )
    assert database_snapshot() == before
    # a study's settings: another project's system is refused for a member of both
    Membership.objects.create(project=two_projects["default"], user=researcher, role="viewer")
    study = Study.objects.get(project=two_projects["other"])
    page = browser.get(url(Study, "change", study.pk))
    assert page.status_code == 200 and 'name="_save"' in page.content.decode()
    request = RequestFactory().post("/")
    request.user = researcher
    study_admin = admin.site._registry[Study]
    form_class = study_admin.get_form(request, study, change=True)
    shown = form_class(instance=study)
    data = {name: shown[name].value() for name in shown.fields}
    data = {k: ([] if v is None and k in ("systems", "documents") else v) for k, v in data.items()}
    data = {k: v for k, v in data.items() if v is not None}
    data["systems"] = [theirs.pk]  # offered: he views the default project
    sent = form_class(data=data, instance=study)
    assert not sent.is_valid()
    assert "belongs to another project" in str(sent.errors), sent.errors


def test_a_viewer_adds_and_changes_nothing(two_projects):  # noqa: F811
    from generation.models import System

    viewer = member("vicky", two_projects["other"], role="viewer")
    browser = Client()
    browser.force_login(viewer)
    before = database_snapshot()
    assert browser.post(url(System, "add"), system_form("other", "v-model")).status_code == 403
    own = System.objects.filter(project=two_projects["other"]).first()
    assert browser.post(url(System, "change", own.pk), system_form("other", "v")).status_code == 403
    assert database_snapshot() == before


def test_a_site_admin_chooses_the_project_of_a_new_system(two_projects, admin_user):  # noqa: F811
    from generation.models import System

    browser = Client()
    browser.force_login(admin_user)
    assert browser.post(url(System, "add"), system_form("other", "placed")).status_code == 302
    assert System.objects.get(name="placed").project == two_projects["other"]
    assert browser.post(url(System, "add"), system_form("", "for all")).status_code == 302
    assert System.objects.get(name="for all").project is None  # shared
