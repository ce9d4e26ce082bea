"""Limits on how fast a run calls a model.

`RateLimiter`: a run's requests and tokens per minute. `EndpointGate`: the
requests in flight to one endpoint and model from every run and every worker.
With a Redis broker the gate's slots live in Redis (a sorted set of short
leases that their holder renews, so that a killed worker's slots are free
again within seconds); with the embedded demo broker they live in this
process. A Redis outage pauses the callers that need a slot until it is back.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from llm.policy import Stopped

logger = logging.getLogger(__name__)

# A slot is leased for a few seconds and renewed by its holder's process while
# the request is in flight, so that the slots of a killed worker are free again
# within seconds (a lease as long as the longest request kept them for ten
# minutes). The times are Redis's own clock: workers on hosts whose clocks
# differ agree on when a lease ends.
ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) * 4))
  return 1
end
return 0
"""
RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1]) * 4))
return 1
"""


def lease_seconds() -> float:
    from django.conf import settings

    return float(getattr(settings, "CONCORD_GATE_LEASE_SECONDS", 15))


class SlotRenewer:
    """Renews the leases of the slots this process holds, every third of a
    lease, on a thread of its own (one per process and Redis). A Redis that
    cannot be reached is tried again at the next turn."""

    def __init__(self, client, lease: float) -> None:
        self.client = client
        self.lease = lease
        self.script = client.register_script(RENEW)
        self.held: dict[str, str] = {}  # token -> key
        self.guard = threading.Lock()
        self.thread = threading.Thread(target=self._renew, name="gate-renewer", daemon=True)
        self.thread.start()

    def hold(self, token: str, key: str) -> None:
        with self.guard:
            self.held[token] = key

    def release(self, token: str) -> None:
        with self.guard:
            self.held.pop(token, None)

    def _renew(self) -> None:
        while True:
            time.sleep(self.lease / 3)
            with self.guard:
                by_key: dict[str, list[str]] = {}
                for token, key in self.held.items():
                    by_key.setdefault(key, []).append(token)
            for key, tokens in by_key.items():
                try:
                    self.script(keys=[key], args=[self.lease, *tokens])
                except _redis_down():
                    logger.warning(
                        "Could not renew %d endpoint slots: Redis is unreachable", len(tokens)
                    )


_RENEWERS: dict[str, SlotRenewer] = {}


def _renewer(url: str, client, lease: float) -> SlotRenewer:
    with _GUARD:
        key = f"{url} {lease}"
        if key not in _RENEWERS:
            _RENEWERS[key] = SlotRenewer(client, lease)
        return _RENEWERS[key]


def _redis_down() -> tuple[type[Exception], ...]:
    import redis

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class EndpointGate:
    def __init__(self, endpoint: str, max_in_flight: int, redis_url: str | None = None) -> None:
        self.max_in_flight = max_in_flight
        self.key = "concord:inflight:" + hashlib.sha256(endpoint.encode()).hexdigest()[:32]
        self.redis = None
        if redis_url:
            import redis

            self.lease = lease_seconds()
            self.redis = redis.Redis.from_url(redis_url, socket_timeout=5, socket_connect_timeout=2)
            self.script = self.redis.register_script(ACQUIRE)
            self.renewer = _renewer(redis_url, self.redis, self.lease)
        else:
            self.local = _local_semaphore(self.key, max_in_flight)

    @contextmanager
    def slot(self, stop: threading.Event | None = None) -> Iterator[None]:
        """Hold one of the endpoint's slots; waiting for one ends with Stopped
        when `stop` is set (a cancel, a spent budget). While Redis cannot be
        reached the caller waits for it (the run pauses), then goes on."""
        stop = stop or threading.Event()
        if self.redis is None:
            while not self.local.acquire(timeout=0.1):
                if stop.is_set():
                    raise Stopped("stopped while waiting for the endpoint")
            try:
                yield
            finally:
                self.local.release()
            return
        token = uuid.uuid4().hex
        while not self._take(token, stop):
            if stop.wait(0.02):
                raise Stopped("stopped while waiting for the endpoint")
        self.renewer.hold(token, self.key)
        try:
            yield
        finally:
            self.renewer.release(token)
            try:
                self.redis.zrem(self.key, token)
            except _redis_down():
                pass  # the lease ends by itself within seconds

    def _take(self, token: str, stop: threading.Event) -> bool:
        """One try for a slot; while Redis is down, wait (backing off to 2 s)
        until it is back."""
        wait = 0.1
        while True:
            try:
                args: list[str | float] = [self.max_in_flight, self.lease, token]
                return bool(self.script(keys=[self.key], args=args))
            except _redis_down() as error:
                logger.warning("Endpoint gate: Redis is unreachable (%s); waiting for it", error)
                if stop.wait(wait):
                    raise Stopped("stopped while waiting for Redis") from None
                wait = min(2.0, wait * 2)


_SEMAPHORES: dict[str, threading.BoundedSemaphore] = {}
_GUARD = threading.Lock()


def _local_semaphore(key: str, size: int) -> threading.BoundedSemaphore:
    with _GUARD:
        return _SEMAPHORES.setdefault(key, threading.BoundedSemaphore(size))


def gate_for(endpoint: str, max_in_flight: int | None) -> EndpointGate | None:
    if not max_in_flight:
        return None
    from django.conf import settings

    broker = settings.CELERY_BROKER_URL
    redis_url = broker if broker.startswith(("redis://", "rediss://")) else None
    return EndpointGate(endpoint, max_in_flight, redis_url)


class RateLimiter:
    """At most `per_minute` request starts and `tokens_per_minute` tokens (the
    prompt, estimated at 4 characters a token, plus max_tokens) in any sliding
    minute; None: no limit. Then a slot on the endpoint's gate, if any."""

    def __init__(
        self,
        per_minute: int | None,
        tokens_per_minute: int | None = None,
        gate: EndpointGate | None = None,
    ) -> None:
        self.per_minute = per_minute
        self.tokens_per_minute = tokens_per_minute
        self.gate = gate
        self.starts: list[tuple[float, int]] = []
        self.lock = threading.Lock()

    def acquire(self, tokens: int = 0, stop: threading.Event | None = None) -> None:
        if not self.per_minute and not self.tokens_per_minute:
            return
        if self.tokens_per_minute:
            tokens = min(tokens, self.tokens_per_minute)  # a huge request still goes, alone
        while True:
            with self.lock:
                now = time.monotonic()
                self.starts = [(t, n) for t, n in self.starts if now - t < 60]
                requests_ok = not self.per_minute or len(self.starts) < self.per_minute
                used = sum(n for _, n in self.starts)
                tokens_ok = not self.tokens_per_minute or used + tokens <= self.tokens_per_minute
                if requests_ok and tokens_ok:
                    self.starts.append((now, tokens))
                    return
                wait = 60 - (now - self.starts[0][0])
            if stop is None:
                time.sleep(max(wait, 0.01))
            elif stop.wait(max(wait, 0.01)):
                raise Stopped("stopped while waiting for the rate limit")

    @contextmanager
    def request(self, tokens: int = 0, stop: threading.Event | None = None) -> Iterator[None]:
        """Wait for this run's rate limits, then for a slot on the endpoint;
        either wait ends with Stopped when `stop` is set."""
        self.acquire(tokens, stop)
        if self.gate is None:
            yield
            return
        with self.gate.slot(stop):
            yield
