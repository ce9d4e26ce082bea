"""Webhooks on the worker: one attempt of a delivery, and the beat task that
finds every due delivery (a lost message, a worker restart, a retry an hour
away), so that the delivery rows are the truth and nothing is lost."""

from __future__ import annotations

from config.celery import app
from webhooks import services


@app.task(name=services.DELIVER_TASK)
def deliver(delivery_id: int) -> str:
    return services.attempt(delivery_id)


@app.task(name="webhooks.deliver_due")
def deliver_due() -> int:
    ids = services.due()
    services.send_soon(ids)
    return len(ids)
