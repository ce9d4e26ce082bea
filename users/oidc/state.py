"""What the sign-in pages and the backend share, without the protocol library
(mozilla-django-oidc, PyJWT and requests load on the first sign-in with the
provider, not with every process's URL configuration): the configuration in
force and the reason a refused sign-in leaves in the session."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest

from users.oidc.config import OIDCConfig

REFUSAL_KEY = "oidc_refusal"


def oidc_config() -> OIDCConfig | None:
    return getattr(settings, "CONCORD_OIDC", None)


def refuse_in(request: HttpRequest, message: str) -> None:
    request.session[REFUSAL_KEY] = message


def enabled() -> OIDCConfig:
    """The configuration; 404 when sign-in with a provider is off."""
    config = oidc_config()
    if config is None:
        raise Http404("Sign-in with an identity provider is not set up.")
    return config
