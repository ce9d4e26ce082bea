from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from users.admin_scope import site_or_member
from users.models import Membership, Project, ProjectRole, User

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


class FirstRoleCreationForm(DjangoUserAdmin.add_form):
    """The admin's "add user" form with the account's first project role,
    chosen by whoever creates it (a new account is never silently a
    researcher of the only project)."""

    project = forms.ModelChoiceField(
        Project.objects.order_by("name"),
        required=False,
        help_text="The project the account starts in.",
    )
    project_role = forms.ChoiceField(
        choices=[("", "No project yet (an owner adds the account later)"), *ProjectRole.choices],
        required=False,
        label="Role in that project",
        help_text="A viewer reads the project's studies, runs and reports; a researcher also "
        "creates and changes them; an owner also manages its members.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        projects = list(Project.objects.order_by("name")[:2])
        if len(projects) == 1:
            self.fields["project"].initial = projects[0].pk

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("project_role") and cleaned.get("project") is None:
            self.add_error("project", "Choose the project this role is in.")
        if cleaned.get("project") is not None and not cleaned.get("project_role"):
            self.add_error("project_role", "Choose the account's role in this project.")
        return cleaned


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    # Django's own UserAdmin sets both (the stubs allow None)
    fieldsets = (
        *(DjangoUserAdmin.fieldsets or ()),
        ("Concord", {"fields": ("role", "oidc_subject")}),
    )
    add_form = FirstRoleCreationForm
    add_fieldsets = (
        *DjangoUserAdmin.add_fieldsets,
        ("Concord", {"fields": ("role", "project", "project_role")}),
    )
    list_display = ("username", "role", "is_staff", "is_superuser", "is_active", "last_login")
    list_filter = ("role", "is_staff", "is_superuser", "is_active", "memberships__project")

    def save_model(self, request, obj, form, change) -> None:
        if change or not isinstance(form, FirstRoleCreationForm):
            super().save_model(request, obj, form, change)
            return
        # the role chosen in the form, not the one-project default of
        # users.projects.join_the_only_project
        obj.first_project_role_chosen = True
        super().save_model(request, obj, form, change)
        project, role = form.cleaned_data.get("project"), form.cleaned_data.get("project_role")
        if project is not None and role:
            Membership.objects.create(project=project, user=obj, role=role)
