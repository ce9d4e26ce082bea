"""The OIDC configuration: the role map's syntax (a bad entry stops start-up
with a message naming it), the environment it is read from, and what a
deployment gets with and without it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.test_settings import PRODUCTION_ENV, manage
from users.oidc.config import from_environment
from users.oidc.mapping import Grant, Granted, RoleMapError, parse_role_map

EXAMPLE = (
    "lab-admins=site:admin;nlp-team=project:nlp:owner;"
    "nlp-students=project:nlp:researcher;annotators=site:gold_annotator"
)

ENV = {
    "OIDC_RP_CLIENT_ID": "concord",
    "OIDC_RP_CLIENT_SECRET": "s3cret-from-the-vault",
    "OIDC_OP_ISSUER": "https://sso.lab.example/realms/lab",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://sso.lab.example/auth",
    "OIDC_OP_TOKEN_ENDPOINT": "https://sso.lab.example/token",
    "OIDC_OP_USER_ENDPOINT": "https://sso.lab.example/userinfo",
    "OIDC_OP_JWKS_ENDPOINT": "https://sso.lab.example/certs",
    "CONCORD_OIDC_ROLE_MAP": EXAMPLE,
}


def test_the_example_map():
    role_map = parse_role_map(EXAMPLE)
    assert role_map.grants == {
        "lab-admins": (Grant("admin"),),
        "nlp-team": (Grant("owner", "nlp"),),
        "nlp-students": (Grant("researcher", "nlp"),),
        "annotators": (Grant("gold_annotator"),),
    }
    assert role_map.projects == ["nlp"]


def test_whitespace_newlines_and_empty_entries_are_ignored():
    role_map = parse_role_map("\n  a = site:researcher ;\n\n b=project: x-1 :viewer;;\n")
    assert role_map.grants == {"a": (Grant("researcher"),), "b": (Grant("viewer", "x-1"),)}
    assert parse_role_map("").grants == {}


def test_a_group_gives_several_grants_and_its_name_may_hold_equals_and_colons():
    role_map = parse_role_map(
        "cn=nlp,ou=groups=project:nlp:owner; cn=nlp,ou=groups=project:ml:viewer;"
        "/lab/admins:all=site:admin"
    )
    assert role_map.grants["cn=nlp,ou=groups"] == (Grant("owner", "nlp"), Grant("viewer", "ml"))
    assert role_map.grants["/lab/admins:all"] == (Grant("admin"),)


def test_the_strongest_role_wins():
    role_map = parse_role_map(EXAMPLE + ";viewers=project:nlp:viewer;ml=project:ml:viewer")
    assert role_map.resolve(["nlp-students", "nlp-team", "viewers"]) == Granted(
        "", {"nlp": "owner"}
    )
    assert role_map.resolve(["annotators", "lab-admins", "ml"]) == Granted(
        "admin", {"ml": "viewer"}
    )
    assert role_map.resolve(["Lab-Admins", "unknown"]).nothing  # names match exactly
    assert role_map.resolve([]).nothing


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lab-admins", "entry 1 ('lab-admins'): no '='"),
        ("a=site:admin;=site:admin", "entry 2 ('=site:admin'): the group before '=' is empty"),
        ("a=admin", "'admin' starts with neither 'site:' nor 'project:'"),
        ("a=site:owner", "'site:owner' is not site:ROLE with ROLE one of admin, researcher"),
        ("a=site:admin:x", "is not site:ROLE"),
        ("a=site:", "is not site:ROLE"),
        ("a=project:nlp", "'project:nlp' is not project:SLUG:ROLE"),
        ("a=project:nlp:owner:x", "is not project:SLUG:ROLE"),
        ("a=project:nlp:admin", "'admin' is not a project role (one of owner, researcher, viewer)"),
        ("a=project:NLP team:owner", "'NLP team' is not a project slug"),
        ("a=project:" + "x" * 65 + ":owner", "is not a project slug"),
        ("a=project::owner", "'' is not a project slug"),
        ("a=site:admin;a=site:admin", "entry 2 ('a=site:admin'): the same grant is given twice"),
        ("a=site:admin;a=site:researcher", "group 'a' already gives site:admin in the site"),
        (
            "a=project:nlp:owner; a=project:nlp:viewer",
            "group 'a' already gives project:nlp:owner in project 'nlp'",
        ),
    ],
)
def test_bad_syntax_is_refused_with_the_entry_and_why(text, message):
    with pytest.raises(RoleMapError) as refused:
        parse_role_map(text)
    assert message in str(refused.value)
    assert str(refused.value).startswith("CONCORD_OIDC_ROLE_MAP, entry ")
    assert isinstance(refused.value, ImproperlyConfigured)  # Django stops at start-up


def test_off_without_a_client_id():
    assert from_environment({}) is None
    assert from_environment({**ENV, "OIDC_RP_CLIENT_ID": " "}) is None


def test_on_with_everything():
    config = from_environment(ENV)
    assert config is not None
    assert config.role_map == parse_role_map(EXAMPLE)
    assert (config.username_claim, config.groups_claim) == ("preferred_username", "groups")
    assert config.scopes == "openid profile"
    django = config.django_settings()
    assert django["OIDC_RP_SIGN_ALGO"] == "RS256"
    assert django["OIDC_OP_JWKS_ENDPOINT"] == "https://sso.lab.example/certs"
    assert django["OIDC_USE_PKCE"] and django["OIDC_USE_NONCE"]
    assert not django["OIDC_STORE_ACCESS_TOKEN"] and not django["OIDC_STORE_ID_TOKEN"]
    assert "s3cret" not in repr(config)
    custom = from_environment(
        {
            **ENV,
            "CONCORD_OIDC_USERNAME_CLAIM": "upn",
            "CONCORD_OIDC_GROUPS_CLAIM": "realm_access.roles",
            "OIDC_RP_SCOPES": "openid groups",
            "CONCORD_OIDC_PROVIDER_NAME": "Lab SSO",
        }
    )
    assert custom is not None
    assert (custom.username_claim, custom.groups_claim) == ("upn", "realm_access.roles")
    assert (custom.scopes, custom.provider_name) == ("openid groups", "Lab SSO")


@pytest.mark.parametrize("missing", ["OIDC_RP_CLIENT_SECRET", "OIDC_OP_JWKS_ENDPOINT"])
def test_a_missing_setting_is_named(missing):
    with pytest.raises(ImproperlyConfigured, match=f"needs {missing} too"):
        from_environment({k: v for k, v in ENV.items() if k != missing})


def test_a_missing_role_map_is_named():
    env = {k: v for k, v in ENV.items() if k != "CONCORD_OIDC_ROLE_MAP"}
    with pytest.raises(ImproperlyConfigured, match="needs CONCORD_OIDC_ROLE_MAP too"):
        from_environment(env)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("OIDC_OP_TOKEN_ENDPOINT", "sso.lab.example/token", "is not an http(s) URL"),
        ("OIDC_OP_ISSUER", "ftp://sso.lab.example", "is not an http(s) URL"),
        ("CONCORD_OIDC_TIMEOUT", "soon", "is not a number of seconds"),
        ("CONCORD_OIDC_TIMEOUT", "0", "is not a number of seconds"),
    ],
)
def test_malformed_values_are_refused(name, value, message):
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_environment({**ENV, name: value})


def test_a_deployment_without_oidc_has_the_password_backend_only():
    result = manage(
        "shell",
        "-c",
        "from django.conf import settings; print(settings.AUTHENTICATION_BACKENDS)",
        env={**PRODUCTION_ENV},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "['django.contrib.auth.backends.ModelBackend', 'users.backends.SiteAdminPermissions']"
    )


def test_a_deployment_with_oidc_adds_its_backend_and_settings():
    result = manage(
        "shell",
        "-c",
        "from django.conf import settings; "
        "print(settings.AUTHENTICATION_BACKENDS, settings.OIDC_OP_TOKEN_ENDPOINT)",
        env={**PRODUCTION_ENV, **ENV},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "['django.contrib.auth.backends.ModelBackend', 'users.backends.SiteAdminPermissions', "
        "'users.oidc.backend.OIDCBackend'] "
        "https://sso.lab.example/token"
    )


def test_a_bad_role_map_stops_start_up():
    result = manage("check", env={**PRODUCTION_ENV, **ENV, "CONCORD_OIDC_ROLE_MAP": "x=site:god"})
    assert result.returncode != 0
    assert "CONCORD_OIDC_ROLE_MAP, entry 1 ('x=site:god')" in result.stderr


def test_production_refuses_a_plain_http_provider():
    env = {**PRODUCTION_ENV, **ENV, "OIDC_OP_TOKEN_ENDPOINT": "http://sso.lab.example/token"}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "OIDC_OP_TOKEN_ENDPOINT: the identity provider's URLs must be https" in result.stderr
    local = {**env, "OIDC_OP_TOKEN_ENDPOINT": "http://127.0.0.1:8080/token"}
    assert manage("check", env=local).returncode == 0
