"""The provider's endpoints from its discovery document
(ISSUER/.well-known/openid-configuration), for `manage.py oidc_endpoints`:
an operator reads them once and puts them in the environment."""

from __future__ import annotations

from typing import Any

import requests

from users.oidc.config import ENDPOINTS

FIELDS = {
    "OIDC_OP_ISSUER": "issuer",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
assert set(ENDPOINTS) < set(FIELDS)


class DiscoveryError(Exception):
    pass


def discover(issuer: str, timeout: float = 10.0) -> dict[str, str]:
    """OIDC_OP_* settings from the issuer's discovery document; DiscoveryError
    when it cannot be read, names another issuer, lacks an endpoint, or does
    not sign id tokens with RS256."""
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        answer = requests.get(url, timeout=timeout)
        answer.raise_for_status()
        document: Any = answer.json()
    except (requests.RequestException, ValueError) as error:
        raise DiscoveryError(f"{url}: {error}") from error
    if not isinstance(document, dict):
        raise DiscoveryError(f"{url} is not a discovery document (not a JSON object)")
    if document.get("issuer") != issuer:
        raise DiscoveryError(
            f"{url} names the issuer {document.get('issuer')!r}, not {issuer!r}: "
            "give the issuer exactly as the provider writes it"
        )
    missing = [field for field in FIELDS.values() if not document.get(field)]
    if missing:
        raise DiscoveryError(f"{url} lacks {', '.join(missing)}")
    algorithms = document.get("id_token_signing_alg_values_supported") or []
    if "RS256" not in algorithms:
        raise DiscoveryError(f"{url}: the provider does not sign id tokens with RS256")
    return {name: str(document[field]) for name, field in FIELDS.items()}
