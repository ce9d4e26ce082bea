"""The loop a run's calls go through, shared by judging and generation.

`CallPool` is a run's calling threads (as many as the model's
max_concurrency): work is submitted to it, at most twice as many pieces at a
time as there are threads, and it hands the results over as they come and,
every quarter second whatever the threads are doing (all of them may be
waiting for a server's Retry-After), looks at the run: a cancel or
a lost lease halts the caller, which ends every wait at once, and a wait the
server asked for is written on the run ("waiting for the server until ...")
so that the monitor can say it. The run's lease also fences the caller: no
request goes out while the lease is not surely held (`ModelCaller.fence`).
While the database cannot be reached the look waits for it. When the pool
closes, every calling thread's database connection and the caller are
closed. `stopped_message` says why a caller stopped early, in the same
words for every run.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import Any, TypeVar, cast

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from core.database import outlasting_outages
from llm.calls import CallResult, Halt, ModelCaller
from runs.lifecycle import Lease, is_cancelled
from runs.models import ModelUsage, Run

T = TypeVar("T")
WATCH_SECONDS = 0.25


class RunWatch:
    """Looks at a run for its caller: halts on a cancel or a lost lease, and
    keeps the run's `waiting_until` as the caller's. Fences the caller with
    the lease: every request asks it first."""

    def __init__(self, run: Run, caller: ModelCaller, lease: Lease) -> None:
        self.run = run
        self.caller = caller
        self.lease = lease
        self.shown_wait: float | None = None
        caller.fence = lease

    def __call__(self) -> None:
        outlasting_outages(self._look, what=f"Watching {self.run.kind_label}")

    def _look(self) -> None:
        if not self.caller.halted.is_set():
            if self.lease.lost.is_set():
                self.caller.halt(Halt.TAKEN_OVER)
            elif is_cancelled(self.run):
                self.caller.halt(Halt.CANCELLED)
        until = None if self.caller.halted.is_set() else self.caller.waiting_until()
        if until != self.shown_wait:
            # a run that calls models is a Run and a ModelUsage (where the field is)
            calling_run = cast(type[ModelUsage], type(self.run))
            calling_run._default_manager.filter(pk=self.run.pk).update(
                waiting_until=None
                if until is None
                else datetime.datetime.fromtimestamp(until, tz=datetime.UTC)
            )
            self.shown_wait = until


class CallPool:
    """A run's calling threads. Use as a context manager: on leaving, the
    threads finish, their database connections and the caller are closed.

    At most `window` pieces of work (twice the threads) are submitted and not
    yet handed over: `submit` waits, handing results to `on_result` as they
    come, while the window is full. A run of tens of thousands of items then
    holds a few hundred of them (their prompts, their results) at a time, not
    all of them. `drive` hands over the rest."""

    def __init__(
        self,
        caller: ModelCaller,
        watch: Callable[[], None],
        threads: int,
        on_result: Callable[[Any], None] | None = None,
        every: float = WATCH_SECONDS,
    ) -> None:
        self.caller = caller
        self.watch = watch
        self.every = every
        self.on_result: Callable[[Any], None] = on_result or (lambda result: None)
        self.window = 2 * max(1, threads)
        self.executor = ThreadPoolExecutor(max_workers=max(1, threads))
        self.pending: set[Future[Any]] = set()
        self.connections: dict[int, BaseDatabaseWrapper] = {}
        self.guard = threading.Lock()
        self.watched = time.monotonic()

    def __enter__(self) -> CallPool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            self.executor.shutdown(wait=True, cancel_futures=error is not None)
        finally:
            try:
                self.caller.close()
            finally:
                for wrapper in self.connections.values():
                    wrapper.close()
                    wrapper.dec_thread_sharing()

    def _own_connection(self) -> None:
        """A calling thread's connection, noted so that the pool closes it
        (from the run's thread: hence the sharing)."""
        ident = threading.get_ident()
        with self.guard:
            if ident not in self.connections:
                wrapper = connections[DEFAULT_DB_ALIAS]
                wrapper.inc_thread_sharing()
                self.connections[ident] = wrapper

    def submit(self, work: Callable[..., T], *args: Any) -> None:
        """Run `work(*args)` on a calling thread (nothing once the caller halted:
        its result is then None); first wait while the window is full."""

        def call() -> T | None:
            self._own_connection()
            if self.caller.halted.is_set():
                return None
            return work(*args)

        while len(self.pending) >= self.window:
            self._hand_over()
        self.pending.add(self.executor.submit(call))

    def drive(self) -> None:
        """Hand every submitted work's result to `on_result` (None for work
        skipped after a halt) as it comes, watching the run."""
        while self.pending:
            self._hand_over()

    def _hand_over(self) -> None:
        """Wait up to `every` seconds for work to finish, hand over what did (a
        bug in a calling thread reaches the caller here), and look at the run
        when `every` seconds have passed since the last look."""
        finished, self.pending = wait(self.pending, timeout=self.every, return_when=FIRST_COMPLETED)
        for future in finished:
            self.on_result(future.result())
        if time.monotonic() - self.watched >= self.every or not finished:
            self.watched = time.monotonic()
            self.watch()


def stopped_message(caller: ModelCaller) -> str:
    """Why the caller's endpoint stopped the run ("" when it did not)."""
    if not caller.breaker.is_open:
        return ""
    return f"Stopped: {caller.endpoint} could not be reached ({caller.breaker.cause})"


def usage_of(result: CallResult) -> dict[str, float]:
    """What one answer adds to a run's usage (`runs.models.ModelUsage`)."""
    if result.cached:
        return {"cache_hits": 1}
    call = result.call
    usage: dict[str, float] = {
        "requests": 1,
        "cost": call.cost,
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens,
    }
    if call.usage_counted:
        usage["counted_usage"] = 1
    return usage


def add_usage(total: dict[str, float], more: dict[str, float]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def usage_and_note(message: str, run: ModelUsage) -> str:
    """The run's last message, with a word on answers whose tokens Concord counted."""
    if not run.counted_usage:
        return message
    note = (
        f"The server sent no token usage with {run.counted_usage} answers: Concord counted "
        "their tokens (4 characters a token), so their cost is an estimate."
    )
    return f"{message.rstrip()} {note}".strip()
