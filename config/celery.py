"""The Celery app.

Queues: `default` for light work (imports, metrics), `llm` for calls to LLM
APIs, `gpu` for local models (start that worker with `-Q gpu -c 1` so that one
process keeps the model loaded). Tasks choose their queue in CELERY_TASK_ROUTES
or with `queue=` when sent.
"""

import os

from celery import Celery
from celery.signals import worker_ready, worker_shutdown
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("llm"), Queue("gpu"))
app.autodiscover_tasks()


@app.on_after_configure.connect
def make_broker_folders(sender: Celery, **kwargs) -> None:
    """The embedded filesystem broker needs its folders before the first message."""
    options = sender.conf.broker_transport_options or {}
    if str(sender.conf.broker_url).startswith("filesystem://"):
        for key in ("data_folder_in", "data_folder_out", "control_folder", "processed_folder"):
            if options.get(key):
                os.makedirs(options[key], exist_ok=True)


@worker_ready.connect
def start_run_reaper(**kwargs) -> None:
    """Every worker takes over runs whose worker died (runs.lifecycle)."""
    from runs.lifecycle import Reaper

    Reaper().start()


_beat = None


@worker_ready.connect
def start_worker_beat(sender=None, **kwargs) -> None:
    """Every worker writes its heartbeat (node name, queues, what it runs) for
    the console's workers panel (runs.workers)."""
    global _beat
    from runs.workers import WorkerBeat, WorkerIdentity

    consumer = sender
    try:
        queues = sorted(q.name for q in consumer.task_consumer.queues)
    except AttributeError:  # no consumer (a test calling the handler): the app's queues
        queues = sorted(app.amqp.queues.consume_from or app.amqp.queues)
    name = getattr(consumer, "hostname", "") or "worker"
    concurrency = getattr(getattr(consumer, "pool", None), "limit", 0) or 0
    _beat = WorkerBeat(WorkerIdentity(name=name, queues=queues, concurrency=concurrency))
    _beat.start()


@worker_shutdown.connect
def stop_worker_beat(**kwargs) -> None:
    if _beat is not None:
        _beat.stop()
