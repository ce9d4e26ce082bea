"""Settings shared by every environment.

Every value comes from the environment, with defaults that run the demo on one
machine: SQLite under var/ and an embedded (filesystem) Celery broker. CI and
production set DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis).
"""

import os
from pathlib import Path

import dj_database_url

from users.oidc.config import from_environment as oidc_from_environment

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("CONCORD_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", True)
# The default key only serves local development; production.py refuses it.
INSECURE_DEV_SECRET_KEY = "concord-insecure-development-key-do-not-use-in-production"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", INSECURE_DEV_SECRET_KEY)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Concord apps, in the order data flows through them.
    "users",
    "runs",
    "llm",
    "corpus",
    "generation",
    "judging",
    "annotator",
    "analysis",
    "adaptive",
    "webhooks",
    "console",
    "demo",
]

MIDDLEWARE = [
    "core.middleware.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'concord.sqlite3'}"),
        conn_max_age=int(os.environ.get("DATABASE_CONN_MAX_AGE", "0")),
    )
}
SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
if SQLITE:
    # Django's SQLite backend whose flush sets aside the triggers that refuse
    # deleting human data (core/sqlite_backend/base.py).
    DATABASES["default"]["ENGINE"] = "core.sqlite_backend"
    # SQLite creates the file, not its folder: a fresh checkout has no var/ yet.
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # The demo runs a web server and a worker against one SQLite file: WAL lets
    # readers go on during a write, IMMEDIATE takes the write lock up front so
    # that two writers queue (timeout) instead of failing with "locked".
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "users.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
# `/` sends each role where it works: researchers to the console, gold annotators
# to their studies.
LOGIN_REDIRECT_URL = "start"

# --- Sign-in with the lab's identity provider (OIDC) -----------------------
# Off unless OIDC_RP_CLIENT_ID is set; then the rest is required and checked here,
# at start-up (users/oidc/config.py; docs/deployment.md). Local accounts always work.
CONCORD_OIDC = oidc_from_environment(os.environ)
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "users.backends.SiteAdminPermissions",  # the admin role holds the admin's permissions
]
if CONCORD_OIDC is not None:
    AUTHENTICATION_BACKENDS.append("users.oidc.backend.OIDCBackend")
    globals().update(CONCORD_OIDC.django_settings())  # mozilla-django-oidc's OIDC_* settings
# --- end of OIDC -------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- REST API -------------------------------------------------------------
# Which related objects a user may name in an API body or filter (core.scoping):
# his projects' and the shared ones.
CONCORD_SCOPE_CHOICES = "users.projects.scope_choices"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: its WWW-Authenticate header makes failures answer 401.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["users.permissions.IsResearcher"],
    # A malformed JSON body (nested too deeply, numbers too large) is a 400.
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "core.filters.FilterBackend",  # django-filter, refusing bad booleans too
        "rest_framework.filters.SearchFilter",
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    # The schema declares the error answers (400, 401, 403, 404) of each operation.
    "DEFAULT_SCHEMA_CLASS": "core.api.ConcordAutoSchema",
    # Any core.errors.ConcordError answers {"detail": message, "code": code} with its status.
    "EXCEPTION_HANDLER": "core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": (
        "Benchmarks (datasets, documents, questions), generated responses and "
        "judgments, read only; evaluators, judging runs, generation runs and studies. "
        "Researchers and admins only; authenticate with a session or "
        "`Authorization: Token <key>`."
    ),
    "VERSION": "0.1.0",
    # The schema describes the API, it holds no data: anyone may read it.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # several models share these choices: one named enum each
    "ENUM_NAME_OVERRIDES": {
        "ModeEnum": "corpus.choices.Mode",
        "LanguageEnum": "corpus.choices.Language",
        "DatasetVersionEnum": "corpus.choices.DatasetVersion",
        # one name per choice set of the fields called "status"
        "RunStatusEnum": "runs.models.RunStatus",
        "JudgeItemStatusEnum": "judging.models.JudgeItem.Status",
        "StudyStatusEnum": "annotator.models.Study.Status",
        "ParticipantStatusEnum": "annotator.models.Participant.Status",
    },
}

# --- Celery ---------------------------------------------------------------
# Without CELERY_BROKER_URL the demo uses kombu's filesystem transport: web and
# worker on one machine exchange messages through files under var/, no server.
CELERY_BROKER_DIR = VAR_DIR / "celery-broker"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "messages"),
        "data_folder_out": str(CELERY_BROKER_DIR / "messages"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "store_processed": False,
    }
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # A task taken by a worker that dies is given to another after this many
    # seconds (tasks are acknowledged late). Keep it above the longest task.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))
    }
