"""The OIDC pages and the memberships a sign-in sets, without a provider: the
login page with and without one, the pages' 404 while it is off, what a
failed callback shows, and users.oidc.sync's rules."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.users.idp import switch_oidc_on
from tests.users.test_oidc_config import ENV
from users.models import Membership, Project, User
from users.oidc.mapping import Granted
from users.oidc.sync import apply_grants

pytestmark = pytest.mark.django_db


@pytest.fixture
def oidc_on(settings):
    return switch_oidc_on(settings, {**ENV, "CONCORD_OIDC_PROVIDER_NAME": "Lab SSO"})


def test_without_oidc_the_login_page_is_as_before(client):
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert "sign-in-oidc" not in page.content.decode()
    assert 'id="id_password"' in page.content.decode()


@pytest.mark.parametrize("url", ["authenticate/", "callback/", "refused/", "no-role/"])
def test_without_oidc_its_pages_are_not_found(client, url):
    assert client.get(f"/oidc/{url}").status_code == 404


def test_with_oidc_the_login_page_has_the_button_and_the_password_form(client, oidc_on):
    page = client.get("/accounts/login/?next=/console/").content.decode()
    assert (
        '<a class="button" id="sign-in-oidc" href="/oidc/authenticate/?next=/console/">'
        "Sign in with Lab SSO</a>" in page
    )
    assert 'id="id_password"' in page


def test_the_button_sends_the_browser_to_the_provider_with_state_nonce_and_pkce(client, oidc_on):
    answer = client.get("/oidc/authenticate/?next=/console/")
    assert answer.status_code == 302
    location = answer["Location"]
    assert location.startswith("https://sso.lab.example/auth?response_type=code&")
    for part in ("client_id=concord", "scope=openid+profile", "state=", "nonce=", "S256"):
        assert part in location
    assert "s3cret" not in location


def started_state(client) -> str:
    """Start a sign-in in this browser; the state the provider will send back."""
    location = client.get("/oidc/authenticate/?next=/console/")["Location"]
    return parse_qs(urlsplit(location).query)["state"][0]


def test_the_provider_saying_no_shows_why(client, oidc_on):
    state = started_state(client)
    answer = client.get(
        f"/oidc/callback/?error=access_denied&error_description=User+cancelled&state={state}",
        follow=True,
    )
    assert answer.redirect_chain == [("/oidc/refused/", 302)]
    assert answer.status_code == 403
    page = answer.content.decode()
    assert "Sign-in with Lab SSO refused" in page
    assert "Lab SSO did not sign you in (access_denied: User cancelled)." in page


def test_a_strangers_error_link_neither_signs_out_nor_speaks_for_the_provider(
    client, oidc_on, researcher
):
    client.force_login(researcher)
    link = "/oidc/callback/?error=access_denied&error_description=Call+0800+FRAUD+now&state=x"
    answer = client.get(link, follow=True)
    assert answer.status_code == 403
    page = answer.content.decode()
    assert "FRAUD" not in page and "it expired, or was started in another browser" in page
    assert client.session["_auth_user_id"] == str(researcher.pk)  # still signed in
    # an error code that is not one is not shown as it came either
    state = started_state(client)
    odd = client.get(f"/oidc/callback/?error=<b>x</b>&state={state}", follow=True)
    assert "(error)" in odd.content.decode() and "&lt;b&gt;" not in odd.content.decode()


def test_a_callback_without_a_started_sign_in_is_refused_with_a_message(client, oidc_on):
    answer = client.get("/oidc/callback/?code=abc&state=xyz", follow=True)
    assert answer.status_code == 403
    assert "it expired, or was started in another browser" in answer.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_no_role_page_is_for_signed_in_people_without_a_role(client, oidc_on, researcher):
    assert client.get("/oidc/no-role/")["Location"] == "/accounts/login/"
    client.force_login(researcher)
    assert client.get("/oidc/no-role/")["Location"] == "/"
    nobody = User.objects.create_user("nobody", oidc_subject="s-1")
    client.force_login(nobody)
    page = client.get("/oidc/no-role/")
    assert page.status_code == 403
    assert "your groups at Lab SSO give you no role in Concord" in page.content.decode()


def roles(user: User) -> dict[str, tuple[str, str]]:
    return {m.project.slug: (m.role, m.source) for m in user.memberships.select_related("project")}


def test_grants_add_change_and_remove_only_the_providers_memberships():
    Project.objects.create(slug="a", name="A")
    Project.objects.create(slug="b", name="B")
    user = User.objects.create_user("pat", oidc_subject="s-2")
    Membership.objects.create(project=Project.objects.get(slug="b"), user=user, role="viewer")

    apply_grants(user, Granted("", {"a": "viewer", "b": "owner", "new-one": "researcher"}))
    # the local membership of b is kept as it is, not raised to owner
    assert roles(user) == {
        "a": ("viewer", "oidc"),
        "b": ("viewer", "local"),
        "new-one": ("researcher", "oidc"),
    }
    assert Project.objects.get(slug="new-one").name == "new-one"
    assert user.role == "researcher"

    apply_grants(user, Granted("gold_annotator", {"a": "owner"}))
    assert roles(user) == {"a": ("owner", "oidc"), "b": ("viewer", "local")}
    assert User.objects.get(pk=user.pk).role == "researcher"  # a project role outranks it

    apply_grants(user, Granted("gold_annotator", {}))
    assert roles(user) == {"b": ("viewer", "local")}
    assert User.objects.get(pk=user.pk).role == "gold_annotator"

    apply_grants(user, Granted())
    assert roles(user) == {"b": ("viewer", "local")}
    assert User.objects.get(pk=user.pk).role == ""


def test_a_new_project_named_like_an_existing_one_gets_another_name():
    Project.objects.create(slug="nlp-old", name="nlp")
    user = User.objects.create_user("quinn", oidc_subject="s-3")
    apply_grants(user, Granted("", {"nlp": "owner"}))
    assert Project.objects.get(slug="nlp").name == "nlp (2)"


@pytest.fixture
def backend(oidc_on):
    """The backend, with the provider's userinfo answer given by the test."""
    from users.oidc.backend import OIDCBackend

    instance = OIDCBackend()
    instance.userinfo = {}
    instance.get_userinfo = lambda access_token, id_token, payload: instance.userinfo
    return instance


