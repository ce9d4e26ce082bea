from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from users.models import User


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    # Django's own UserAdmin sets both (the stubs allow None)
    fieldsets = (*(DjangoUserAdmin.fieldsets or ()), ("Concord", {"fields": ("role",)}))
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, ("Concord", {"fields": ("role",)}))
    list_display = ("username", "role", "is_staff", "is_superuser", "is_active", "last_login")
    list_filter = ("role", "is_staff", "is_superuser", "is_active")
