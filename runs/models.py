"""The abstract run: what generation runs, judging runs and imports share; and
the heartbeat of the workers that run them.

A run has no table of its own: each kind of run keeps its own table with these
columns.
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils import timezone


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
FINISHED = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


class Run(models.Model):
    """A job a Celery worker runs. One worker at a time holds its lease and
    renews it with a heartbeat; a lease that is not renewed expires and another
    worker takes the run over."""

    Status = RunStatus

    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(
        max_length=200, blank=True, help_text="The worker running it now (host:pid:token)."
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    queue_name = models.CharField(
        max_length=100, blank=True, help_text="The Celery queue it was last sent to."
    )

    # The Celery task that runs it (by name: this app imports no other) and its queue.
    task_name: ClassVar[str] = ""

    class Meta:
        abstract = True

    def queue(self) -> str:
        return "default"

    @property
    def kind_label(self) -> str:
        return f"{self._meta.verbose_name} {self.pk}"

    @property
    def lease_is_live(self) -> bool:
        return bool(
            self.lease_owner and self.lease_expires_at and self.lease_expires_at > timezone.now()
        )


class ModelUsage(models.Model):
    """What a run's model calls cost (read from the call ledger as they come)."""

    requests = models.PositiveIntegerField(default=0, help_text="Calls actually sent.")
    cache_hits = models.PositiveIntegerField(default=0, help_text="Answered from the ledger.")
    cost = models.FloatField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    counted_usage = models.PositiveIntegerField(
        default=0,
        help_text="Answers without token usage from the server, counted by Concord "
        "(4 characters a token).",
    )
    waiting_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The server asked the run to wait (Retry-After) until then.",
    )

    class Meta:
        abstract = True


class WorkerHeartbeat(models.Model):
    """A Celery worker as it last said it was: written by the worker itself (its
    beat thread, every CONCORD_WORKER_BEAT_SECONDS), read by the console's
    workers panel. Works on every broker, the demo's filesystem one included,
    where Celery's remote control (`inspect`) does not."""

    name = models.CharField(max_length=200, unique=True, help_text="Celery's node name.")
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list)
    concurrency = models.PositiveIntegerField(default=0)
    running = models.JSONField(
        default=list, help_text="The runs whose lease this worker's processes hold."
    )
    started_at = models.DateTimeField()
    last_beat_at = models.DateTimeField()
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
