"""Owners manage their project's members through the API; researchers and
viewers read them; another project's is not found."""

import pytest
from rest_framework.test import APIClient

from users.models import Membership, Project, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(db):
    lab = Project.objects.create(name="Lab", slug="lab")
    Project.objects.create(name="Elsewhere", slug="elsewhere")
    people = {}
    for name, role in [("olivia", "owner"), ("ravi", "researcher"), ("vic", "viewer")]:
        people[name] = User.objects.create_user(name, role="researcher")
        Membership.objects.create(project=lab, user=people[name], role=role)
    people["newbie"] = User.objects.create_user("newbie", role="researcher")
    people["pending"] = User.objects.create_user("pending")  # no site role yet
    return lab, people


def client_of(user):
    client = APIClient()
    client.force_login(user)
    return client


def test_members_read_their_projects_only(team):
    lab, people = team
    answer = client_of(people["vic"]).get("/api/projects/")
    assert [p["slug"] for p in answer.json()["results"]] == ["lab"]
    assert answer.json()["results"][0]["my_role"] == "viewer"
    assert client_of(people["vic"]).get("/api/projects/elsewhere/").status_code == 404


def test_an_owner_adds_changes_and_removes_members(team):
    lab, people = team
    owner = client_of(people["olivia"])
    added = owner.post(
        "/api/projects/lab/members/", {"username": "newbie", "role": "viewer"}, format="json"
    )
    assert added.status_code == 200, added.content
    assert {"username": "newbie", "role": "viewer"}.items() <= {
        **next(m for m in added.json()["members"] if m["username"] == "newbie")
    }.items()
    owner.post("/api/projects/lab/members/", {"username": "newbie", "role": "researcher"})
    assert Membership.objects.get(user__username="newbie").role == "researcher"
    owner.post("/api/projects/lab/members/", {"username": "newbie", "role": "none"})
    assert not Membership.objects.filter(user__username="newbie").exists()


def test_only_owners_manage_and_the_last_owner_stays(team):
    lab, people = team
    before = list(Membership.objects.values_list("user__username", "role").order_by("pk"))
    for name in ("ravi", "vic"):
        refused = client_of(people[name]).post(
            "/api/projects/lab/members/", {"username": "newbie", "role": "owner"}
        )
        assert refused.status_code == 403
    last = client_of(people["olivia"]).post(
        "/api/projects/lab/members/", {"username": "olivia", "role": "researcher"}
    )
    assert last.status_code == 400 and "owner" in str(last.json())
    unknown = client_of(people["olivia"]).post(
        "/api/projects/lab/members/", {"username": "ghost", "role": "viewer"}
    )
    assert unknown.status_code == 400
    # the site role is the site admin's to give: an account without it reads as unknown
    pending = client_of(people["olivia"]).post(
        "/api/projects/lab/members/", {"username": "pending", "role": "viewer"}
    )
    assert pending.status_code == 400
    assert pending.json()["username"] == [
        unknown.json()["username"][0].replace("'ghost'", "'pending'")
    ]
    assert User.objects.get(username="pending").role == ""
    outsider = User.objects.create_user("out", role="researcher")
    Membership.objects.create(
        project=Project.objects.get(slug="elsewhere"), user=outsider, role="owner"
    )
    assert (
        client_of(outsider)
        .post("/api/projects/lab/members/", {"username": "out", "role": "owner"})
        .status_code
        == 404
    )
    assert (
        list(
            Membership.objects.filter(project=lab)
            .values_list("user__username", "role")
            .order_by("pk")
        )
        == before[:3]
    )
