"""The provider's answer to a sign-in (/oidc/callback/): mozilla-django-oidc's
view, with a page that says why a sign-in failed and one for a person whose
groups give no role. users.oidc.views imports it on the first callback."""

from __future__ import annotations

import re

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView

from users.models import User
from users.oidc.state import REFUSAL_KEY, enabled, refuse_in

# OAuth 2.0 error codes (RFC 6749, 4.1.2.1): a short token, shown as it is
ERROR_CODE = re.compile(r"[a-z0-9_.-]{1,64}")


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
