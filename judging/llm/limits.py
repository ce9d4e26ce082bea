"""A limit on requests in flight to one endpoint, shared by every run and every
worker that calls it.

With a Redis broker the slots live in Redis (a sorted set of leases, so that a
killed worker's slots expire); with the embedded demo broker they live in this
process. Per-run limits (max_concurrency, requests and tokens per minute) stay
in judging.llm.executor.RateLimiter.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from contextlib import contextmanager

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
    def slot(self):
        if self.redis is None:
            with self.local:
                yield
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
            time.sleep(0.02)
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
