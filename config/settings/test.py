"""Settings for the test suite: the base settings plus fast password hashing.

DATABASE_URL and CELERY_BROKER_URL still come from the environment, so CI runs
the suite on PostgreSQL and Redis.
"""

import os
import re
from pathlib import Path

# Under pytest-xdist (make test) each worker process gets its own var/ folder
# (downloads and files named by primary keys, which every worker's database
# numbers from 1), its own Redis database for the broker (a Celery worker a
# test starts must never take another test worker's task), and its own test
# database (pytest-django adds the "_gw<n>" suffix itself). Set before the base
# settings read the environment; processes the tests start inherit them.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if XDIST_WORKER:
    _var = Path(os.environ.get("CONCORD_VAR_DIR") or Path(__file__).resolve().parents[2] / "var")
    if _var.name != XDIST_WORKER:
        os.environ["CONCORD_VAR_DIR"] = str(_var / XDIST_WORKER)
    _broker = os.environ.get("CELERY_BROKER_URL", "")
    _db = re.fullmatch(r"(rediss?://[^/]*)/(\d+)", _broker)
    if _db and not os.environ.get("CONCORD_XDIST_BROKER_SET"):
        # 15 for gw0, 14 for gw1, ...: Redis has 16 databases (0-15) by default
        _number = int(_db.group(2)) - int(XDIST_WORKER.removeprefix("gw"))
        if _number < 0:
            raise ValueError(f"{XDIST_WORKER}: no Redis database left below {_broker}")
        os.environ["CELERY_BROKER_URL"] = f"{_db.group(1)}/{_number}"
        os.environ["CONCORD_XDIST_BROKER_SET"] = "1"

from config.settings.base import *  # noqa: E402, F403
from config.settings.base import DATABASES, SQLITE, VAR_DIR  # noqa: E402

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
