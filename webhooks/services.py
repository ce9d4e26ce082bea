"""Every state change of webhooks: an event's deliveries, a claimed attempt and
its outcome, a redelivery, a test event, a new secret.

Locks: an attempt is claimed under the delivery's row lock taken with SKIP
LOCKED (`claim`): the claim moves `claimed_until` forward and counts the
attempt, so a second worker (a duplicate message, the beat task) finds the row
locked or claimed and sends nothing. The POST happens outside any transaction;
its outcome is written under the row lock again, only while the delivery is
still at that attempt (`record`). A worker that dies in between leaves an
attempt without outcome, and the delivery is claimed again once
`claimed_until` has passed.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from users.models import Project, User
from webhooks.models import EventType, WebhookAttempt, WebhookDelivery, WebhookEndpoint, new_secret
from webhooks.sending import Answer, headers_for, post, timeouts

logger = logging.getLogger(__name__)

# After the n-th failed attempt the next waits BACKOFF[n - 1] seconds (the last
# one again beyond the list), times a random factor in [0.8, 1.2].
BACKOFF_SECONDS = (30, 120, 600, 3600, 21600)
JITTER = 0.2
# A retry due within this many seconds is sent as a delayed message too; the
# beat task finds every due delivery anyway.
SHORT_RETRY_SECONDS = 600
# The beat task leaves a delivery this long to its own message first.
BEAT_GRACE_SECONDS = 20
DELIVER_TASK = "webhooks.deliver"  # webhooks.tasks, by name: that module imports this one


def max_attempts() -> int:
    return int(getattr(settings, "CONCORD_WEBHOOKS_MAX_ATTEMPTS", 6))


def backoff_schedule() -> tuple[float, ...]:
    return tuple(getattr(settings, "CONCORD_WEBHOOKS_BACKOFF_SECONDS", BACKOFF_SECONDS))


def retry_delay(failed_attempts: int, rng: random.Random | None = None) -> float:
    """Seconds before the attempt after `failed_attempts` failed ones."""
    schedule = backoff_schedule()
    base = schedule[min(failed_attempts, len(schedule)) - 1]
    return base * (rng or random).uniform(1 - JITTER, 1 + JITTER)


def claim_seconds() -> float:
    """How long a claimed attempt keeps others away: well above its timeouts."""
    connect, read = timeouts()
    return 2 * (connect + read) + 30


def queue() -> str:
    return str(getattr(settings, "CONCORD_WEBHOOKS_QUEUE", "default"))


# --- events -----------------------------------------------------------------------------------


def envelope(event_type: str, event_id: uuid.UUID, project: Project, data: dict) -> dict:
    return {
        "id": str(event_id),
        "type": event_type,
        "created_at": timezone.now().isoformat(),
        "project": {"id": project.pk, "slug": project.slug, "name": project.name},
        "data": data,
    }


def subscribed(project_id: int, event_type: str) -> list[WebhookEndpoint]:
    """The project's active endpoints that want the event (a few per project:
    filtered here, which every database can do with a JSON list)."""
    endpoints = WebhookEndpoint.objects.filter(project_id=project_id, active=True)
    return [e for e in endpoints if e.wants(event_type)]


def do_emit(
    event_type: str,
    project_id: int,
    data: dict,
    endpoints: Iterable[WebhookEndpoint] | None = None,
) -> list[WebhookDelivery]:
    """One delivery per endpoint that wants the event, written in the caller's
    transaction (the change that caused the event); each is sent once that
    commits. Needs no lock."""
    chosen = list(endpoints) if endpoints is not None else subscribed(project_id, event_type)
    if not chosen:
        return []
    event_id = uuid.uuid4()
    payload = envelope(event_type, event_id, Project.objects.get(pk=project_id), data)
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            event_type=event_type,
            event_id=event_id,
            payload=payload,
            max_attempts=max_attempts(),
            next_attempt_at=now,
            created_at=now,
        )
        for endpoint in chosen
    )
    send_on_commit([d.pk for d in deliveries])
    return deliveries


def send_on_commit(delivery_ids: list[int]) -> None:
    transaction.on_commit(lambda: send_soon(delivery_ids))


def send_soon(delivery_ids: list[int], countdown: float = 0) -> None:
    """Queue an attempt of each delivery. A broker that refuses is logged, not
    raised: the beat task finds the deliveries (their rows are the truth)."""
    from config.celery import app
    from runs.lifecycle import broker_errors

    if DELIVER_TASK not in app.tasks:  # a web process has not imported the tasks modules
        app.loader.import_default_modules()
    deliver = app.tasks[DELIVER_TASK]
    for delivery_id in delivery_ids:
        try:
            deliver.apply_async(
                args=[delivery_id], queue=queue(), countdown=countdown or None, retry=False
            )
        except broker_errors() as error:
            logger.warning(
                "Webhook delivery %s not queued (%s): the beat task will send it",
                delivery_id,
                type(error).__name__,
            )


# --- attempts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    delivery_id: int
    number: int
    attempt_id: int
    url: str
    secret: str
    event_type: str
    event_id: str
    body: bytes


def body_of(payload: dict) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def claimable(now: datetime) -> Q:
    return Q(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now) & (
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )


@transaction.atomic
def claim(delivery_id: int, now: datetime | None = None) -> Claim | None:
    """The next attempt of a due delivery, for this worker alone; None when it
    is not due, finished, or another worker holds or claimed it."""
    now = now or timezone.now()
    delivery = (
        WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
        .select_related("endpoint")
        .filter(claimable(now), pk=delivery_id)
        .first()
    )
    if delivery is None:
        return None
    delivery.attempts += 1
    delivery.claimed_until = now + timedelta(seconds=claim_seconds())
    delivery.save(update_fields=["attempts", "claimed_until"])
    attempt = WebhookAttempt.objects.create(
        delivery=delivery, number=delivery.attempts, started_at=now
    )
    return Claim(
        delivery.pk,
        delivery.attempts,
        attempt.pk,
        delivery.endpoint.url,
        delivery.endpoint.secret,
        delivery.event_type,
        str(delivery.event_id),
        body_of(delivery.payload),
    )


@transaction.atomic
def record(claimed: Claim, answer: Answer, now: datetime | None = None) -> str:
    """Write an attempt's outcome; the delivery moves on (delivered, due again
    after its backoff, or failed) only while it is still at this attempt.
    Returns the delivery's status."""
    now = now or timezone.now()
    WebhookAttempt.objects.filter(pk=claimed.attempt_id).update(
        duration_ms=answer.duration_ms,
        status_code=answer.status_code,
        error=answer.error,
        response_excerpt=answer.excerpt,
    )
    delivery = WebhookDelivery.objects.select_for_update().get(pk=claimed.delivery_id)
    if delivery.attempts != claimed.number or delivery.status != WebhookDelivery.Status.PENDING:
        return delivery.status  # another worker took it over after this claim ran out
    delivery.claimed_until = None
    if answer.delivered:
        delivery.status = WebhookDelivery.Status.DELIVERED
        delivery.delivered_at = now
        delivery.next_attempt_at = None
    elif delivery.attempts >= delivery.max_attempts:
        delivery.status = WebhookDelivery.Status.FAILED
        delivery.next_attempt_at = None
    else:
        delay = retry_delay(delivery.attempts)
        delivery.next_attempt_at = now + timedelta(seconds=delay)
        if delay <= SHORT_RETRY_SECONDS:
            pk = delivery.pk
            transaction.on_commit(lambda: send_soon([pk], countdown=delay))
    delivery.save(update_fields=["status", "delivered_at", "next_attempt_at", "claimed_until"])
    return delivery.status


