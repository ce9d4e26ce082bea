"""Worker heartbeats (runs.workers): each worker writes its own row (queues,
what it runs, last beat), the console reads it; a real worker on Redis, a
clean stop, a worker that went silent, and two beats of one name racing."""

from __future__ import annotations

import os
import socket
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from corpus.models import Dataset
from judging.judging_runs import create_judging_run
from judging.models import Evaluator, JudgingRun
from runs.models import WorkerHeartbeat
from runs.workers import (
    WorkerIdentity,
    beat,
    forget_old,
    inspect_workers,
    mark_stopped,
    worker_states,
)
from tests.conftest import celery_options
from tests.runs.test_lifecycle import in_threads, need_redis
from tests.workers import app_sends_to, start_worker, stop, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def metric_run() -> JudgingRun:
    from judging.judging_runs import ensure_metric_evaluators

    ensure_metric_evaluators()
    return create_judging_run(
        Evaluator.objects.get(name="metric: f1"),
        Dataset.objects.get(version="qa", language="en", split="test2"),
        "st",
    )


def test_a_beat_writes_the_row_and_names_the_runs_this_process_holds(two_meetings_committed):
    run = metric_run()
    other = metric_run()
    host, pid = socket.gethostname(), os.getpid()
    JudgingRun.objects.filter(pk=run.pk).update(
        status="running", lease_owner=f"{host}:{pid}:abcd1234", done=5
    )
    # another process's lease (another worker) is not this worker's
    JudgingRun.objects.filter(pk=other.pk).update(
        status="running", lease_owner=f"{host}:{pid + 100000}:abcd1234"
    )
    worker = WorkerIdentity(name="main@box", queues=["llm", "default"], concurrency=2)
    beat(worker)
    row = WorkerHeartbeat.objects.get(name="main@box")
    assert (row.host, row.pid, row.queues, row.concurrency) == (host, pid, ["default", "llm"], 2)
    assert [(r["kind"], r["id"], r["done"]) for r in row.running] == [("judging run", run.pk, 5)]
    assert row.stopped_at is None
    # the next beat updates the same row (one per node name)
    JudgingRun.objects.filter(pk=run.pk).update(status="done", lease_owner="")
    beat(worker)
    assert WorkerHeartbeat.objects.count() == 1
    assert WorkerHeartbeat.objects.get().running == []


def test_states_up_silent_and_stopped(transactional_db, settings):
    settings.CONCORD_WORKER_BEAT_SECONDS = 5
    now = timezone.now()
    beat(WorkerIdentity(name="up@a", queues=["llm"]), now=now - timedelta(seconds=4))
    beat(WorkerIdentity(name="dead@b", queues=["gpu"]), now=now - timedelta(seconds=16))
    beat(WorkerIdentity(name="gone@c", queues=["default"]))
    mark_stopped("gone@c", os.getpid())
    states = {s.row.name: s for s in worker_states(now)}
    assert states["up@a"].state == "up" and 3.5 < states["up@a"].seconds_ago < 4.5
    assert states["dead@b"].state == "silent"  # three beats (15 s) missed
    assert states["gone@c"].state == "stopped"
    assert [s.row.name for s in worker_states(now)] == ["up@a", "dead@b", "gone@c"]
    # rows of workers gone for two days are forgotten
    beat(WorkerIdentity(name="ancient@d", queues=[]), now=now - timedelta(days=3))
    assert forget_old(now) == 1
    assert not WorkerHeartbeat.objects.filter(name="ancient@d").exists()


def test_two_beats_of_one_name_at_once_leave_one_row(transactional_db):
    """The row's lock is its unique name: INSERT ... ON CONFLICT DO UPDATE from
    two threads (two connections) at once never fails and leaves one row."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL (set DATABASE_URL)")
    for attempt in range(5):
        name = f"twice-{attempt}@box"
        rows = in_threads(
            lambda name=name: beat(WorkerIdentity(name=name, queues=["llm"])), count=4
        )
        assert all(isinstance(row, WorkerHeartbeat) for row in rows)
        assert WorkerHeartbeat.objects.filter(name=name).count() == 1


def test_inspect_says_when_the_broker_has_no_remote_control(settings):
    # as on the demo's filesystem broker (config.settings: no remote control there)
    with celery_options(worker_enable_remote_control=False):
        answer = inspect_workers()
    assert answer["supported"] is False and "no remote control" in answer["detail"]


@pytest.mark.worker
def test_a_real_worker_reports_its_queue_and_marks_itself_stopped(transactional_db, tmp_path):
    url = need_redis()
    queue = f"test-beat-{uuid.uuid4().hex[:8]}"
    worker = start_worker(queue, url, tmp_path, "beating", CONCORD_WORKER_BEAT_SECONDS="0.5")
    try:
        assert wait_for(
            lambda: WorkerHeartbeat.objects.filter(name__startswith="beating@").exists(), 60
        ), (tmp_path / "beating.log").read_text()
        row = WorkerHeartbeat.objects.get(name__startswith="beating@")
        assert row.queues == [queue] and row.pid == worker.pid
        first = row.last_beat_at
        assert wait_for(
            lambda: WorkerHeartbeat.objects.get(pk=row.pk).last_beat_at > first, 10
        )  # it keeps beating
        assert worker_states()[0].state == "up"
        # remote control on, as on a Redis broker
        with celery_options(worker_enable_remote_control=True), app_sends_to(url):
            remote = inspect_workers(timeout=2.0)  # Redis has remote control
        assert remote["supported"] is True
        assert queue in remote["workers"].get(row.name, {}).get("queues", []), remote
    finally:
        stop(worker)
    row.refresh_from_db()
    assert row.stopped_at is not None  # a clean stop says so
    time.sleep(0.1)
    assert [s.state for s in worker_states()] == ["stopped"]
