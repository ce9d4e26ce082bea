"""Delivering: signed POSTs, retries with backoff, each attempt a row, a claim
that one worker alone holds, nothing for a rolled-back change."""

from __future__ import annotations

import errno
import re
import socket
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from tests.webhooks.conftest import endpoint_for, free_port, project_with, verify
from webhooks import addresses, services
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from webhooks.signing import signature_header

pytestmark = pytest.mark.django_db


@pytest.fixture
def now_retries(settings):
    """Retries due at once (the schedule's shape is tested on its own)."""
    settings.CONCORD_WEBHOOKS_BACKOFF_SECONDS = (0,)


def emit_test(endpoint: WebhookEndpoint) -> WebhookDelivery:
    return services.do_send_test(endpoint, None)


def attempt_all(delivery: WebhookDelivery) -> list[str]:
    """Attempt until it is no longer pending (what the worker and beat do)."""
    outcomes = []
    for _ in range(20):
        delivery.refresh_from_db()
        if delivery.status != WebhookDelivery.Status.PENDING:
            break
        outcomes.append(services.attempt(delivery.pk))
    return outcomes


def test_a_delivery_is_signed_as_documented(
    researcher, receiver, django_capture_on_commit_callbacks
):
    endpoint = endpoint_for(project_with(researcher), receiver, ["run.finished"])
    with django_capture_on_commit_callbacks() as queued:
        delivery = emit_test(endpoint)
    assert len(queued) == 1  # its task is sent once the event commits
    assert services.attempt(delivery.pk) == "delivered"
    [got] = receiver.received
    assert got.verified
    assert got.headers["Concord-Event"] == "webhook.test"
    assert got.headers["Concord-Delivery"] == str(delivery.event_id) == got.json["id"]
    assert got.headers["Concord-Attempt"] == "1"
    assert got.headers["Content-Type"] == "application/json"
    assert got.json["project"]["slug"] == "lab" and got.json["type"] == "webhook.test"
    # the documented check refuses a changed body, another secret, an old timestamp
    header = got.headers["Concord-Signature"]
    assert not verify(endpoint.secret, got.body + b" ", header)
    assert not verify("whsec_other", got.body, header)
    old = int(time.time()) - 600
    assert not verify(endpoint.secret, got.body, signature_header(endpoint.secret, old, got.body))
    delivery.refresh_from_db()
    assert delivery.delivered_at and delivery.next_attempt_at is None
    attempt = delivery.attempt_rows.get()
    assert attempt.status_code == 200 and attempt.response_excerpt == '{"ok": true}'
    assert attempt.duration_ms is not None and attempt.error == ""


