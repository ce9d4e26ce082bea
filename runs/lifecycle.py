"""State changes every kind of run shares.

Locks: a run's lease is taken and renewed by conditional UPDATEs on the run's
row (`WHERE lease_owner = '' OR lease_expires_at < now`), so two workers can
never both hold it; resume and cancel take the run's row lock
(`SELECT ... FOR UPDATE`) to decide. Only the lease holder calls models and
writes results, so a second task for the same run (a double resume, a
redelivered message) finds the lease held and does nothing: no request is
paid twice. A holder checks its lease again when it writes (`Lease.held`,
under the run's row lock; `finish` given the lease): a worker cut off from
the network while another took its run over writes nothing of the run's
when it comes back.

A worker renews its leases every third of CONCORD_RUN_LEASE_SECONDS; a
renewal the database did not answer is tried again within a second or two,
and again, so a database restart of a few seconds costs seconds, not the
run. Every worker also looks, every CONCORD_RUN_REAP_SECONDS, for running
runs whose lease has expired (their worker died) and queues them again, so a
killed worker's run goes on within a minute instead of after the broker's
visibility timeout.

Fencing: a holder that cannot renew (cut off from the database) must not
call models once another worker may have taken the run over. The lease
knows until when it surely holds (`Lease.sendable`: its last successful
renewal, timed before that renewal was sent, plus the lease, less
CONCORD_RUN_LEASE_MARGIN_SECONDS), and every calling thread asks it before
every request (`llm.calls.ModelCaller`): past that moment it sends nothing
until a renewal succeeds again, or the lease is found lost and the run stops.
A takeover then never overlaps a live holder's requests: what can be paid
twice is the calls already in flight when the holder was cut off. The margin
covers the time from that check to the request reaching the server and a
skew between the hosts' clocks (the expiry is written on the holder's clock
and read on the reaper's).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.database import outlasting_outages
from runs.models import Run, RunStatus
from runs.signals import run_finished

logger = logging.getLogger(__name__)


def lease_seconds() -> float:
    return float(getattr(settings, "CONCORD_RUN_LEASE_SECONDS", 45))


def lease_margin() -> float:
    """How long before its lease can expire a holder that could not renew
    stops sending requests (at most a third of the lease, so that a holder
    renewing on time never stops)."""
    margin = float(getattr(settings, "CONCORD_RUN_LEASE_MARGIN_SECONDS", 5))
    return min(margin, lease_seconds() / 3)


# a failed renewal is tried again this soon, then twice as late, up to the longest
RENEW_RETRY_FIRST = 0.25
RENEW_RETRY_LONGEST = 2.0


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Lease:
    """Held by one worker while it runs the run; `lost` is set when another
    worker took the run over (this one was too slow to renew), and the holder
    must then stop. `sendable` says whether it surely still holds it (see the
    module's docstring: fencing)."""

    def __init__(
        self, model: type[Run], pk: int, owner: str, claimed_at: float | None = None
    ) -> None:
        self.model = model
        self.pk = pk
        self.owner = owner
        self.lost = threading.Event()
        # time.monotonic() when the last renewal that succeeded was sent
        self.renewed_at = time.monotonic() if claimed_at is None else claimed_at
        self.failed_renewals = 0  # in a row, since the last one that succeeded
        # False while the run is claimed inside a transaction (a test, a
        # command run in one): nobody else can see it, nor take it over
        self.fenced = True
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"lease-{model.__name__}-{pk}", daemon=True
        )

    def renew(self) -> bool:
        """Push the expiry one lease ahead; False when another worker holds the
        run (then `lost` is set). A database error is raised."""
        sent = time.monotonic()
        now = timezone.now()
        renewed = self.model._default_manager.filter(pk=self.pk, lease_owner=self.owner).update(
            lease_expires_at=now + timedelta(seconds=lease_seconds()), heartbeat_at=now
        )
        if not renewed:
            self.lost.set()
            return False
        self.renewed_at = max(self.renewed_at, sent)
        self.failed_renewals = 0
        return True

    def _beat(self) -> None:
        """Renew every third of a lease; a renewal that failed (the database
        went away) is tried again after 0.25 s, then twice as late each time
        up to 2 s, until one succeeds or the lease is found lost."""
        interval = lease_seconds() / 3
        wait = interval
        try:
            while not self._stop.wait(wait):
                try:
                    if not self.renew():
                        return
                    wait = interval
                except Exception as error:
                    self.failed_renewals += 1
                    log = logger.warning if self.failed_renewals == 1 else logger.debug
                    log(
                        "Could not renew the lease of %s %s (%s: %s); trying again",
                        self.model.__name__,
                        self.pk,
                        type(error).__name__,
                        error,
                    )
                    connection.close()  # a new connection for the next try
                    wait = min(
                        interval,
                        RENEW_RETRY_LONGEST,
                        RENEW_RETRY_FIRST * 2 ** min(self.failed_renewals - 1, 10),
                    )
        finally:
            connection.close()  # this thread's own connection

    def sendable(self) -> bool:
        """Whether a request may go out now: the lease is not lost, and it was
        renewed recently enough that it cannot have expired (with the margin)
        by the time the request reaches the server."""
        if self.lost.is_set():
            return False
        if not self.fenced:
            return True
        return time.monotonic() < self.renewed_at + lease_seconds() - lease_margin()

    def gone(self) -> bool:
        """Whether another worker took the run over (the holder stops)."""
        return self.lost.is_set()

    def held(self) -> bool:
        """Whether this worker still holds the run, checked on the database and
        kept so until the surrounding transaction ends (the run's row lock): a
        worker that was cut off while others took its run over writes nothing
        of the run's when it comes back. Call inside `transaction.atomic`."""
        held = (
            self.model._default_manager.select_for_update()
            .filter(pk=self.pk, lease_owner=self.owner)
            .exists()
        )
        if not held:
            self.lost.set()
        return held

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@contextmanager
def holding_lease(model: type[Run], pk: int) -> Iterator[Lease | None]:
    """Claim the run for this worker, renew the claim while the block runs,
    give it back after. Yields None (and runs nothing) when the run is
    finished or another live worker holds it. An error in the block marks the
    run failed with its cause (the task's message is acknowledged, nobody
    would run it again)."""
    owner = f"{worker_identity()}:{uuid.uuid4().hex[:8]}"
    sent = time.monotonic()
    now = timezone.now()
    claimed = (
        model._default_manager.filter(pk=pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING])
        .filter(Q(lease_owner="") | Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True))
        .update(
            status=RunStatus.RUNNING,
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds()),
            heartbeat_at=now,
            started_at=Coalesce("started_at", now),
            finished_at=None,
        )
    )
    if not claimed:
        yield None
        return
    lease = Lease(model, pk, owner, claimed_at=sent)
    # Inside a transaction (a test, a command run in one) nobody else sees the
    # run until it commits, and another connection could not renew its lease.
    beating = lease.fenced = not connection.in_atomic_block
    if beating:
        lease.start()

    def fail(error: Exception) -> None:
        with transaction.atomic():
            failed = model._default_manager.filter(
                pk=pk, lease_owner=owner, status=RunStatus.RUNNING
            ).update(
                status=RunStatus.FAILED,
                finished_at=timezone.now(),
                message=f"Stopped by an error: {type(error).__name__}: {error}"[:2000],
            )
            if failed:
                run_finished.send(sender=model, pk=pk, status=RunStatus.FAILED)

    try:
        yield lease
    except Exception as error:
        outlasting_outages(fail, error, what=f"Ending {model.__name__} {pk}")
        raise
    finally:
        if beating:
            lease.stop()
        outlasting_outages(
            model._default_manager.filter(pk=pk, lease_owner=owner).update,
            lease_owner="",
            lease_expires_at=None,
            what=f"Giving back the lease of {model.__name__} {pk}",
        )


