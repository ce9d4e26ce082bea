"""The admin as a project's members see it (users.admin_scope): their
projects' rows and the shared ones, read only; site admins as before."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import TokenProxy

from llm.models import LLMCall
from tests.conftest import database_snapshot
from tests.users.test_projects import member, two_projects  # noqa: F401 (a fixture)
from users.admin_scope import ProjectReadableAdmin
from users.models import Project, User
from users.projects import scope

pytestmark = pytest.mark.django_db

# the site admins' own pages: accounts, groups, API tokens, projects and the ledger of
# every call
SITE_ADMINS_ONLY = {User, Group, TokenProxy, Project, LLMCall}


def scoped_admins() -> list[tuple[type, ProjectReadableAdmin]]:
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if isinstance(model_admin, ProjectReadableAdmin)
    ]


def test_every_model_admin_is_scoped_or_the_site_admins_own():
    unclassified = [
        model.__name__
        for model, model_admin in admin.site._registry.items()
        if not isinstance(model_admin, ProjectReadableAdmin) and model not in SITE_ADMINS_ONLY
    ]
    assert unclassified == [], "say how these rows reach their project (project_path)"


def url(model, name: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{name}", args=args)


def test_a_member_reads_his_projects_rows_and_changes_nothing(two_projects):  # noqa: F811
    outsider = two_projects["outsider"]  # of project "other"
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
