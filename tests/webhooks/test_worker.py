"""Deliveries through a real Celery worker on Redis: the first attempt sent
once the event commits, a retry as a delayed message, and a delivery whose
message was lost found by the beat task."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from tests.conftest import port_open, require
from tests.webhooks.conftest import endpoint_for, project_with
from tests.workers import app_sends_to, redis_url, start_worker, stop, wait_for
from webhooks import services
from webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path, settings, allow_private):
    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    queue = f"test-webhooks-{uuid.uuid4().hex[:8]}"  # no stale message can reach it
    settings.CONCORD_WEBHOOKS_QUEUE = queue
    process = start_worker(
        queue,
        url,
        tmp_path,
        "webhooks-worker",
        CONCORD_WEBHOOKS_QUEUE=queue,
        CONCORD_WEBHOOKS_ALLOW_PRIVATE="1",
        CONCORD_WEBHOOKS_BACKOFF_SECONDS="1",
    )
    with app_sends_to(url):
        yield tmp_path / "webhooks-worker.log"
    stop(process)


def log_of(path) -> str:
    return path.read_text() if path.exists() else ""


def test_a_worker_delivers_and_retries(worker, researcher, receiver):
    receiver.plan = [500]
    endpoint = endpoint_for(project_with(researcher), receiver, ["run.finished"])
    with transaction.atomic():
        delivery = services.do_send_test(endpoint, researcher)
    assert wait_for(lambda: len(receiver.received) >= 2, 60), log_of(worker)
    assert wait_for(
        lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == "delivered", 10
    ), log_of(worker)
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert list(delivery.attempt_rows.values_list("status_code", flat=True)) == [500, 200]
    assert all(r.verified for r in receiver.received)
    assert "webhooks.deliver" in log_of(worker)  # it ran there, not here


def test_the_beat_task_sends_what_a_lost_message_left(worker, researcher, receiver):
    endpoint = endpoint_for(project_with(researcher), receiver, ["run.finished"])
    # written as an event would, but its message never reached the broker
    lost = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_type="run.finished",
        payload={"id": "lost", "type": "run.finished", "data": {}},
        max_attempts=6,
        next_attempt_at=timezone.now() - timedelta(minutes=1),
    )
    from webhooks.tasks import deliver_due

    assert deliver_due() == 1  # the beat's task, run here: it queues the attempt
    assert wait_for(lambda: WebhookDelivery.objects.get(pk=lost.pk).status == "delivered", 60), (
        log_of(worker)
    )
    assert len(receiver.received) == 1 and receiver.received[0].verified
