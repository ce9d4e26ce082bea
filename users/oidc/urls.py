"""Under /oidc/: the names are mozilla-django-oidc's (its views reverse them).
Every page answers 404 while sign-in with a provider is off."""

from django.urls import path

from users.oidc import views

urlpatterns = [
    path("authenticate/", views.authenticate, name="oidc_authentication_init"),
    path("callback/", views.callback, name="oidc_authentication_callback"),
    path("refused/", views.refused, name="oidc_refused"),
    path("no-role/", views.no_role, name="oidc_no_role"),
]