def finish(run: Run, status: str, message: str, lease: Lease | None = None, **fields) -> bool:
    """The run's last state, if it is still running (a cancel stays a cancel)
    and, given the `lease` it ran under, still held by it: a worker whose run
    was taken over while it was cut off does not end the new holder's run.
    True when it ended it; `run_finished` is sent in the same transaction."""
    model = type(run)
    still = Q(lease_owner=lease.owner) if lease is not None else Q()

    def end() -> int:
        with transaction.atomic():
            ended = model._default_manager.filter(
                still, pk=run.pk, status=RunStatus.RUNNING
            ).update(status=status, message=message, finished_at=timezone.now(), **fields)
            if ended:
                run_finished.send(sender=model, pk=run.pk, status=status)
        return ended

    return bool(outlasting_outages(end, what=f"Ending {model.__name__} {run.pk}"))


# --- queueing ---------------------------------------------------------------------------------


def enqueue(run: Run) -> bool:
    """Send the run's task to its queue (the one it was sent to before, if
    any). When the broker cannot take it, the run is marked failed with a
    one-line reason (and nothing waits for a message that was never sent);
    False then."""
    from config.celery import app

    if run.task_name not in app.tasks:  # a web process has not imported the tasks modules
        app.loader.import_default_modules()
    task = app.tasks[run.task_name]
    queue = run.queue_name or run.queue()
    type(run)._default_manager.filter(pk=run.pk).update(queue_name=queue)
    try:
        task.apply_async(args=[run.pk], queue=queue, retry=False)
    except broker_errors() as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        model = type(run)
        with transaction.atomic():
            failed = model._default_manager.filter(pk=run.pk, status=RunStatus.QUEUED).update(
                status=RunStatus.FAILED,
                finished_at=timezone.now(),
                message=(
                    f"Could not queue the run: the task broker did not take it "
                    f"({type(error).__name__}: {reason}). Start the broker, then resume the run."
                ),
            )
            if failed:
                run_finished.send(sender=model, pk=run.pk, status=RunStatus.FAILED)
        return False
    return True


def broker_errors() -> tuple[type[Exception], ...]:
    """What a broker that cannot take a message raises (kombu wraps most;
    redis-py's own errors can come through unwrapped)."""
    from kombu.exceptions import KombuError

    errors: tuple[type[Exception], ...] = (KombuError, OSError)
    try:
        from redis.exceptions import RedisError
    except ImportError:  # no Redis client: the broker is not Redis
        return errors
    return (*errors, RedisError)


