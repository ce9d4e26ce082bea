"""Sign-in with the lab's identity provider, configured from the environment.

Off unless OIDC_RP_CLIENT_ID is set: then only local accounts exist (Django's
ModelBackend) and the login page is as it always was. On, it needs the client
secret, the issuer and the provider's four endpoints, and the role map; a
missing or malformed one stops start-up with a message that names it.

The endpoints are given, not discovered at start-up: every process (web,
workers, `manage.py migrate`) starts without reaching the provider, and the
values are the ones an operator read. `python manage.py oidc_endpoints ISSUER`
prints them from the provider's discovery document.

Pure Python (no models): config/settings/base.py calls `from_environment`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from users.oidc.mapping import RoleMap, parse_role_map

ENDPOINTS = (
    "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "OIDC_OP_TOKEN_ENDPOINT",
    "OIDC_OP_USER_ENDPOINT",
    "OIDC_OP_JWKS_ENDPOINT",
)
REQUIRED = ("OIDC_RP_CLIENT_SECRET", "OIDC_OP_ISSUER", *ENDPOINTS, "CONCORD_OIDC_ROLE_MAP")
DOCS = "see docs/deployment.md, 'Sign-in with your identity provider (OIDC)'"


@dataclass(frozen=True)
class OIDCConfig:
    client_id: str
    client_secret: str
    issuer: str
    endpoints: dict[str, str]
    role_map: RoleMap
    scopes: str = "openid profile"
    provider_name: str = "your identity provider"
    username_claim: str = "preferred_username"
    groups_claim: str = "groups"
    timeout: float = 10.0

    def __repr__(self) -> str:
        # never the secret, e.g. in a settings dump or a traceback
        return f"OIDCConfig(client_id={self.client_id!r}, issuer={self.issuer!r})"

    def django_settings(self) -> dict[str, Any]:
        """The settings mozilla-django-oidc reads (its views and backend)."""
        return {
            "OIDC_RP_CLIENT_ID": self.client_id,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            **self.endpoints,
            # id tokens signed with the provider's keys (its JWKS), never the shared secret
            "OIDC_RP_SIGN_ALGO": "RS256",
            "OIDC_RP_SCOPES": self.scopes,
            "OIDC_USE_NONCE": True,
            "OIDC_USE_PKCE": True,
            "OIDC_TIMEOUT": self.timeout,
            # no token is kept in the session: Concord calls nothing on the user's behalf
            "OIDC_STORE_ACCESS_TOKEN": False,
            "OIDC_STORE_ID_TOKEN": False,
            "OIDC_CREATE_USER": True,
        }


def from_environment(env: Mapping[str, str]) -> OIDCConfig | None:
    """The configuration the environment gives, None when OIDC_RP_CLIENT_ID is
    unset or empty; ImproperlyConfigured when it is set and something is
    missing or malformed."""
    client_id = env.get("OIDC_RP_CLIENT_ID", "").strip()
    if not client_id:
        return None
    missing = [name for name in REQUIRED if not env.get(name, "").strip()]
    if missing:
        raise ImproperlyConfigured(
            f"OIDC_RP_CLIENT_ID is set, so sign-in with the identity provider needs "
            f"{', '.join(missing)} too ({DOCS})."
        )
    for name in ("OIDC_OP_ISSUER", *ENDPOINTS):
        url = urlsplit(env[name].strip())
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ImproperlyConfigured(f"{name} {env[name]!r} is not an http(s) URL ({DOCS}).")
    timeout = env.get("CONCORD_OIDC_TIMEOUT", "10").strip()
    try:
        seconds = float(timeout)
    except ValueError:
        seconds = 0
    if not 0 < seconds <= 300:
        raise ImproperlyConfigured(
            f"CONCORD_OIDC_TIMEOUT {timeout!r} is not a number of seconds (0 to 300)."
        )
    return OIDCConfig(
        client_id=client_id,
        client_secret=env["OIDC_RP_CLIENT_SECRET"].strip(),
        issuer=env["OIDC_OP_ISSUER"].strip(),
        endpoints={name: env[name].strip() for name in ENDPOINTS},
        role_map=parse_role_map(env["CONCORD_OIDC_ROLE_MAP"]),
        scopes=env.get("OIDC_RP_SCOPES", "").strip() or "openid profile",
        provider_name=env.get("CONCORD_OIDC_PROVIDER_NAME", "").strip() or "your identity provider",
        username_claim=env.get("CONCORD_OIDC_USERNAME_CLAIM", "").strip() or "preferred_username",
        groups_claim=env.get("CONCORD_OIDC_GROUPS_CLAIM", "").strip() or "groups",
        timeout=seconds,
    )


def insecure_urls(config: OIDCConfig) -> list[str]:
    """The provider's URLs that are plain http to another machine (production
    refuses them: the code and the tokens would cross the network in clear)."""
    urls = {"OIDC_OP_ISSUER": config.issuer, **config.endpoints}
    return [
        name
        for name, value in urls.items()
        if urlsplit(value).scheme != "https"
        and urlsplit(value).hostname not in ("localhost", "127.0.0.1", "::1")
    ]
