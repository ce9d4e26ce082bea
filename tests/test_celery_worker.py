"""A real Celery worker process on Redis runs an import end to end."""

from __future__ import annotations

import time
import uuid

import pytest

from config.celery import app as celery_app
from corpus.models import Document, Question
from generation.models import Response
from judging.models import BenchmarkImport, Judgment
from judging.tasks import run_benchmark_import
from tests.conftest import port_open, require
from tests.workers import redis_url, send_run, start_worker, stop

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path):
    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    queue = f"test-{uuid.uuid4().hex[:8]}"  # no stale message of another run can reach it
    process = start_worker(queue, url, tmp_path, "import-worker")
    log = open(tmp_path / "import-worker.log")  # noqa: SIM115 (closed below)
    yield url, queue, log
    stop(process)
    log.close()


def test_worker_runs_an_import_end_to_end(worker, synthetic_source):
    url, queue, log = worker
    assert not celery_app.conf.task_always_eager
    job = BenchmarkImport.objects.create(source=str(synthetic_source), with_responses=True)
    send_run(run_benchmark_import, job, queue, url)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (BenchmarkImport.Status.DONE, BenchmarkImport.Status.FAILED):
            break
        time.sleep(0.5)
    log.seek(0)
    worker_log = log.read()
    assert job.status == BenchmarkImport.Status.DONE, f"{job.message}\n{worker_log}"
    assert job.started_at and job.finished_at and job.stage == "finished"
    assert "judging.run_benchmark_import" in worker_log  # it ran there, not here
    assert Document.objects.count() == 1
    assert Question.objects.count() == 6
    assert Response.objects.count() == 18
    assert Judgment.objects.count() == 72