def attempt(delivery_id: int) -> str:
    """Claim, POST, record: one attempt of a delivery, if it is due and nobody
    else makes it. Says what happened."""
    claimed = claim(delivery_id)
    if claimed is None:
        return "not due"
    timestamp = int(timezone.now().timestamp())
    headers = headers_for(
        claimed.secret,
        claimed.event_type,
        claimed.event_id,
        claimed.number,
        timestamp,
        claimed.body,
    )
    answer = post(claimed.url, claimed.body, headers)
    return record(claimed, answer)


def due(now: datetime | None = None, limit: int = 500) -> list[int]:
    """Deliveries due (for a while: their own message comes first) and not claimed."""
    now = now or timezone.now()
    return list(
        WebhookDelivery.objects.filter(
            claimable(now), next_attempt_at__lte=now - timedelta(seconds=BEAT_GRACE_SECONDS)
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )


# --- a researcher's actions -------------------------------------------------------------------


@transaction.atomic
def do_redeliver(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again now (the same event id), with a fresh allowance of
    attempts; one being made (claimed) is left alone. Takes the delivery's lock."""
    locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    now = timezone.now()
    if locked.claimed_until is not None and locked.claimed_until > now:
        return locked
    locked.status = WebhookDelivery.Status.PENDING
    locked.max_attempts = locked.attempts + max_attempts()
    locked.next_attempt_at = now
    locked.claimed_until = None
    locked.save(update_fields=["status", "max_attempts", "next_attempt_at", "claimed_until"])
    send_on_commit([locked.pk])
    return locked


@transaction.atomic
def do_send_test(endpoint: WebhookEndpoint, actor: User | None) -> WebhookDelivery:
    """A `webhook.test` event to this endpoint alone (active or not). Needs no lock."""
    data = {
        "message": "A test event from Concord: your endpoint receives and verifies webhooks.",
        "endpoint": {"id": endpoint.pk, "url": endpoint.url},
        "sent_by": actor.get_username() if actor is not None else None,
    }
    return do_emit(EventType.TEST, endpoint.project_id, data, endpoints=[endpoint])[0]


@transaction.atomic
def do_rotate_secret(endpoint: WebhookEndpoint) -> str:
    """A new secret, returned once; deliveries sign with it from now on. Needs no lock."""
    secret = new_secret()
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(secret=secret)
    endpoint.secret = secret
    return secret


def payload_text(data: Any) -> str:
    """A payload as shown in the admin."""
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)
