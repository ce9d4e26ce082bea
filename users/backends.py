"""The site admin role (User.Role.ADMIN) holds every permission of the admin,
as a superuser does, without being one: an account whose role the identity
provider sets (or an admin grants) reaches the admin with it, and loses it
with the role. It authenticates nobody: the other backends do."""

from __future__ import annotations

from django.contrib.auth.backends import BaseBackend
from django.db.models import Model

from users.projects import is_site_admin


class SiteAdminPermissions(BaseBackend):
    def has_perm(self, user_obj, perm: str, obj: Model | None = None) -> bool:
        return is_site_admin(user_obj)

    def has_module_perms(self, user_obj, app_label: str) -> bool:
        return is_site_admin(user_obj)
