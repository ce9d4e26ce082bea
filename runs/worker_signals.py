"""What every Celery worker starts beside its tasks: the run reaper (takes over
runs whose worker died, `runs.lifecycle.Reaper`) and the heartbeat the
console's workers panel reads (`runs.workers.WorkerBeat`).

Connected to Celery's worker signals when the worker imports the tasks
modules (`runs/tasks.py` imports this one), so that `config.celery` imports
no app and no import circle runs through it.
"""

from __future__ import annotations

from typing import Any

from celery.signals import worker_ready, worker_shutdown

from runs.lifecycle import Reaper
from runs.workers import WorkerBeat, WorkerIdentity

_beat: WorkerBeat | None = None


@worker_ready.connect
def start_run_reaper(**kwargs: Any) -> None:
    """Every worker takes over runs whose worker died (runs.lifecycle)."""
    Reaper().start()


@worker_ready.connect
def start_worker_beat(sender: Any = None, **kwargs: Any) -> None:
    """Every worker writes its heartbeat (node name, queues, what it runs) for
    the console's workers panel (runs.workers)."""
    global _beat
    consumer = sender
    try:
        queues = sorted(q.name for q in consumer.task_consumer.queues)
    except AttributeError:  # no consumer (a test calling the handler): the app's queues
        from config.celery import app

        queues = sorted(app.amqp.queues.consume_from or app.amqp.queues)
    name = getattr(consumer, "hostname", "") or "worker"
    concurrency = getattr(getattr(consumer, "pool", None), "limit", 0) or 0
    _beat = WorkerBeat(WorkerIdentity(name=name, queues=queues, concurrency=concurrency))
    _beat.start()


@worker_shutdown.connect
def stop_worker_beat(**kwargs: Any) -> None:
    if _beat is not None:
        _beat.stop()
