"""Limits on how fast a run calls a model.

`RateLimiter`: a run's requests and tokens per minute. `EndpointGate`: the
requests in flight to one endpoint and model from every run and every worker.
With a Redis broker the gate's slots live in Redis (a sorted set of leases, so
that a killed worker's slots expire); with the embedded demo broker they live
in this process.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from contextlib import contextmanager

from llm.policy import Stopped

LEASE_SECONDS = 600  # longer than any single request with its retries' waits
ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


class EndpointGate:
    def __init__(self, endpoint: str, max_in_flight: int, redis_url: str | None = None) -> None:
        self.max_in_flight = max_in_flight
        self.key = "concord:inflight:" + hashlib.sha256(endpoint.encode()).hexdigest()[:32]
        self.redis = None
        if redis_url:
            import redis

            self.redis = redis.Redis.from_url(redis_url)
            self.script = self.redis.register_script(ACQUIRE)
        else:
            self.local = _local_semaphore(self.key, max_in_flight)

    @contextmanager
    def slot(self, stop: threading.Event | None = None):
        """Hold one of the endpoint's slots; waiting for one ends with Stopped
        when `stop` is set (a cancel, a spent budget)."""
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
        while not self.script(
            keys=[self.key],
            args=[
                time.time(),
                time.time() + LEASE_SECONDS,
                self.max_in_flight,
                token,
                LEASE_SECONDS * 2,
            ],
        ):
            if stop.wait(0.02):
                raise Stopped("stopped while waiting for the endpoint")
        try:
            yield
        finally:
            self.redis.zrem(self.key, token)


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
    def request(self, tokens: int = 0, stop: threading.Event | None = None):
        """Wait for this run's rate limits, then for a slot on the endpoint;
        either wait ends with Stopped when `stop` is set."""
        self.acquire(tokens, stop)
        if self.gate is None:
            yield
            return
        with self.gate.slot(stop):
            yield