def sign_in_with(backend, sub: str, **claims) -> User | None:
    backend.userinfo = {"sub": sub, **claims}
    return backend.get_or_create_user("access", "id", {"sub": sub, "iss": ENV["OIDC_OP_ISSUER"]})


def test_a_deactivated_account_is_refused(backend):
    from users.oidc.backend import Refused

    User.objects.create_user("dora", oidc_subject="s-4", is_active=False)
    with pytest.raises(Refused, match=r"Your Concord account \(dora\) is deactivated"):
        sign_in_with(backend, "s-4", preferred_username="dora", groups=["lab-admins"])
    assert User.objects.get(oidc_subject="s-4").role == ""


def test_userinfo_about_another_person_is_refused(backend):
    from users.oidc.backend import Refused

    backend.userinfo = {"sub": "someone-else", "groups": ["lab-admins"]}
    with pytest.raises(Refused, match="userinfo answer is about another person"):
        backend.get_or_create_user("access", "id", {"sub": "s-5"})
    assert not User.objects.exists()


def test_a_username_that_cannot_be_one_is_refused(backend):
    from users.oidc.backend import Refused

    with pytest.raises(Refused, match="'Ann Lee', cannot be a Concord username"):
        sign_in_with(backend, "s-6", preferred_username="Ann Lee")
    assert not User.objects.exists()


def test_a_rename_to_a_taken_name_keeps_the_old_one(backend):
    User.objects.create_user("taken", password="pw-taken-123")
    user = sign_in_with(backend, "s-7", preferred_username="ben", groups=["nlp-team"])
    assert user is not None and user.username == "ben"
    again = sign_in_with(backend, "s-7", preferred_username="TAKEN", groups=["nlp-team"])
    assert again is not None and again.pk == user.pk and again.username == "ben"
    assert User.objects.get(username="taken").oidc_subject is None


def test_the_groups_claim_may_be_nested(backend, settings):
    import dataclasses

    settings.CONCORD_OIDC = dataclasses.replace(
        settings.CONCORD_OIDC, groups_claim="realm_access.roles"
    )
    user = sign_in_with(backend, "s-8", realm_access={"roles": ["lab-admins"]})
    assert user is not None and (user.username, user.role) == ("s-8", "admin")
