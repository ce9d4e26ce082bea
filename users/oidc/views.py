"""The pages of a sign-in with the identity provider: the login page with its
button, the start of the flow, the callback, and the two pages a person may
end on instead of Concord (refused; signed in with no role)."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from users.models import User
from users.oidc.backend import REFUSAL_KEY, oidc_config, refuse_in
from users.oidc.config import OIDCConfig

# OAuth 2.0 error codes (RFC 6749, 4.1.2.1): a short token, shown as it is
ERROR_CODE = re.compile(r"[a-z0-9_.-]{1,64}")


def enabled() -> OIDCConfig:
    """The configuration; 404 when sign-in with a provider is off."""
    config = oidc_config()
    if config is None:
        raise Http404("Sign-in with an identity provider is not set up.")
    return config


class LoginView(auth_views.LoginView):
    """Django's login page (local accounts), with a button for the identity
    provider when one is set up."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        config = oidc_config()
        context["oidc_provider_name"] = config.provider_name if config else None
        return context


@require_GET
def authenticate(request: HttpRequest) -> HttpResponse:
    """Sends the browser to the provider (state, nonce and PKCE in the session)."""
    enabled()
    return OIDCAuthenticationRequestView.as_view()(request)


class Callback(OIDCAuthenticationCallbackView):
    """The library's callback; a failure goes to a page that says why, and a
    person whose groups give no role to a page that says so."""

    def get(self, request: HttpRequest) -> HttpResponse:
        if request.GET.get("error") and not self.started_here(request):
            # Anyone can link to /oidc/callback/?error=...: the library would sign
            # the person out and show the link's text as the provider's. Only the
            # answer to a sign-in this browser started (its state) is the provider's.
            return redirect("oidc_refused")
        return super().get(request)

    @staticmethod
    def started_here(request: HttpRequest) -> bool:
        states = request.session.get("oidc_states")
        return isinstance(states, dict) and request.GET.get("state", "") in states

    def login_failure(self) -> HttpResponse:
        request = self.request
        error = request.GET.get("error")
        if error and REFUSAL_KEY not in request.session:
            if not ERROR_CODE.fullmatch(error):
                error = "error"
            description = request.GET.get("error_description", "")
            refuse_in(
                request,
                f"{enabled().provider_name} did not sign you in ({error}"
                + (f": {description[:200]}" if description else "")
                + ").",
            )
        return redirect("oidc_refused")

    def login_success(self) -> HttpResponse:
        response = super().login_success()
        user = self.user
        if isinstance(user, User) and not (user.is_researcher or user.is_gold_annotator):
            return redirect("oidc_no_role")
        return response


def callback(request: HttpRequest) -> HttpResponse:
    enabled()
    return Callback.as_view()(request)


@require_GET
def refused(request: HttpRequest) -> HttpResponse:
    config = enabled()
    reason = request.session.pop(REFUSAL_KEY, None) or (
        "The sign-in could not be completed: it expired, or was started in another "
        "browser. Try again."
    )
    context = {"reason": reason, "provider_name": config.provider_name}
    return render(request, "registration/oidc_refused.html", context, status=403)


@require_GET
def no_role(request: HttpRequest) -> HttpResponse | HttpResponseRedirect:
    config = enabled()
    user = request.user
    if not isinstance(user, User):
        return redirect("login")
    if user.is_researcher or user.is_gold_annotator:
        return redirect("start")
    context = {"provider_name": config.provider_name}
    return render(request, "registration/oidc_no_role.html", context, status=403)
