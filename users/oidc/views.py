"""The pages of a sign-in with the identity provider: the login page with its
button, the start of the flow, the callback, and the two pages a person may
end on instead of Concord (refused; signed in with no role)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from users.models import User
from users.oidc.state import REFUSAL_KEY, enabled, oidc_config


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
    # the protocol library loads with the first sign-in, not at start-up
    from mozilla_django_oidc.views import OIDCAuthenticationRequestView

    return OIDCAuthenticationRequestView.as_view()(request)


def callback(request: HttpRequest) -> HttpResponse:
    enabled()
    from users.oidc.callback import Callback

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
