"""One POST of a delivery: signed, with timeouts, no redirect followed, no
proxy, to an address the rule allows (webhooks.addresses); what came back, as
plain values. The caller records it."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from urllib3 import PoolManager, Timeout
from urllib3.exceptions import HTTPError

from webhooks.addresses import (
    NOT_PUBLIC,
    CheckedHTTPPool,
    CheckedHTTPSPool,
    RefusedAddress,
    UnsafeURL,
    check_url,
)
from webhooks.signing import signature_header

EXCERPT_CHARACTERS = 1000
USER_AGENT = "Concord-Webhooks/1"


@dataclass(frozen=True)
class Answer:
    status_code: int | None
    error: str
    excerpt: str
    duration_ms: int

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def timeouts() -> tuple[float, float]:
    return (
        float(getattr(settings, "CONCORD_WEBHOOKS_CONNECT_TIMEOUT", 5)),
        float(getattr(settings, "CONCORD_WEBHOOKS_READ_TIMEOUT", 10)),
    )


_pool: PoolManager | None = None


def pool() -> PoolManager:
    """One pool of connections per process (kept alive between deliveries to
    the same host), whose connections check the address they reached."""
    global _pool
    if _pool is None:
        manager = PoolManager(num_pools=50, maxsize=4, retries=False)
        manager.pool_classes_by_scheme = {"http": CheckedHTTPPool, "https": CheckedHTTPSPool}
        _pool = manager
    return _pool


def clean(text: str, limit: int) -> str:
    """Storable text: no NUL (PostgreSQL refuses it), at most `limit` characters."""
    return text.replace("\x00", "\ufffd")[:limit]


def headers_for(
    secret: str, event_type: str, event_id: str, attempt: int, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Concord-Event": event_type,
        "Concord-Delivery": event_id,
        "Concord-Attempt": str(attempt),
        "Concord-Timestamp": str(timestamp),
        "Concord-Signature": signature_header(secret, timestamp, body),
    }


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    connect, read = timeouts()
    started = time.monotonic()
    status: int | None = None
    error = excerpt = ""
    try:
        check_url(url)
        response = pool().request(
            "POST",
            url,
            body=body,
            headers=headers,
            timeout=Timeout(connect=connect, read=read),
            redirect=False,
            retries=False,
            preload_content=False,
        )
        try:
            status = response.status
            excerpt = response.read(4 * EXCERPT_CHARACTERS).decode("utf-8", errors="replace")
        finally:
            response.close()  # the rest is not read: the connection is not reused
            response.release_conn()
    except RefusedAddress:
        error = NOT_PUBLIC  # a literal address too: every refused destination reads alike
    except UnsafeURL as refused:
        error = str(refused)
    except (HTTPError, OSError) as failure:
        error = f"{type(failure).__name__}: {failure}"
    return Answer(
        status,
        clean(error, 500),
        clean(excerpt, EXCERPT_CHARACTERS),
        int((time.monotonic() - started) * 1000),
    )
