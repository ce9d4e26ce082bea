"""Human rating studies: crowd (Prolific) and gold (expert staff).

A Study selects responses; its items are cut into Tasks (for a crowd study,
one per meeting: every question of that meeting for every selected system).
A Participant (a Prolific id, or a gold annotator's account) works on one
Assignment of one task, and gives one Rating per item. Every state change
goes through annotator/services.py and leaves an AuditEvent.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Count, Q

from annotator import defaults
from corpus.models import Dataset, Document
from generation.models import Response, System
from judging.models import Evaluator


def new_token() -> str:
    """An unguessable id for a participant's task pages (192 random bits)."""
    return secrets.token_urlsafe(24)


def new_completion_code() -> str:
    return secrets.token_hex(4).upper()


class Study(models.Model):
    class Kind(models.TextChoices):
        CROWD = "crowd", "Crowd (Prolific)"
        GOLD = "gold", "Gold (expert annotators)"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.CROWD)
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Which responses: those of the runs of `systems` on `dataset` in `mode`
    # (seedless runs unless `seed` is set), for `documents` (empty: all meetings).
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="studies")
    mode = models.CharField(
        max_length=2, choices=[("st", "Single-turn"), ("mt", "Multi-turn")], default="st"
    )
    seed = models.PositiveIntegerField(null=True, blank=True)
    systems = models.ManyToManyField(System, related_name="studies")
    documents = models.ManyToManyField(
        Document,
        blank=True,
        related_name="studies",
        help_text="Meetings to include; none selected: all.",
    )
    raters_per_task = models.PositiveSmallIntegerField(default=10)
    rubric = models.TextField(default=defaults.RUBRIC)
    guidelines = models.TextField(default=defaults.GUIDELINES)
    estimated_minutes = models.PositiveSmallIntegerField(default=30)
    hourly_pay = models.DecimalField(
        max_digits=6, decimal_places=2, default=9, help_text="In GBP, as Prolific pays."
    )
    completion_code = models.CharField(max_length=40, default=new_completion_code)
    failed_attention_code = models.CharField(
        max_length=40,
        blank=True,
        help_text="Code for participants who fail the attention checks; empty: the normal code.",
    )
    attention_checks = models.BooleanField(default=False)
    stale_after_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Release unfinished work after this; empty: 2 x estimate."
    )
    gold_evaluator = models.ForeignKey(
        Evaluator,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Gold scores to check crowd workers against (e.g. gold-human-eval).",
    )
    min_gold_correlation = models.FloatField(
        null=True, blank=True, help_text="Flag participants whose correlation with gold is lower."
    )
    is_open = models.BooleanField(default=False)
    prolific_study_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["crowd", "gold"]), name="study_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(raters_per_task__gte=1), name="study_raters_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def stale_minutes(self) -> int:
        return self.stale_after_minutes or 2 * self.estimated_minutes

    @property
    def evaluator_name(self) -> str:
        kind = "gold human" if self.kind == self.Kind.GOLD else "crowd human"
        return f"{kind} ({self.name})"


class TaskQuerySet(models.QuerySet):
    def with_counts(self) -> TaskQuerySet:
        return self.annotate(item_count=Count("items", distinct=True))


class Task(models.Model):
    """A unit of work: for a crowd study, all items of one meeting."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="tasks")
    document = models.ForeignKey(
        Document,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        help_text="The meeting; empty for a gold study's single task.",
    )
    label = models.CharField(max_length=200)

    objects = TaskQuerySet.as_manager()

    class Meta:
        ordering = ["study_id", "label"]
        constraints = [
            models.UniqueConstraint(fields=["study", "document"], name="task_unique_document"),
        ]

    def __str__(self) -> str:
        return f"{self.study.name}: {self.label}"


class Item(models.Model):
    """One thing to rate: a response, or an attention check (no response)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="items")
    response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.PROTECT, related_name="study_items"
    )
    # What the rater sees, frozen when the study's items are built.
    question = models.TextField()
    correct_answer = models.TextField()
    answer = models.TextField()
    expected_min = models.PositiveSmallIntegerField(null=True, blank=True)
    expected_max = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["task_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "response"], name="item_unique_response"),
            models.CheckConstraint(
                condition=Q(response__isnull=False) | Q(expected_min__isnull=False),
                name="item_response_or_check",
            ),
        ]

    def __str__(self) -> str:
        return self.question[:60]

    @property
    def is_attention_check(self) -> bool:
        return self.response_id is None


class Participant(models.Model):
    """A crowd worker (by Prolific id only: no other personal data) or a gold annotator."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        EXCLUDED = "excluded", "Excluded"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    prolific_pid = models.CharField(max_length=64, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="study_participations",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACCEPTED)
    exclusion_reason = models.TextField(blank=True)
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study_id", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "prolific_pid"],
                condition=~Q(prolific_pid=""),
                name="participant_unique_pid",
            ),
            models.UniqueConstraint(fields=["study", "user"], name="participant_unique_user"),
            models.CheckConstraint(
                condition=~Q(prolific_pid="") | Q(user__isnull=False),
                name="participant_has_identity",
            ),
        ]

    def __str__(self) -> str:
        return self.prolific_pid or (self.user.username if self.user_id else f"#{self.pk}")

    @property
    def rater_id(self) -> str:
        return self.prolific_pid or f"user:{self.user_id}"


class Assignment(models.Model):
    """A participant's work on one task. A participant never gets two tasks of a study."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"
        TIMED_OUT = "timed_out", "Timed out (released)"
        RETURNED = "returned", "Returned on Prolific (released)"

    participant = models.OneToOneField(
        Participant, on_delete=models.CASCADE, related_name="assignment"
    )
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="assignments")
    token = models.CharField(max_length=64, unique=True, default=new_token)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    item_order = models.JSONField(help_text="Item ids in the order this participant sees them.")
    shuffle_seed = models.BigIntegerField()
    prolific_study_id = models.CharField(max_length=64, blank=True)
    prolific_session_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    completion_code = models.CharField(max_length=40, blank=True)
    attention_passed = models.BooleanField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["task", "status"])]

    def __str__(self) -> str:
        return f"{self.participant} on {self.task.label}"


class Rating(models.Model):
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="ratings")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="ratings")
    score = models.PositiveSmallIntegerField()
    seconds = models.FloatField(default=0, help_text="Time spent on the item, summed over visits.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment_id", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="rating_unique_per_item"),
            models.CheckConstraint(
                condition=Q(score__gte=1) & Q(score__lte=10), name="rating_score_1_to_10"
            ),
            models.CheckConstraint(condition=Q(seconds__gte=0), name="rating_seconds_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.score}"


class AuditEvent(models.Model):
    """Who did what to a study or a participant, and why."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="audit_events")
    participant = models.ForeignKey(
        Participant, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    action = models.CharField(max_length=40)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} ({self.created_at:%Y-%m-%d %H:%M})"
