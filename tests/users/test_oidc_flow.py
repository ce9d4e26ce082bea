"""Sign-in with the lab's identity provider, end to end over HTTP: Concord's
live server and a real OpenID Connect provider on 127.0.0.1 (panva's
oidc-provider, tests/users/idp.py). Each sign-in follows the login page's
button to the provider, posts the provider's login form, and comes back
through the callback (code exchanged, RS256 id token checked against the
provider's JWKS, userinfo read) to the page Concord sends the person to."""

from __future__ import annotations

import dataclasses
import html
import re

import pytest
import requests
from django.core.management import CommandError, call_command

from tests.users.idp import (
    CLIENT_ID,
    CLIENT_SECRET,
    installed_provider,
    running_provider,
    switch_oidc_on,
)
from users.models import Membership, Project, User
from users.oidc.discovery import discover

pytestmark = pytest.mark.django_db(transaction=True)

ROLE_MAP = """
    lab-admins=site:admin;
    nlp-team=project:nlp:owner;
    nlp-students=project:nlp:researcher;
    ml-team=project:ml:viewer;
    annotators=site:gold_annotator;
"""


@pytest.fixture(scope="module")
def provider(live_server, tmp_path_factory):
    folder = installed_provider()
    callback = f"{live_server.url}/oidc/callback/"
    with running_provider(callback, folder, tmp_path_factory.mktemp("idp")) as running:
        yield running


@pytest.fixture
def oidc(settings, provider):
    """Concord's settings as the environment of a deployment gives them, the
    endpoints read from the provider's discovery document."""
    env = {
        "OIDC_RP_CLIENT_ID": CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
        **discover(provider.issuer),
        "OIDC_RP_SCOPES": "openid profile groups",
        "CONCORD_OIDC_PROVIDER_NAME": "Lab IdP",
        "CONCORD_OIDC_ROLE_MAP": ROLE_MAP,
    }
    return switch_oidc_on(settings, env)


def sign_in(live_server, provider, account: str) -> tuple[requests.Session, requests.Response]:
    """A new browser signs in as `account` at the provider; returns the browser
    and the page it ends on."""
    browser = requests.Session()
    login_page = browser.get(f"{live_server.url}/accounts/login/", timeout=30)
    button = re.search(r'id="sign-in-oidc" href="([^"]+)">Sign in with Lab IdP<', login_page.text)
    assert button, login_page.text
    at_provider = browser.get(live_server.url + html.unescape(button.group(1)), timeout=30)
    assert at_provider.url.startswith(f"{provider.issuer}/interaction/"), at_provider.url
    action = re.search(r'action="([^"]+)"', at_provider.text)
    assert action, at_provider.text
    answer = browser.post(provider.issuer + action.group(1), data={"login": account}, timeout=30)
    return browser, answer


