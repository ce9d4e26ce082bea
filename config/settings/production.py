"""Production settings: the base settings with DEBUG off and HTTPS hardening.

Required environment: DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS, DATABASE_URL,
CELERY_BROKER_URL. See docs/deployment.md.
"""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import INSECURE_DEV_SECRET_KEY, SECRET_KEY, env_bool, env_list

DEBUG = False
if SECRET_KEY == INSECURE_DEV_SECRET_KEY or len(SECRET_KEY) < 50:
    raise ImproperlyConfigured("Set DJANGO_SECRET_KEY to a random string of 50+ characters.")
for required in ("DATABASE_URL", "CELERY_BROKER_URL"):
    if not os.environ.get(required):
        raise ImproperlyConfigured(f"Set {required} for production (see docs/deployment.md).")
# The base settings fall back to localhost for development; production names its
# hosts itself (a wildcard would let any Host header through, e.g. into links
# that the site writes).
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "Set DJANGO_ALLOWED_HOSTS to the host names Concord is served at, comma-separated "
        "(e.g. concord.example.org; see docs/deployment.md)."
    )
if "*" in ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "DJANGO_ALLOWED_HOSTS must name the hosts, not '*' (see docs/deployment.md)."
    )

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# --- Sign-in with the lab's identity provider (OIDC) -----------------------
# The code, the tokens and the client secret cross these URLs: https only
# (plain http only to this machine itself).
from config.settings.base import CONCORD_OIDC  # noqa: E402
from users.oidc.config import insecure_urls  # noqa: E402

if CONCORD_OIDC is not None and (plain := insecure_urls(CONCORD_OIDC)):
    raise ImproperlyConfigured(
        f"{', '.join(plain)}: the identity provider's URLs must be https in production "
        "(see docs/deployment.md)."
    )
# --- end of OIDC -------------------------------------------------------------
