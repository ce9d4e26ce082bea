"""Real Celery worker processes for tests, on the test database and Redis."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from urllib.parse import quote

from django.db import connection

from tests.conftest import REPO


def redis_url() -> str:
    url = os.environ.get("CELERY_BROKER_URL", "")
    return url if url.startswith("redis://") else "redis://127.0.0.1:6379/15"


def database_url_for_worker() -> str:
    """The test database, as a URL the worker's settings understand."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user = quote(db["USER"] or "")
    password = f":{quote(db['PASSWORD'])}" if db["PASSWORD"] else ""
    return (
        f"postgres://{user}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    )


def start_worker(
    queue: str, url: str, tmp_path, name: str, *, as_deployed: bool = False, **env
) -> subprocess.Popen:
    """A worker on `queue` (solo pool: the task runs in the process a test can
    kill); `as_deployed`: started as docs/deployment.md starts one (the
    prefork pool, gossip and mingle on)."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": database_url_for_worker(),
        "CELERY_BROKER_URL": url,
        "CELERY_VISIBILITY_TIMEOUT": "3",
        # a killed worker's run is taken over within seconds, not 45 s
        "CONCORD_RUN_LEASE_SECONDS": "3",
        "CONCORD_RUN_REAP_SECONDS": "1",
        "CONCORD_VAR_DIR": str(tmp_path / name),
        **env,
    }
    log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 (lives as long as the worker)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queue,
            *(
                ["-c", "2"]
                if as_deployed
                else ["--pool", "solo", "--without-gossip", "--without-mingle"]
            ),
            "--loglevel",
            "INFO",
            "-n",
            f"{name}@%h",
        ],
        cwd=REPO,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def stop(*workers) -> None:
    for worker in workers:
        if worker is not None and worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@contextmanager
def app_sends_to(url: str):
    """Point the Celery app's own sending (what the services' `enqueue` uses)
    at the broker at `url` for the block. The app keeps the connection and
    producer pools of the broker it first sent to, so they are dropped on the
    way in and out: changing broker_url alone would leave an earlier test's
    broker (the filesystem one when CELERY_BROKER_URL is unset) in use."""
    from config.celery import app as celery_app

    previous = celery_app.conf.broker_url

    def use(broker: str) -> None:
        # under both names: celery 5.6 reads the CELERY_-namespaced one first
        celery_app.conf.broker_url = celery_app.conf.CELERY_BROKER_URL = broker
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    use(url)
    try:
        yield
    finally:
        use(previous)


def send_run(task, run, queue: str, url: str) -> None:
    """Send a run's task to a test's own queue on the Redis at `url`; the run
    remembers the queue, so a worker that takes it over sends it there too."""
    from config.celery import app as celery_app

    type(run).objects.filter(pk=run.pk).update(queue_name=queue)
    with celery_app.connection_for_write(url) as broker:
        task.apply_async(args=[run.pk], queue=queue, connection=broker)
