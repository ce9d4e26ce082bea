"""One retry policy and one circuit breaker for every provider."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from llm.providers import Failure, FailureKind


@dataclass(frozen=True)
class RetryPolicy:
    """Rate limits wait for Retry-After (or back off), at most
    `longest_wait_seconds`: a server asking for 900 s would otherwise hold
    every calling thread for a quarter of an hour; 5xx, timeouts and
    connection errors back off exponentially with jitter; other errors are
    not asked again."""

    max_retries: int = 5
    base_seconds: float = 0.25
    cap_seconds: float = 30.0
    jitter_seconds: float = 0.25
    longest_wait_seconds: float = 120.0

    def should_retry(self, failure: Failure, attempt: int) -> bool:
        return failure.kind != FailureKind.FATAL and attempt < self.max_retries

    def wait_seconds(self, failure: Failure, attempt: int) -> float:
        if failure.kind == FailureKind.RATE_LIMITED and failure.retry_after is not None:
            return min(failure.retry_after, self.longest_wait_seconds)
        return min(self.cap_seconds, self.base_seconds * 2**attempt) + random.uniform(
            0, self.jitter_seconds
        )


class Stopped(Exception):
    """The run asked its caller to stop (cancelled, budget spent, breaker open)."""


class BreakerOpen(Exception):
    """The endpoint failed the same way too many times in a row; the run stops."""


class CircuitBreaker:
    """Opens after `threshold` connection errors with the same message in a
    row (any answer in between starts the count again) that span at least
    `min_seconds`: an unreachable endpoint stops the run with its cause after a
    few calls and their first retries, instead of every item retrying for
    minutes, while a burst of refused connections from a busy server that
    still answers does not. Shared by a run's threads."""

    def __init__(self, threshold: int = 3, min_seconds: float = 2.0) -> None:
        self.threshold = threshold
        self.min_seconds = min_seconds
        self.lock = threading.Lock()
        self.last_message = ""
        self.count = 0
        self.first_at = 0.0
        self.cause = ""  # set when open

    @property
    def is_open(self) -> bool:
        return bool(self.cause)

    def check(self) -> None:
        if self.cause:
            raise BreakerOpen(self.cause)

    def record_success(self) -> None:
        with self.lock:
            self.count = 0
            self.last_message = ""

    def record_failure(self, failure: Failure) -> None:
        if failure.kind != FailureKind.CONNECTION:
            return
        with self.lock:
            now = time.monotonic()
            if failure.message == self.last_message:
                self.count += 1
            else:
                self.last_message, self.count, self.first_at = failure.message, 1, now
            if (
                self.count >= self.threshold
                and now - self.first_at >= self.min_seconds
                and not self.cause
            ):
                self.cause = (
                    f"{failure.message} ({self.count} identical connection errors in a row "
                    f"over {now - self.first_at:.1f} s)"
                )