# Results and progress live in Concord's own tables (jobs, runs), so Celery
# needs no result backend.
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# The filesystem transport cannot broadcast: workers on it take no remote
# control commands (inspect, revoke), which the demo does not need.
CELERY_WORKER_ENABLE_REMOTE_CONTROL = not CELERY_BROKER_URL.startswith("filesystem://")

# Periodic work, for a worker started with -B (or a separate `celery beat`).
CELERY_BEAT_SCHEDULE = {
    "release-stale-study-work": {
        "task": "annotator.release_stale_work",
        "schedule": 300.0,  # seconds
    },
    "advance-adaptive-studies": {
        "task": "adaptive.advance_all",
        "schedule": 60.0,
    },
    # webhook deliveries due (a retry, a lost message): docs/webhooks.md
    "deliver-due-webhooks": {
        "task": "webhooks.deliver_due",
        "schedule": 30.0,
    },
}

# --- Concord --------------------------------------------------------------
# Where the ELITR-Bench archives are looked for before downloading them.
CONCORD_ELITR_DATA = os.environ.get("CONCORD_ELITR_DATA", "")
CONCORD_DOWNLOAD_DIR = VAR_DIR / "downloads"

# How often a judging run on the OpenAI Batch API asks whether its batch is done.
CONCORD_BATCH_POLL_SECONDS = int(os.environ.get("CONCORD_BATCH_POLL_SECONDS", "60"))

# A run's worker renews its lease every third of this; a run whose lease has
# expired (its worker died) is taken over by another worker, which looks every
# CONCORD_RUN_REAP_SECONDS.
CONCORD_RUN_LEASE_SECONDS = float(os.environ.get("CONCORD_RUN_LEASE_SECONDS", "45"))
CONCORD_RUN_REAP_SECONDS = float(os.environ.get("CONCORD_RUN_REAP_SECONDS", "15"))
# A worker that could not renew a run's lease sends no model request once the
# lease is this close to expiring (at most a third of the lease), so that a
# takeover never overlaps it (runs.lifecycle, "Fencing").
CONCORD_RUN_LEASE_MARGIN_SECONDS = float(os.environ.get("CONCORD_RUN_LEASE_MARGIN_SECONDS", "5"))
# How long a run's database work (the call ledger's writes, its results, its
# end) waits for a database that cannot be reached, trying again, before the
# run fails (core.database).
CONCORD_DATABASE_OUTAGE_SECONDS = float(os.environ.get("CONCORD_DATABASE_OUTAGE_SECONDS", "300"))
# A slot of an endpoint's in-flight gate in Redis is leased this long and
# renewed every third of it by its process (llm.gate): a killed worker's slots
# are free again within this.
CONCORD_GATE_LEASE_SECONDS = float(os.environ.get("CONCORD_GATE_LEASE_SECONDS", "15"))
# Every worker writes its heartbeat (queues, what it runs) this often, for the
# console's workers panel (runs.workers).
CONCORD_WORKER_BEAT_SECONDS = float(os.environ.get("CONCORD_WORKER_BEAT_SECONDS", "5"))

# The demo's switch: bots on a fake Prolific server take the places of adaptive
# studies (demo.simulated); the console says so on every adaptive study's page.
CONCORD_DEMO_SIMULATED_PARTICIPANTS = env_bool("CONCORD_DEMO_SIMULATED_PARTICIPANTS", False)

# --- Upload limits (docs/deployment.md, "Upload limits") --------------------
# What one uploaded or imported file may hold (benchmarks, responses, ratings,
# ELITR-Bench archives; console, API and commands alike: corpus.importers.limits).
# With these defaults reading any file stays under 300 MB above the process's
# idle size; raising them raises that bound.
# A file on disk, and a Parquet file's text once read.
CONCORD_UPLOAD_MAX_BYTES = int(os.environ.get("CONCORD_UPLOAD_MAX_BYTES", str(64 * 1024**2)))
# One JSON Lines or CSV line, one Parquet row once read.
CONCORD_UPLOAD_MAX_LINE_BYTES = int(
    os.environ.get("CONCORD_UPLOAD_MAX_LINE_BYTES", str(16 * 1024**2))
)
# One text in a record (a document, a response, a field name), in characters.
CONCORD_UPLOAD_MAX_FIELD_CHARS = int(os.environ.get("CONCORD_UPLOAD_MAX_FIELD_CHARS", "4000000"))
# Lists and objects nested inside one record.
CONCORD_UPLOAD_MAX_DEPTH = int(os.environ.get("CONCORD_UPLOAD_MAX_DEPTH", "64"))
# Records (lines, rows) in one file.
CONCORD_UPLOAD_MAX_ROWS = int(os.environ.get("CONCORD_UPLOAD_MAX_ROWS", "100000"))
# A member of a zip or tar archive, uncompressed, and its compression ratio
# (uncompressed / compressed; checked for members over 1 MB).
CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES = int(
    os.environ.get("CONCORD_UPLOAD_ZIP_MAX_MEMBER_BYTES", str(64 * 1024**2))
)
CONCORD_UPLOAD_ZIP_MAX_RATIO = float(os.environ.get("CONCORD_UPLOAD_ZIP_MAX_RATIO", "100"))

