"""Loaded by every Celery worker with the other apps' tasks modules
(`app.autodiscover_tasks`): runs has no task of its own, but its worker signal
handlers must be connected before the worker is ready."""

from runs import worker_signals  # noqa: F401  (connects the handlers)
