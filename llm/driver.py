"""The loop a run's calls go through, shared by judging and generation.

The calling threads' work is handed in as futures; `drive` takes their results
as they come and, every quarter second whatever the threads are doing (all of
them may be waiting for a server's Retry-After), looks at the run: a cancel or
a lost lease halts the caller, which ends every wait at once, and a wait the
server asked for is written on the run ("waiting for the server until ...")
so that the monitor can say it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import TypeVar, cast

from llm.calls import CallResult, ModelCaller
from runs.lifecycle import Lease, is_cancelled
from runs.models import ModelUsage, Run

T = TypeVar("T")
WATCH_SECONDS = 0.25


class RunWatch:
    """Looks at a run for its caller: halts on a cancel or a lost lease, and
    keeps the run's `waiting_until` as the caller's."""

    def __init__(self, run: Run, caller: ModelCaller, lease: Lease) -> None:
        self.run = run
        self.caller = caller
        self.lease = lease
        self.shown_wait: float | None = None

    def __call__(self) -> None:
        if not self.caller.halted.is_set():
            if self.lease.lost.is_set():
                self.caller.halt("another worker took the run over")
            elif is_cancelled(self.run):
                self.caller.halt("cancelled")
        until = None if self.caller.halted.is_set() else self.caller.waiting_until()
        if until != self.shown_wait:
            self.shown_wait = until
            # a run that calls models is a Run and a ModelUsage (where the field is)
            calling_run = cast(type[ModelUsage], type(self.run))
            calling_run._default_manager.filter(pk=self.run.pk).update(
                waiting_until=None
                if until is None
                else datetime.datetime.fromtimestamp(until, tz=datetime.UTC)
            )


def drive(
    futures: Iterable[Future[T]],
    on_result: Callable[[T], None],
    watch: Callable[[], None],
    every: float = WATCH_SECONDS,
) -> None:
    """Hand each future's result to `on_result` as it finishes (a bug in a
    calling thread reaches the caller here), and call `watch` at least every
    `every` seconds until all are done."""
    pending = set(futures)
    while pending:
        finished, pending = wait(pending, timeout=every, return_when=FIRST_COMPLETED)
        for future in finished:
            on_result(future.result())
        watch()


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