def password_sign_in(live_server, username: str, password: str) -> requests.Response:
    browser = requests.Session()
    login = f"{live_server.url}/accounts/login/"
    page = browser.get(login, timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token
    data = {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}
    return browser.post(login, data=data, headers={"Referer": login}, timeout=30)


def memberships(user: User) -> dict[str, tuple[str, str]]:
    return {m.project.slug: (m.role, m.source) for m in user.memberships.select_related("project")}


def api_status(browser: requests.Session, live_server) -> int:
    return browser.get(f"{live_server.url}/api/systems/", timeout=30).status_code


def test_memberships_follow_the_groups_at_every_sign_in(live_server, provider, oidc):
    Project.objects.create(slug="vision", name="Vision")
    provider.set_accounts(
        {
            "u-1001": {
                "preferred_username": "alice",
                "email": "alice@lab.example.org",
                "groups": ["nlp-team", "ml-team", "annotators", "coffee-club"],
            }
        }
    )
    browser, page = sign_in(live_server, provider, "u-1001")
    assert page.status_code == 200
    assert page.url == f"{live_server.url}/console/"

    alice = User.objects.get(oidc_subject="u-1001")
    assert alice.username == "alice"
    # a project role makes a researcher (stronger than the gold annotator role)
    assert alice.role == User.Role.RESEARCHER
    assert memberships(alice) == {"nlp": ("owner", "oidc"), "ml": ("viewer", "oidc")}
    # the projects the map names are created when first granted, named by their slug
    assert Project.objects.get(slug="nlp").name == "nlp"
    # nothing personal is kept beyond the username and the subject
    assert (alice.email, alice.first_name, alice.last_name) == ("", "", "")
    assert not alice.has_usable_password()
    assert api_status(browser, live_server) == 200

    # an owner adds her to another project in Concord: a local membership
    Membership.objects.create(project=Project.objects.get(slug="vision"), user=alice, role="viewer")

    # the provider renames her and moves her to the students; ml is gone
    provider.set_accounts({"u-1001": {"preferred_username": "alice.b", "groups": ["nlp-students"]}})
    browser, page = sign_in(live_server, provider, "u-1001")
    assert page.url == f"{live_server.url}/console/"
    alice.refresh_from_db()
    assert alice.username == "alice.b"
    assert alice.role == User.Role.RESEARCHER
    assert memberships(alice) == {
        "nlp": ("researcher", "oidc"),
        "vision": ("viewer", "local"),
    }
    assert User.objects.filter(oidc_subject="u-1001").count() == 1

    # no group the map names: no role, told so on a page; the local membership stays
    provider.set_accounts({"u-1001": {"preferred_username": "alice.b", "groups": ["coffee-club"]}})
    browser, page = sign_in(live_server, provider, "u-1001")
    assert page.status_code == 403
    assert page.url == f"{live_server.url}/oidc/no-role/"
    assert "You are signed in as alice.b" in page.text
    assert "give you no role in Concord" in page.text
    alice.refresh_from_db()
    assert alice.role == ""
    assert memberships(alice) == {"vision": ("viewer", "local")}
    assert api_status(browser, live_server) == 403


def test_site_roles_from_groups_and_the_api_per_role(live_server, provider, oidc):
    provider.set_accounts(
        {
            "u-1": {"preferred_username": "boss", "groups": ["lab-admins"]},
            "u-2": {"preferred_username": "gina", "groups": "annotators"},  # a bare string
            "u-3": {"groups": ["coffee-club"]},  # no username claim: the subject
        }
    )
    boss_browser, page = sign_in(live_server, provider, "u-1")
    assert page.url == f"{live_server.url}/console/"
    boss = User.objects.get(oidc_subject="u-1")
    assert (boss.username, boss.role) == ("boss", User.Role.ADMIN)
    assert not boss.is_superuser  # claims never make a superuser
    assert boss.is_staff  # the admin is the site admins'
    assert boss_browser.get(f"{live_server.url}/admin/users/project/").status_code == 200
    assert api_status(boss_browser, live_server) == 200

    gina_browser, page = sign_in(live_server, provider, "u-2")
    assert page.url == f"{live_server.url}/gold/"
    gina = User.objects.get(oidc_subject="u-2")
    assert (gina.role, memberships(gina)) == (User.Role.GOLD_ANNOTATOR, {})
    assert not gina.is_staff
    assert api_status(gina_browser, live_server) == 403

    nobody_browser, page = sign_in(live_server, provider, "u-3")
    assert page.status_code == 403 and "no role" in page.text
    assert User.objects.get(oidc_subject="u-3").username == "u-3"
    assert api_status(nobody_browser, live_server) == 403


def test_a_provider_user_named_like_a_local_account_is_refused(live_server, provider, oidc):
    admin = User.objects.create_superuser("admin", password="pw-admin-123", role="admin")
    provider.set_accounts({"evil-1": {"preferred_username": "Admin", "groups": ["lab-admins"]}})

    browser, page = sign_in(live_server, provider, "evil-1")
    assert page.status_code == 403
    assert page.url == f"{live_server.url}/oidc/refused/"
    assert "Concord already has an account named &#x27;Admin&#x27;" in page.text
    assert "not linked to Lab IdP" in page.text
    assert api_status(browser, live_server) == 401  # not signed in
    assert list(User.objects.values_list("username", "oidc_subject")) == [("admin", None)]
    admin.refresh_from_db()
    assert admin.role == "admin" and admin.is_superuser

    # the local account's password still signs in
    page = password_sign_in(live_server, "admin", "pw-admin-123")
    assert page.url == f"{live_server.url}/console/"

    # once an admin links the account to the provider's subject, that person signs in as it
    User.objects.filter(pk=admin.pk).update(oidc_subject="evil-1")
    provider.set_accounts({"evil-1": {"preferred_username": "admin", "groups": ["nlp-team"]}})
    browser, page = sign_in(live_server, provider, "evil-1")
    assert page.url == f"{live_server.url}/console/"
    admin.refresh_from_db()
    assert admin.role == User.Role.RESEARCHER  # the claims decide the site role
    assert admin.is_superuser  # never changed by a sign-in
    # (a single-team install made the local admin a member of its only project)
    assert memberships(admin) == {"nlp": ("owner", "oidc"), "default": ("researcher", "local")}


def test_local_accounts_sign_in_with_their_password_while_oidc_is_on(
    live_server, provider, oidc, researcher
):
    page = password_sign_in(live_server, "rita", "pw-rita-123")
    assert page.url == f"{live_server.url}/console/"
    wrong = password_sign_in(live_server, "rita", "not-her-password")
    assert wrong.url == f"{live_server.url}/accounts/login/"
    assert "did not match" in wrong.text
    # an account the provider created has no password to sign in with
    provider.set_accounts({"u-7": {"preferred_username": "olga", "groups": ["nlp-team"]}})
    sign_in(live_server, provider, "u-7")
    olga = password_sign_in(live_server, "olga", "")
    assert olga.url == f"{live_server.url}/accounts/login/"


@pytest.mark.parametrize(
    "changed",
    [{"issuer": "https://sso.elsewhere.example"}, {"client_id": "another-client"}],
    ids=["issuer", "audience"],
)
def test_an_id_token_for_another_issuer_or_client_is_refused(
    live_server, provider, oidc, settings, changed
):
    settings.CONCORD_OIDC = dataclasses.replace(oidc, **changed)
    provider.set_accounts({"u-9": {"preferred_username": "mallory", "groups": ["lab-admins"]}})
    browser, page = sign_in(live_server, provider, "u-9")
    assert page.status_code == 403
    assert page.url == f"{live_server.url}/oidc/refused/"
    assert "failed Concord&#x27;s checks" in page.text
    assert not User.objects.filter(oidc_subject="u-9").exists()
    assert api_status(browser, live_server) == 401


def test_a_groups_claim_that_is_not_a_list_of_names_is_refused(live_server, provider, oidc):
    provider.set_accounts({"u-8": {"preferred_username": "odd", "groups": {"nlp-team": True}}})
    browser, page = sign_in(live_server, provider, "u-8")
    assert page.url == f"{live_server.url}/oidc/refused/"
    assert "claim is not a list of group names" in page.text
    assert not User.objects.filter(oidc_subject="u-8").exists()


def test_oidc_endpoints_prints_the_environment_from_discovery(provider, capsys):
    call_command("oidc_endpoints", provider.issuer)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"OIDC_OP_ISSUER={provider.issuer}",
        f"OIDC_OP_AUTHORIZATION_ENDPOINT={provider.issuer}/auth",
        f"OIDC_OP_TOKEN_ENDPOINT={provider.issuer}/token",
        f"OIDC_OP_USER_ENDPOINT={provider.issuer}/me",
        f"OIDC_OP_JWKS_ENDPOINT={provider.issuer}/jwks",
    ]
    with pytest.raises(CommandError, match="give the issuer exactly as the provider writes it"):
        call_command("oidc_endpoints", provider.issuer + "/")