# --- Webhooks (docs/webhooks.md) -------------------------------------------
# Allow webhook URLs on any address that is not public: loopback, private,
# link-local and the like, also when an IPv6 form carries one (the lab's own
# network; webhooks.addresses). Refused by default, since a researcher's URL is
# fetched by the worker (server-side request forgery).
CONCORD_WEBHOOKS_ALLOW_PRIVATE = env_bool("CONCORD_WEBHOOKS_ALLOW_PRIVATE", False)
# A delivery fails after this many attempts; between them the worker waits
# 30 s, 2 min, 10 min, 1 h, 6 h (then 6 h again), each +-20%.
CONCORD_WEBHOOKS_MAX_ATTEMPTS = int(os.environ.get("CONCORD_WEBHOOKS_MAX_ATTEMPTS", "6"))
_BACKOFF = os.environ.get("CONCORD_WEBHOOKS_BACKOFF_SECONDS", "30,120,600,3600,21600")
CONCORD_WEBHOOKS_BACKOFF_SECONDS = tuple(float(s) for s in _BACKOFF.split(","))
CONCORD_WEBHOOKS_CONNECT_TIMEOUT = float(os.environ.get("CONCORD_WEBHOOKS_CONNECT_TIMEOUT", "5"))
CONCORD_WEBHOOKS_READ_TIMEOUT = float(os.environ.get("CONCORD_WEBHOOKS_READ_TIMEOUT", "10"))
CONCORD_WEBHOOKS_QUEUE = os.environ.get("CONCORD_WEBHOOKS_QUEUE", "default")

# Prolific's API, optional: without a token studies are set up on Prolific by hand.
PROLIFIC_API_TOKEN = os.environ.get("PROLIFIC_API_TOKEN", "")
PROLIFIC_API_URL = os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/")
# the workspace Prolific keeps participant groups in (annotator.actions.groups)
PROLIFIC_WORKSPACE_ID = os.environ.get("PROLIFIC_WORKSPACE_ID", "")
# The address participants reach Concord at, for the study URL given to Prolific.
CONCORD_PUBLIC_URL = os.environ.get("CONCORD_PUBLIC_URL", "")


def report_cache(url: str, var_dir: Path) -> dict:
    """The cache of agreement reports and their figures (analysis.report.caching).

    Its keys are hashes of what was computed from (the data, the selection, the
    code), so an entry never goes stale and every web process may share it. On
    one machine (the demo's single process, or several gunicorn workers) files
    under var/: shared by the workers, kept across restarts, no server, and no
    load on the database the raters write to. Web servers on several machines
    share one Redis (CONCORD_CACHE_URL, e.g. a database of the broker's server
    other than the broker's own). A per-process memory cache would miss in
    every worker but the one that drew the figure."""
    if url.startswith(("redis://", "rediss://")):
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "TIMEOUT": REPORT_CACHE_SECONDS,
            "KEY_PREFIX": "concord-reports",
        }
    if url:
        raise ValueError(f"CONCORD_CACHE_URL {url!r}: only redis:// or rediss:// URLs are known.")
    return {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(var_dir / "cache" / "reports"),
        "TIMEOUT": REPORT_CACHE_SECONDS,
        # about 10 figures and one report per selection; a third is dropped at random
        # when full (entries never go stale: dropping only costs a redraw)
        "OPTIONS": {"MAX_ENTRIES": 3000},
    }


# Entries expire only to free room: a week after they were written.
REPORT_CACHE_SECONDS = 7 * 24 * 3600
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "reports": report_cache(os.environ.get("CONCORD_CACHE_URL", ""), VAR_DIR),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    # one line per HTTP request of the LLM client is too much at 32 requests at once
    "loggers": {"httpx": {"level": "WARNING"}},
}
