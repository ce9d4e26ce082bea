"""The container's own checks (deploy/docker-entrypoint.sh, compose.yaml):

    python deploy/container.py wait-for-db      until PostgreSQL answers (CONCORD_DB_WAIT seconds)
    python deploy/container.py health web       gunicorn answers a page
    python deploy/container.py health worker Q  the worker of queue Q answers a ping
    python deploy/container.py health beat      beat wrote its schedule lately

Exits 0 when all is well, else 1 with the reason on stderr.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

# Beat writes its schedule at least every few minutes while it runs.
BEAT_STALE_SECONDS = 600


def fail(reason: str) -> int:
    print(reason, file=sys.stderr)
    return 1


def wait_for_db() -> int:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return 0  # SQLite or nothing set: Django says what is missing
    import psycopg

    deadline = time.monotonic() + float(os.environ.get("CONCORD_DB_WAIT", "120"))
    while True:
        try:
            psycopg.connect(url, connect_timeout=5).close()
            return 0
        except psycopg.OperationalError as error:
            if time.monotonic() > deadline:
                host = url.rpartition("@")[2]  # no password in the message
                return fail(f"The database at {host} did not answer: {error}")
            time.sleep(1)


def health_web() -> int:
    """The sign-in page, as the TLS proxy in front would ask for it (a host name
    Django accepts, HTTPS said by X-Forwarded-Proto)."""
    hosts = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h.strip()]
    host = (hosts or ["localhost"])[0].lstrip(".")
    port = os.environ.get("CONCORD_WEB_PORT", "8000")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/accounts/login/",
        headers={"Host": host, "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = response.status
    except (urllib.error.URLError, OSError) as error:
        return fail(f"web: {error}")
    return 0 if status == 200 else fail(f"web: HTTP {status}")


def health_worker(queue: str) -> int:
    from config.celery import app

    name = f"{queue}@{socket.gethostname()}"
    replies = app.control.ping(destination=[name], timeout=5)
    return 0 if replies else fail(f"worker {name} did not answer a ping")


def health_beat() -> int:
    files = list(Path(os.environ.get("CONCORD_VAR_DIR", "/var/lib/concord")).glob("celerybeat-*"))
    if not files:
        return fail("beat: no schedule file yet")
    age = time.time() - max(f.stat().st_mtime for f in files)
    return 0 if age < BEAT_STALE_SECONDS else fail(f"beat: schedule not written for {age:.0f} s")


def main(argv: list[str]) -> int:
    match argv:
        case ["wait-for-db"]:
            return wait_for_db()
        case ["health", "web"]:
            return health_web()
        case ["health", "worker", queue]:
            return health_worker(queue)
        case ["health", "beat"]:
            return health_beat()
    return fail(__doc__ or "")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