def test_500_then_200_is_two_attempts_and_delivered(researcher, receiver, now_retries):
    receiver.plan = [500]
    endpoint = endpoint_for(project_with(researcher), receiver, ["run.finished"])
    delivery = emit_test(endpoint)
    assert attempt_all(delivery) == ["pending", "delivered"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    rows = list(delivery.attempt_rows.values_list("number", "status_code", "response_excerpt"))
    assert rows == [(1, 500, "down for maintenance"), (2, 200, '{"ok": true}')]
    assert [r.headers["Concord-Attempt"] for r in receiver.received] == ["1", "2"]
    assert len({r.headers["Concord-Delivery"] for r in receiver.received}) == 1
    assert all(r.verified for r in receiver.received)


def test_a_receiver_that_is_down_fails_after_the_last_attempt(
    researcher, allow_private, now_retries, settings
):
    settings.CONCORD_WEBHOOKS_MAX_ATTEMPTS = 3
    endpoint = WebhookEndpoint.objects.create(
        project=project_with(researcher),
        url=f"http://127.0.0.1:{free_port()}/down",
        events=["run.failed"],
    )
    delivery = emit_test(endpoint)
    assert attempt_all(delivery) == ["pending", "pending", "failed"]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == ("failed", 3, None)
    attempts = list(delivery.attempt_rows.all())
    assert [a.number for a in attempts] == [1, 2, 3]
    assert all(a.status_code is None and "NewConnectionError" in a.error for a in attempts)
    assert services.attempt(delivery.pk) == "not due"  # failed: nothing more is sent
    # redelivered by hand: the same event, a fresh allowance of attempts
    again = services.do_redeliver(delivery)
    assert (again.status, again.max_attempts, again.event_id) == ("pending", 6, delivery.event_id)


def test_the_backoff_grows_with_jitter_and_waits(researcher, receiver):
    import random

    rng = random.Random(1)
    for failed, base in [(1, 30), (2, 120), (3, 600), (4, 3600), (5, 21600), (9, 21600)]:
        delays = [services.retry_delay(failed, rng) for _ in range(50)]
        assert all(0.8 * base <= d <= 1.2 * base for d in delays)
        assert max(delays) - min(delays) > 0.1 * base  # jittered, not one value
    receiver.plan = [503]
    delivery = emit_test(endpoint_for(project_with(researcher), receiver, ["run.finished"]))
    before = timezone.now()
    assert services.attempt(delivery.pk) == "pending"
    delivery.refresh_from_db()
    wait = (delivery.next_attempt_at - before).total_seconds()
    assert 24 <= wait <= 37
    assert services.attempt(delivery.pk) == "not due"  # not before its time
    assert services.due() == []  # nor does the beat send it
    assert len(receiver.received) == 1


def test_a_rolled_back_change_sends_nothing(researcher, receiver):
    endpoint = endpoint_for(project_with(researcher), receiver, ["run.finished"])
    with pytest.raises(RuntimeError), transaction.atomic():
        emit_test(endpoint)
        raise RuntimeError("the change failed")
    assert not WebhookDelivery.objects.exists()
    assert services.due(timezone.now() + timedelta(hours=1)) == []


def test_a_claimed_attempt_is_not_claimed_again(researcher, receiver):
    delivery = emit_test(endpoint_for(project_with(researcher), receiver, ["run.finished"]))
    first = services.claim(delivery.pk)
    assert first is not None and first.number == 1
    assert services.claim(delivery.pk) is None  # a second message, the beat task
    later = timezone.now() + timedelta(minutes=5)
    assert delivery.pk not in services.due(timezone.now())
    # its worker died: once the claim has run out the delivery is claimed again
    second = services.claim(delivery.pk, now=later)
    assert second is not None and second.number == 2
    # the first worker comes back late: its outcome is kept on its attempt only
    from webhooks.sending import Answer

    assert services.record(first, Answer(200, "", "late", 5)) == "pending"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 2)
    assert WebhookAttempt.objects.get(delivery=delivery, number=1).response_excerpt == "late"
    assert services.record(second, Answer(204, "", "", 5)) == "delivered"


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_send_an_attempt_once(researcher, receiver):
    """Two workers (a duplicate message and the beat task) on their own
    connections try the same due delivery at the same moment."""
    receiver.delay = 0.5
    delivery = emit_test(endpoint_for(project_with(researcher), receiver, ["run.finished"]))
    start = threading.Barrier(4)
    outcomes = []

    def worker() -> None:
        try:
            start.wait()
            outcomes.append(services.attempt(delivery.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["delivered", "not due", "not due", "not due"]
    assert len(receiver.received) == 1
    assert WebhookAttempt.objects.filter(delivery=delivery).count() == 1


def test_inactive_endpoints_and_other_events_get_nothing(researcher, receiver):
    project = project_with(researcher)
    wanted = endpoint_for(project, receiver, ["run.failed"])
    endpoint_for(project, receiver, ["run.finished"])
    WebhookEndpoint.objects.create(
        project=project, url=receiver.url, events=["run.failed"], active=False
    )
    other = project_with(researcher, slug="other")
    WebhookEndpoint.objects.create(project=other, url=receiver.url, events=["run.failed"])
    deliveries = services.do_emit("run.failed", project.pk, {"run": {}})
    assert [d.endpoint for d in deliveries] == [wanted]


@pytest.fixture
def listening():
    """A port on 127.0.0.1 that accepts connections (an internal service's),
    to tell afterwards whether anything connected to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def connected_to(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except BlockingIOError:
        return False
    return True


def test_every_refused_destination_records_the_same_words(
    researcher, settings, now_retries, listening
):
    """An open port, a closed one, an internal name and an unknown one read
    alike in the attempt log (project members read it: it must not map the
    lab's network), none names an address, and nothing is connected to."""
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    open_port, closed_port = listening.getsockname()[1], free_port()
    project = project_with(researcher)
    urls = [
        f"http://localhost:{open_port}/",
        f"http://localhost:{closed_port}/",
        f"http://127.0.0.1:{open_port}/",  # saved while the setting was on
        f"http://[::1]:{closed_port}/",
        "http://no-such-host.invalid/",
    ]
    errors = []
    for url in urls:
        endpoint = WebhookEndpoint.objects.create(project=project, url=url, events=["run.done"])
        delivery = emit_test(endpoint)
        assert services.attempt(delivery.pk) == "pending"
        attempt = WebhookAttempt.objects.get(delivery=delivery)
        assert attempt.status_code is None
        errors.append(attempt.error)
    assert len(set(errors)) == 1, errors
    error = errors[0]
    assert error.startswith("Refused: ") and "public address" in error
    assert not re.search(r"\d+\.\d+\.\d+\.\d+|::1|localhost|invalid", error)
    assert not connected_to(listening)


def test_a_name_is_connected_to_at_the_addresses_that_were_checked(
    researcher, settings, monkeypatch, listening
):
    """DNS rebinding: the name's owner answers a public address to the check
    and a loopback one to any later lookup; there is no later lookup. A public
    address's connection error keeps its detail."""
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = False
    port = listening.getsockname()[1]
    lookups, connects = [], []
    real_getaddrinfo = socket.getaddrinfo

    def rebinding_dns(host, *args, **kwargs):
        if host != "rebind.example":
            return real_getaddrinfo(host, *args, **kwargs)
        lookups.append(host)
        address = "93.184.216.34" if len(lookups) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    def unreachable(address, *args, **kwargs):
        """No packet leaves the test: the public address is out of reach."""
        connects.append(address)
        raise OSError(errno.ENETUNREACH, "Network is unreachable")

    monkeypatch.setattr(socket, "getaddrinfo", rebinding_dns)
    monkeypatch.setattr(addresses, "create_connection", unreachable)
    endpoint = WebhookEndpoint.objects.create(
        project=project_with(researcher), url=f"http://rebind.example:{port}/", events=["x"]
    )
    assert services.attempt(emit_test(endpoint).pk) == "pending"
    assert (lookups, connects) == (["rebind.example"], [("93.184.216.34", port)])
    assert not connected_to(listening)
    error = WebhookAttempt.objects.get(delivery__endpoint=endpoint).error
    assert error.startswith("NewConnectionError") and "Network is unreachable" in error
