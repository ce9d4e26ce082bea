"""Sign-in with the lab's identity provider (OpenID Connect).

mozilla-django-oidc, not django-allauth: Concord needs one provider, the
authorization code flow and a hook where the claims become roles. That is the
whole of mozilla-django-oidc (an authentication backend and two views, with
PyJWT and requests), whose backend is the hook; allauth brings its own account
model, e-mail handling, signup flows and templates for dozens of providers,
all of which would have to be turned off.

config (the environment), mapping (groups -> roles), backend (the checks and
the account), sync (memberships and site role), views and urls.
"""
