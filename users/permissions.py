from rest_framework.permissions import BasePermission


class IsResearcher(BasePermission):
    """Research data is for admins and researchers only.

    Anonymous users get 401/403; gold annotators get 403, because responses and
    judgments would reveal the systems and scores they must rate blind.
    """

    message = "Only researchers and admins may read research data."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and getattr(user, "is_researcher", False))
