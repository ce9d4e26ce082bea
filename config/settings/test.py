"""Settings for the test suite: the base settings plus fast password hashing.

DATABASE_URL and CELERY_BROKER_URL still come from the environment, so CI runs
the suite on PostgreSQL and Redis.
"""

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import DATABASES, SQLITE, VAR_DIR

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if SQLITE:
    # A file, not pytest-django's in-memory default, so that a Celery worker
    # started by a test can open the same test database.
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("CONCORD_TEST_SQLITE", str(VAR_DIR / "test-concord.sqlite3"))
    }

# Reports and figures cached in this process only: parallel test runs never
# share entries, and a test that counts hits empties it first.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "reports": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "reports"},
}
