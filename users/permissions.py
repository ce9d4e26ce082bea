from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.permissions import BasePermission

from users.models import User

if TYPE_CHECKING:
    # DRF's views read this module's IsResearcher from the settings when imported
    from rest_framework.request import Request
    from rest_framework.views import APIView


class IsResearcher(BasePermission):
    """Research data is for admins and researchers only.

    Anonymous users get 401/403; gold annotators get 403, because responses and
    judgments would reveal the systems and scores they must rate blind.
    """

    message = "Only researchers and admins may read research data."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and getattr(user, "is_researcher", False))


def signed_in_user(request: HttpRequest | Request) -> User:
    """The account a request acts for (the audit log's actor). The views that call
    this let only signed-in people in; an anonymous request is refused here too."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("Sign in first.")
    return user
