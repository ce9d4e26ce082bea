"""New accounts start with no role and see nothing until an admin grants one;
superusers see everything whatever their role."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from users.models import User

pytestmark = pytest.mark.django_db

API = ["/api/datasets/", "/api/responses/", "/api/judgments/", "/api/evaluators/", "/api/runs/"]
PAGES = ["/gold/", "/analysis/report/"]


@pytest.fixture
def newcomer(django_user_model):
    return django_user_model.objects.create_user("nora", password="pw-nora-123")


def test_new_accounts_have_no_role(newcomer, django_user_model):
    assert newcomer.role == User.Role.NONE == ""
    assert not newcomer.is_researcher and not newcomer.is_gold_annotator
    assert django_user_model().role == ""  # the model default, not only create_user's


@pytest.mark.parametrize("url", API)
def test_no_role_gets_403_on_the_api(synthetic_data, newcomer, url):
    client = APIClient()
    client.force_login(newcomer)
    answer = client.get(url)
    assert answer.status_code == 403
    assert "results" not in answer.json()


def test_no_role_cannot_write_through_the_api(synthetic_data, newcomer):
    from judging.models import Evaluator

    client = APIClient()
    client.force_login(newcomer)
    before = Evaluator.objects.count()
    answer = client.post("/api/evaluators/", {"name": "x", "kind": "metric"}, format="json")
    assert answer.status_code == 403
    assert Evaluator.objects.count() == before


@pytest.mark.parametrize("url", PAGES)
def test_no_role_gets_403_on_gold_and_reports(synthetic_data, client, newcomer, url):
    client.force_login(newcomer)
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", PAGES)
def test_granting_a_role_opens_the_door(synthetic_data, client, newcomer, url):
    newcomer.role = User.Role.RESEARCHER
    newcomer.save()
    client.force_login(newcomer)
    # the bare report URL opens the default selection, stated in its URL
    assert client.get(url, follow=True).status_code == 200


def test_superuser_without_a_role_still_gets_everything(synthetic_data, client, django_user_model):
    boss = django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")
    assert boss.role == ""
    api = APIClient()
    api.force_login(boss)
    for url in API:
        assert api.get(url).status_code == 200, url
    client.force_login(boss)
    for url in PAGES:
        assert client.get(url, follow=True).status_code == 200, url
    assert client.get(reverse("admin:index")).status_code == 200


def test_user_admin_shows_and_grants_the_role(client, django_user_model, newcomer):
    boss = django_user_model.objects.create_superuser("root", "root@example.org", "pw-root-123")
    client.force_login(boss)
    listing = client.get(reverse("admin:users_user_changelist")).content.decode()
    assert "No role yet (an admin grants one)" in listing  # nora's row
    page = client.get(reverse("admin:users_user_change", args=[newcomer.pk])).content.decode()
    assert 'name="role"' in page and "Gold annotator" in page
    added = client.post(
        reverse("admin:users_user_add"),
        {"username": "ada", "password1": "a-long-pw-4711", "password2": "a-long-pw-4711"},
    )
    assert added.status_code == 302
    assert User.objects.get(username="ada").role == ""  # no role unless one is chosen
    client.post(
        reverse("admin:users_user_add"),
        {
            "username": "rex",
            "password1": "a-long-pw-4711",
            "password2": "a-long-pw-4711",
            "role": "researcher",
        },
    )
    assert User.objects.get(username="rex").is_researcher


def test_demo_admin_is_still_an_admin():
    from demo.setup import DEMO_ADMIN, ensure_demo_admin

    username, password = ensure_demo_admin("pw-demo-123")
    user = User.objects.get(username=username)
    assert username == DEMO_ADMIN
    assert (user.role, user.is_superuser, user.is_staff) == ("admin", True, True)
    assert user.is_researcher and user.check_password("pw-demo-123")
