"""What the benchmarks of the participant pages share (rating_load.py,
arrival_burst.py): a scratch PostgreSQL database, gunicorn serving Concord on
it with DEBUG off, the server time of a response, and a crowd worker's way in
(the Prolific study link, then the consent form posted as the page posts it).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import requests

REPO = Path(__file__).resolve().parent.parent
SERVER_TIMING = re.compile(r"app;dur=([\d.]+)")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_ms(response: requests.Response) -> float | None:
    """Django's own time on the request: the `Server-Timing` header of
    core.middleware.ServerTimingMiddleware (None when it is missing)."""
    found = SERVER_TIMING.search(response.headers.get("Server-Timing", ""))
    return float(found[1]) if found else None


@contextmanager
def scratch_database(postgres: str, name: str) -> Iterator[str]:
    """A fresh database `name` on the server of the URL `postgres` (dropped
    first if a killed run left it, and dropped after); yields its URL."""
    import psycopg

    with psycopg.connect(postgres, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
        try:
            yield postgres.rsplit("/", 1)[0] + f"/{name}"
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def web_env(database_url: str, var_dir: str | Path) -> dict[str, str]:
    """The environment of a web server as deployed (DEBUG off, database
    connections kept), on `database_url`, writing only under `var_dir`."""
    static = Path(var_dir) / "static"
    static.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "CONCORD_VAR_DIR": str(var_dir),
        "DATABASE_CONN_MAX_AGE": "60",
        "DJANGO_LOG_LEVEL": "WARNING",
        "DJANGO_STATIC_ROOT": str(static),
    }


@contextmanager
def gunicorn(env: dict[str, str], workers: int) -> Iterator[str]:
    """gunicorn with `workers` sync workers on a free port of 127.0.0.1, started
    as docs/deployment.md starts it; yields its base URL once it answers, and
    stops it (SIGTERM) after."""
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--timeout",
            "60",
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            if server.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {server.returncode}")
            try:
                requests.get(f"{base}/api/schema/", timeout=5)
                break
            except requests.RequestException:
                time.sleep(0.2)
        else:
            raise RuntimeError("gunicorn did not answer within 30 s")
        yield base
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def study_link(base: str, study: str, pid: str, study_id: str, session_id: str) -> str:
    """The link Prolific opens: the study's entry with the three Prolific ids."""
    query = urlencode({"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id})
    return f"{base}/s/{study}/?{query}"


class _ConsentForm(HTMLParser):
    """The consent page's form (`<form class="consent">`): its action and the
    fields it posts (hidden inputs: the CSRF token, the Prolific ids)."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "form" and "consent" in found.get("class", "").split():
            self.action, self._inside = found.get("action", ""), True
        elif tag == "input" and self._inside and found.get("type") == "hidden":
            self.fields[found.get("name", "")] = found.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._inside = False


def consent_form(html: str) -> tuple[str, dict[str, str]] | None:
    """(action, fields) of the consent page's form; None when the page has none."""
    form = _ConsentForm()
    form.feed(html)
    return (form.action, form.fields) if form.action is not None else None


def consent(
    session: requests.Session, base: str, page: requests.Response, timeout: float = 30
) -> requests.Response | None:
    """Tick the box and press Start on the consent `page` (a GET of the study
    link): POST its form's fields with consent=yes, as the browser does, and
    follow the redirects to the first item. None when the page has no form."""
    form = consent_form(page.text)
    if form is None:
        return None
    action, fields = form
    return session.post(
        base + action,
        data={**fields, "consent": "yes"},
        headers={"Referer": page.url},
        timeout=timeout,
    )
