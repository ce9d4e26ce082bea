from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.http import HttpRequest

from users.models import Membership, Project, User
from users.projects import is_site_admin


def only_site_admins(request: HttpRequest) -> bool:
    """The admin shows raw data of every project, so it is the site admins'
    (superusers and the admin role); researchers work in the console and the
    API, which show their projects only. A staff flag alone opens nothing."""
    user = request.user
    return bool(user.is_active and user.is_staff and is_site_admin(user))


admin.site.has_permission = only_site_admins  # type: ignore[method-assign]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ("user",)
    fields = ("user", "role", "source", "created_at")
    readonly_fields = ("source", "created_at")


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = (MembershipInline,)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    # Django's own UserAdmin sets both (the stubs allow None)
    fieldsets = (
        *(DjangoUserAdmin.fieldsets or ()),
        ("Concord", {"fields": ("role", "oidc_subject")}),
    )
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, ("Concord", {"fields": ("role",)}))
    list_display = ("username", "role", "is_staff", "is_superuser", "is_active", "last_login")
    list_filter = ("role", "is_staff", "is_superuser", "is_active", "memberships__project")
