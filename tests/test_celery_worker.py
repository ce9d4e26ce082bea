"""A real Celery worker process on Redis runs an import end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from urllib.parse import quote

import pytest
from django.db import connection

from config.celery import app as celery_app
from corpus.models import Document, Question
from generation.models import Response
from judging.models import BenchmarkImport, Judgment
from judging.tasks import run_benchmark_import
from tests.conftest import REPO, port_open, require

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


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


@pytest.fixture
def worker(tmp_path):
    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    queue = f"test-{uuid.uuid4().hex[:8]}"  # no stale message of another run can reach it
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": database_url_for_worker(),
        "CELERY_BROKER_URL": url,
        "CONCORD_VAR_DIR": str(tmp_path / "worker-var"),
    }
    log = open(tmp_path / "worker.log", "w+")  # noqa: SIM115 (closed below)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queue,
            "--pool",
            "solo",
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
            "-n",
            f"{queue}@%h",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    yield url, queue, log
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


def test_worker_runs_an_import_end_to_end(worker, synthetic_source):
    url, queue, log = worker
    assert not celery_app.conf.task_always_eager
    job = BenchmarkImport.objects.create(source=str(synthetic_source), with_responses=True)
    with celery_app.connection_for_write(url) as broker:
        run_benchmark_import.apply_async(args=[job.pk], queue=queue, connection=broker)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (BenchmarkImport.Status.SUCCEEDED, BenchmarkImport.Status.FAILED):
            break
        time.sleep(0.5)
    log.seek(0)
    worker_log = log.read()
    assert job.status == BenchmarkImport.Status.SUCCEEDED, f"{job.message}\n{worker_log}"
    assert job.started_at and job.finished_at and job.stage == "finished"
    assert "judging.run_benchmark_import" in worker_log  # it ran there, not here
    assert Document.objects.count() == 1
    assert Question.objects.count() == 6
    assert Response.objects.count() == 18
    assert Judgment.objects.count() == 72
