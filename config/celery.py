"""The Celery app.

Queues: `default` for light work (imports, metrics), `llm` for calls to LLM
APIs, `gpu` for local models (start that worker with `-Q gpu -c 1` so that one
process keeps the model loaded). Tasks choose their queue in CELERY_TASK_ROUTES
or with `queue=` when sent.

What every worker starts beside its tasks (the run reaper, the heartbeat) is
connected in `runs/worker_signals.py`, which the worker loads with the tasks
modules: this module imports no app, so that `runs` may import it.
"""

import os

from celery import Celery
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
