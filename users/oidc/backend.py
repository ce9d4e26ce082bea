"""The authentication backend of a sign-in with the identity provider.

mozilla-django-oidc does the protocol (authorization code flow with state,
nonce and PKCE; the code exchanged at the token endpoint; the id token's RS256
signature checked against the provider's JWKS); this backend adds what it
leaves to its users:

- the id token's issuer and audience are checked (the library checks neither);
- the userinfo answer must be about the id token's subject;
- the account is found by the provider's subject (User.oidc_subject), never by
  username or email: a person of the provider whose username is that of a
  local account (say "admin") is refused, not signed in as it;
- the site role and the "oidc" memberships are set from the groups claim
  through CONCORD_OIDC_ROLE_MAP (users.oidc.sync).

A refused sign-in leaves its reason in the session (users.oidc.state) for the
page the callback sends the person to (users.oidc.views.refused); nothing else
is stored but the username, the subject, the role and the memberships: no
email, no name, no token, and no usable password.
"""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from users.models import User
from users.oidc.config import OIDCConfig
from users.oidc.state import oidc_config, refuse_in
from users.oidc.sync import apply_grants

log = logging.getLogger(__name__)


class Refused(Exception):
    """A sign-in Concord does not accept; the message is shown to the person."""


def claim(claims: dict[str, Any], name: str) -> Any:
    """A claim by its name, or by a dotted path into nested claims
    (`realm_access.roles`) when no claim has that very name."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def groups_of(claims: dict[str, Any], name: str) -> list[str]:
    """The groups claim as a list of names: a missing claim is no group, a
    string is one group."""
    value = claim(claims, name)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise Refused(
        f"The identity provider's {name!r} claim is not a list of group names: "
        "an admin checks CONCORD_OIDC_GROUPS_CLAIM."
    )


def username_of(claims: dict[str, Any], config: OIDCConfig) -> str:
    value = claim(claims, config.username_claim)
    username = value if isinstance(value, str) and value.strip() else claims["sub"]
    try:
        if len(username) > 150:
            raise ValidationError("too long")
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise Refused(
            f"Your name at {config.provider_name}, {username!r}, cannot be a Concord "
            "username (letters, digits and @ . + - _ only, at most 150)."
        ) from None
    return username


class OIDCBackend(OIDCAuthenticationBackend):
    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        # Only the callback view (which checked the state) passes a nonce; a
        # password form posted to a URL that carries ?code=&state= does not.
        if request is None or "nonce" not in kwargs or "password" in kwargs:
            return None
        config = oidc_config()
        if config is None:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except Refused as refusal:
            log.warning("OIDC sign-in refused: %s", refusal)
            refuse_in(request, str(refusal))
        except SuspiciousOperation as error:
            log.warning("OIDC sign-in refused, the provider's answer failed a check: %s", error)
            refuse_in(
                request,
                f"{config.provider_name}'s answer failed Concord's checks; an admin finds "
                "why in the server's log.",
            )
        except requests.RequestException as error:
            log.warning("OIDC sign-in failed, the provider did not answer: %s", error)
            refuse_in(request, f"{config.provider_name} could not be reached; try again later.")
        return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The id token's signature, expiry and nonce (the library), then its
        issuer, audience and subject."""
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        config = oidc_config()
        assert config is not None
        if payload.get("iss") != config.issuer:
            raise SuspiciousOperation(
                f"the id token's issuer is {payload.get('iss')!r}, not {config.issuer!r}"
            )
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        if config.client_id not in audiences:
            raise SuspiciousOperation("the id token is not for this client (aud)")
        if len(audiences) > 1 and payload.get("azp") != config.client_id:
            raise SuspiciousOperation("the id token is for several clients, not given to this one")
        if not isinstance(payload.get("sub"), str) or not payload["sub"]:
            raise SuspiciousOperation("the id token names no subject (sub)")
        return payload

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> User | None:
        config = oidc_config()
        assert config is not None
        userinfo = self.get_userinfo(access_token, id_token, payload)
        # raised here, a SuspiciousOperation would be swallowed by the library
        # (no reason left for the person): Refused goes through
        if userinfo.get("sub") != payload["sub"]:
            raise Refused(f"{config.provider_name}'s userinfo answer is about another person.")
        claims = {**payload, **userinfo}
        subject: str = payload["sub"]
        if len(subject) > 255:
            raise Refused(f"{config.provider_name}'s subject (sub) is over 255 characters.")
        username = username_of(claims, config)
        granted = config.role_map.resolve(groups_of(claims, config.groups_claim))
        try:
            with transaction.atomic():
                user = User.objects.select_for_update().filter(oidc_subject=subject).first()
                if user is None:
                    user = self.new_account(username, subject, config)
                elif not user.is_active:
                    raise Refused(f"Your Concord account ({user.username}) is deactivated.")
                elif user.username != username:
                    self.rename(user, username)
                apply_grants(user, granted)
        except IntegrityError:
            # two first sign-ins at once (two tabs): the other one created the account
            raise Refused("Another sign-in of yours was under way; sign in again.") from None
        log.info(
            "OIDC sign-in of %s: site role %r, projects %s",
            user.username,
            user.role,
            granted.projects or "none",
        )
        return user

    def new_account(self, username: str, subject: str, config: OIDCConfig) -> User:
        if User.objects.filter(username__iexact=username).exists():
            raise Refused(
                f"Concord already has an account named {username!r} that is not linked to "
                f"{config.provider_name}, so you cannot sign in as it. An admin can link "
                "that account to you (its identity provider subject) or rename one of them."
            )
        # no email, no name, no usable password: the provider vouches for the person
        return User.objects.create_user(username=username, password=None, oidc_subject=subject)

    def rename(self, user: User, username: str) -> None:
        """The provider renamed the person: the account follows when the new name
        is free, else keeps its name (never the name of another account)."""
        if User.objects.filter(username__iexact=username).exclude(pk=user.pk).exists():
            log.warning(
                "OIDC: %s is now %r at the provider, a name another account has; kept %s",
                user.username,
                username,
                user.username,
            )
            return
        user.username = username
        user.save(update_fields=["username"])

    def get_user(self, user_id: Any) -> User | None:
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
