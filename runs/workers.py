"""Which Celery workers are up, on which queues, running what.

Every worker starts a beat thread (config.celery, at worker_ready) that writes
its `WorkerHeartbeat` row every CONCORD_WORKER_BEAT_SECONDS: node name, host,
pid, queues, concurrency and the runs whose lease its processes hold (the
lease owner is `host:pid:token`, and a prefork worker's tasks run in its
child processes, so the children's pids count too). A worker that stops
cleanly marks its row stopped; one that died simply stops beating, and the
panel shows how long ago it was last seen.

Lock: a row is keyed by the node name (unique) and written with one
`INSERT ... ON CONFLICT (name) DO UPDATE`, so two beats of one name (a
worker restarted under the same name while the old one's thread still
beats) never fail and leave one row. Only the worker itself writes its row.

Celery's own `inspect()` needs a broker with broadcast (Redis, RabbitMQ):
`inspect_workers` asks it, as an extra, where it can.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from runs.lifecycle import run_models
from runs.models import RunStatus, WorkerHeartbeat

logger = logging.getLogger(__name__)

# A worker that has not beaten for this many intervals is shown as silent.
SILENT_AFTER_BEATS = 3
# Rows of workers gone for longer than this are dropped at the next beat.
FORGET_AFTER = timedelta(days=2)


def beat_seconds() -> float:
    return float(getattr(settings, "CONCORD_WORKER_BEAT_SECONDS", 5))


@dataclass
class WorkerIdentity:
    """What a worker says about itself (fixed for its life)."""

    name: str
    queues: list[str]
    concurrency: int = 0
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    started_at: datetime = field(default_factory=timezone.now)


def process_ids() -> list[int]:
    """This process and its pool's children (billiard: Celery's multiprocessing)."""
    pids = [os.getpid()]
    try:
        import billiard

        pids += [child.pid for child in billiard.active_children() if child.pid]
    except Exception:  # no pool of processes (solo, threads): only this one
        pass
    return pids


def runs_held_by(host: str, pids: list[int]) -> list[dict]:
    """The running runs whose lease one of these processes holds."""
    held = []
    for model in run_models():
        for pid in pids:
            prefix = f"{host}:{pid}:"
            for run in model._default_manager.filter(
                status=RunStatus.RUNNING, lease_owner__startswith=prefix
            ).only("pk", "done", "total", "heartbeat_at"):
                held.append(
                    {
                        "model": model._meta.label_lower,
                        "kind": str(model._meta.verbose_name),
                        "id": run.pk,
                        "done": run.done,
                        "total": run.total,
                        "pid": pid,
                    }
                )
    return held


def beat(worker: WorkerIdentity, *, now: datetime | None = None) -> WorkerHeartbeat:
    """Write the worker's row (one upsert on its node name)."""
    now = now or timezone.now()
    row = WorkerHeartbeat(
        name=worker.name,
        host=worker.host,
        pid=worker.pid,
        queues=sorted(worker.queues),
        concurrency=worker.concurrency,
        running=runs_held_by(
            worker.host, process_ids() if worker.pid == os.getpid() else [worker.pid]
        ),
        started_at=worker.started_at,
        last_beat_at=now,
        stopped_at=None,
    )
    WorkerHeartbeat.objects.bulk_create(
        [row],
        update_conflicts=True,
        unique_fields=["name"],
        update_fields=[
            "host",
            "pid",
            "queues",
            "concurrency",
            "running",
            "started_at",
            "last_beat_at",
            "stopped_at",
        ],
    )
    return row


def mark_stopped(name: str, pid: int) -> None:
    """A clean stop: the row stays, marked stopped (only this process's row)."""
    now = timezone.now()
    WorkerHeartbeat.objects.filter(name=name, pid=pid).update(
        stopped_at=now, last_beat_at=now, running=[]
    )


def forget_old(now: datetime | None = None) -> int:
    now = now or timezone.now()
    deleted, _ = WorkerHeartbeat.objects.filter(last_beat_at__lt=now - FORGET_AFTER).delete()
    return deleted


class WorkerBeat(threading.Thread):
    """Runs in every worker: writes its heartbeat row every beat_seconds()."""

    def __init__(self, worker: WorkerIdentity) -> None:
        super().__init__(name="concord-worker-beat", daemon=True)
        self.worker = worker
        self.stopped = threading.Event()

    def run(self) -> None:
        first = True
        while first or not self.stopped.wait(beat_seconds()):
            first = False
            try:
                beat(self.worker)
                forget_old()
            except Exception:  # the database is away: the panel will show it silent
                logger.exception("Could not write the worker's heartbeat")
            finally:
                connection.close()

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=beat_seconds() + 5)
        try:
            mark_stopped(self.worker.name, self.worker.pid)
        finally:
            connection.close()


# --- reading ------------------------------------------------------------------------------


@dataclass
class WorkerState:
    row: WorkerHeartbeat
    seconds_ago: float
    state: str  # "up", "silent" (no beat for a while: dead or stuck), "stopped"

    @property
    def label(self) -> str:
        return {"up": "up", "silent": "not heard from", "stopped": "stopped"}[self.state]


def worker_states(now: datetime | None = None) -> list[WorkerState]:
    """Every worker that beat recently, up ones first."""
    now = now or timezone.now()
    silent_after = beat_seconds() * SILENT_AFTER_BEATS
    states = []
    for row in WorkerHeartbeat.objects.all():
        ago = max(0.0, (now - row.last_beat_at).total_seconds())
        if row.stopped_at is not None:
            state = "stopped"
        elif ago > silent_after:
            state = "silent"
        else:
            state = "up"
        states.append(WorkerState(row, ago, state))
    order = {"up": 0, "silent": 1, "stopped": 2}
    return sorted(states, key=lambda s: (order[s.state], s.row.name))


def inspect_workers(timeout: float = 1.0) -> dict:
    """Celery's remote control, where the broker has it: {"supported": bool,
    "detail": str, "workers": {name: {"active": [...], "queues": [...]}}}."""
    from config.celery import app

    if not app.conf.worker_enable_remote_control or str(app.conf.broker_url).startswith(
        "filesystem://"
    ):
        return {
            "supported": False,
            "detail": "This broker (the embedded filesystem one) has no remote control: "
            "the heartbeats above are all there is.",
            "workers": {},
        }
    from runs.lifecycle import broker_errors

    try:
        inspector = app.control.inspect(timeout=timeout)
        active = inspector.active() or {}
        queues = inspector.active_queues() or {}
    except broker_errors() as error:
        return {"supported": True, "detail": f"The broker did not answer: {error}", "workers": {}}
    workers = {
        name: {
            "active": [task.get("name", "?") for task in active.get(name, [])],
            "queues": sorted(q.get("name", "?") for q in queues.get(name, [])),
        }
        for name in sorted(set(active) | set(queues))
    }
    detail = f"{len(workers)} worker(s) answered." if workers else "No worker answered."
    return {"supported": True, "detail": detail, "workers": workers}