def enqueue_on_commit(run: Run) -> None:
    """Queue the run once the transaction that made it commits (at once outside one)."""
    transaction.on_commit(lambda: enqueue(run))


@dataclass(frozen=True)
class Outcome:
    """What a resume or cancel did. `changed` False: nothing was done, `detail`
    says why and `code` names the case (already_running, already_queued, done,
    nothing_to_retry, finished, broker_down)."""

    changed: bool
    detail: str
    code: str = "ok"

    @property
    def http_status(self) -> int:
        return {"done": 409, "finished": 409, "broker_down": 503}.get(self.code, 200)


def resume(run: Run, before_queue=None, *, send: bool = True) -> Outcome:
    """Go on with what is not done yet. A running run (its worker alive) or a
    queued one is left alone, and the answer says so; a done run has nothing
    to resume. `before_queue(locked_run)` runs under the row lock first (e.g.
    to put failed items back). `send` False: queued but not sent (the caller
    runs it in its own process)."""
    model = type(run)
    with transaction.atomic():
        locked = model._default_manager.select_for_update().get(pk=run.pk)
        label = locked.kind_label
        if locked.status == RunStatus.DONE and before_queue is None:
            return Outcome(False, f"{label} is done: nothing to resume.", "done")
        if locked.status == RunStatus.RUNNING and locked.lease_is_live:
            heartbeat = locked.heartbeat_at or timezone.now()
            seconds = (timezone.now() - heartbeat).total_seconds()
            return Outcome(
                False,
                f"{label} is already running on {locked.lease_owner.rsplit(':', 1)[0]} "
                f"(last heartbeat {seconds:.0f} s ago): nothing to do.",
                "already_running",
            )
        if locked.status == RunStatus.QUEUED:
            return Outcome(
                False, f"{label} is already queued: a worker will start it.", "already_queued"
            )
        if before_queue is not None and not before_queue(locked):
            return Outcome(False, f"{label} has nothing to retry.", "nothing_to_retry")
        locked.status = RunStatus.QUEUED
        locked.message = ""
        locked.finished_at = None
        locked.lease_owner = ""
        locked.lease_expires_at = None
        locked.save(
            update_fields=["status", "message", "finished_at", "lease_owner", "lease_expires_at"]
        )
    if send and not enqueue(locked):
        locked.refresh_from_db(fields=["message"])
        return Outcome(False, locked.message, "broker_down")
    return Outcome(True, f"{label} queued on '{locked.queue()}'.")


def cancel(run: Run) -> Outcome:
    """Stop a queued or running run; its worker stops within a second or so,
    keeping what is done."""
    model = type(run)
    with transaction.atomic():
        locked = model._default_manager.select_for_update().get(pk=run.pk)
        if locked.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return Outcome(
                False, f"{locked.kind_label} is {locked.status}: nothing to cancel.", "finished"
            )
        locked.status = RunStatus.CANCELLED
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "finished_at"])
        run_finished.send(sender=model, pk=locked.pk, status=RunStatus.CANCELLED)
    return Outcome(True, f"{locked.kind_label} cancelled.")


def is_cancelled(run: Run) -> bool:
    return type(run)._default_manager.filter(pk=run.pk, status=RunStatus.CANCELLED).exists()


# --- taking over from dead workers ------------------------------------------------------------


def run_models() -> list[type[Run]]:
    return [m for m in apps.get_models() if issubclass(m, Run)]


def reclaim_stale_runs() -> list[str]:
    """Queue again every running run whose lease expired; returns what it did."""
    now = timezone.now()
    taken = []
    for model in run_models():
        for run in model._default_manager.filter(
            status=RunStatus.RUNNING, lease_expires_at__lt=now
        ):
            heartbeat = run.heartbeat_at.isoformat(timespec="seconds") if run.heartbeat_at else "?"
            dead = run.lease_owner.rsplit(":", 1)[0] or "its worker"
            moved = model._default_manager.filter(
                pk=run.pk,
                status=RunStatus.RUNNING,
                lease_owner=run.lease_owner,
                lease_expires_at__lt=now,
            ).update(
                status=RunStatus.QUEUED,
                lease_owner="",
                lease_expires_at=None,
                message=f"Taken over: {dead} stopped renewing its lease at {heartbeat}.",
            )
            if moved:
                run.refresh_from_db()
                enqueue(run)
                taken.append(f"{run.kind_label} (was on {dead})")
    return taken


class Reaper(threading.Thread):
    """Runs in every worker: reclaims stale runs every CONCORD_RUN_REAP_SECONDS."""

    def __init__(self) -> None:
        super().__init__(name="concord-run-reaper", daemon=True)
        self.stopped = threading.Event()

    def run(self) -> None:
        interval = float(getattr(settings, "CONCORD_RUN_REAP_SECONDS", 15))
        while not self.stopped.wait(interval):
            try:
                for line in reclaim_stale_runs():
                    logger.warning("Took over %s", line)
            except Exception:
                logger.exception("Could not look for stale runs")
            finally:
                connection.close()
