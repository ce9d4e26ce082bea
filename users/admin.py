from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from users.admin_scope import site_or_member
from users.models import Membership, Project, User

# Site admins see every project's rows and change them; a project's members
# read their projects' rows (users.admin_scope.ProjectScopedAdmin).
admin.site.has_permission = site_or_member  # type: ignore[method-assign]


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
