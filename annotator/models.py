"""Human rating studies: crowd (Prolific) and gold (expert staff).

A Study selects responses; its items are cut into Tasks (for a crowd study,
one per meeting: every question of that meeting for every selected system).
A Participant (a Prolific id, or a gold annotator's account) works on one
Assignment of one task, and gives one Rating per item. Every state change
goes through annotator.actions and leaves an AuditEvent.
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Count, Q

from annotator import defaults
from corpus.choices import Mode
from corpus.models import Dataset, Document
from generation.models import Response, System
from judging.evaluators import Precomputed, Scale
from judging.models import Evaluator
from users.models import owning_project


def new_token() -> str:
    """An unguessable id for a participant's task pages (192 random bits)."""
    return secrets.token_urlsafe(24)


def new_completion_code() -> str:
    return secrets.token_hex(4).upper()


class Study(models.Model):
    class Kind(models.TextChoices):
        CROWD = "crowd", "Crowd (Prolific)"
        GOLD = "gold", "Gold (expert annotators)"

    class RatingType(models.TextChoices):
        RUBRIC = "rubric", "Rubric score (one answer)"
        PAIRWISE = "pairwise", "Pairwise (two answers: A, B or tie)"

    class Status(models.TextChoices):
        # Who may arrive: see docs/human-studies.md ("States").
        CLOSED = "closed", "Closed (no arrivals; work in progress stops)"
        OPEN = "open", "Open"
        PAUSED = "paused", "Paused (no new arrivals; work in progress may finish)"

    name = models.CharField(max_length=200, unique=True)
    project = owning_project("studies")
    gold_annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="gold_studies",
        help_text="Gold studies: the expert accounts that may rate it (they see only these).",
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.CROWD)
    rating_type = models.CharField(
        max_length=8, choices=RatingType.choices, default=RatingType.RUBRIC
    )
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Which responses: those of the runs of `systems` on `dataset` in `mode`
    # (seedless runs unless `seed` is set), for `documents` (empty: all meetings),
    # and of those only `responses` when it holds some (a planner's choice).
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="studies")
    mode = models.CharField(max_length=2, choices=Mode.choices, default=Mode.SINGLE_TURN)
    seed = models.PositiveIntegerField(null=True, blank=True)
    systems = models.ManyToManyField(System, related_name="studies")
    documents = models.ManyToManyField(
        Document,
        blank=True,
        related_name="studies",
        help_text="Meetings to include; none selected: all.",
    )
    responses = models.ManyToManyField(
        Response,
        blank=True,
        related_name="+",
        help_text="Only these responses of the selection (chosen by the report's human "
        "budget planner); none: every response.",
    )

    class Sampling(models.TextChoices):
        # How `responses` were chosen: what PPI may assume about them (docs/analysis.md).
        NONE = "", "Not sampled: every response of the selection, or chosen by hand"
        RANDOM = "random", "Stratified random sample (the report's planner)"
        DISAGREEMENT = "disagreement", "Sampled by the judges' disagreement (the report's planner)"
        UNCERTAINTY = "uncertainty", "Sampled by the judges' uncertainty (the report's planner)"
        DEFERRED = "deferred", "What a deferring judge leaves to humans (not a probability sample)"

    sampling = models.CharField(
        max_length=12,
        choices=Sampling.choices,
        blank=True,
        default="",
        editable=False,
        help_text="How the report's planner sampled `responses`; each response of the frame "
        "it sampled from keeps its inclusion probability (InclusionProbability).",
    )
    baseline_system = models.ForeignKey(
        System,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Pairwise studies: every selected system's answer is shown beside this "
        "system's answer to the same question.",
    )
    raters_per_task = models.PositiveSmallIntegerField(default=10)
    scale_max = models.PositiveSmallIntegerField(
        default=10,
        choices=[(5, "1-5"), (7, "1-7"), (10, "1-10")],
        help_text="Rubric studies: the rating scale (mapped linearly onto 1-10 for the analysis).",
    )
    scale_labels = models.JSONField(
        default=list,
        blank=True,
        help_text="Optional: one label per point of the scale, lowest first; empty: the "
        "paper's end labels.",
    )
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
        default=new_completion_code,
        help_text="Code for participants who fail the attention checks or the qualification "
        "round; required when either is on.",
    )
    screen_out_pence = models.PositiveSmallIntegerField(
        default=0,
        help_text="On Prolific, who fails the qualification round is screened out and paid "
        "this (pence, below the reward) with the screen-out code; 0: the failed-check code.",
    )
    screen_out_code = models.CharField(max_length=40, default=new_completion_code)
    attention_checks = models.BooleanField(default=False)
    practice_items = models.JSONField(
        default=list,
        blank=True,
        help_text="Qualification round: practice items shown first, each "
        '{"question", "correct_answer", "answer", "expected_min", "expected_max", "feedback"}; '
        "empty: no qualification round.",
    )
    practice_pass = models.PositiveSmallIntegerField(
        default=0,
        help_text="Practice items that must be rated within their expected range to go on.",
    )
    transcript_for_crowd = models.BooleanField(
        default=False,
        help_text="Crowd raters may open the meeting transcript (gold annotators always may).",
    )
    min_median_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="Flag participants whose median seconds per item is lower; empty: a quarter "
        "of the estimated time per item.",
    )
    stale_after_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Release unfinished work after this; empty: 2 x estimate."
    )
    evaluator = models.OneToOneField(
        Evaluator,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.PROTECT,
        related_name="study",
        help_text="The evaluator the study's ratings become judgments of (its name is a label).",
    )
    gold_evaluator = models.ForeignKey(
        Evaluator,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Gold scores to check crowd workers against (e.g. gold-human-eval).",
    )
    min_gold_correlation = models.FloatField(
        null=True, blank=True, help_text="Flag participants whose correlation with gold is lower."
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.CLOSED)
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
            models.CheckConstraint(
                condition=Q(status__in=["closed", "open", "paused"]), name="study_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(rating_type__in=["rubric", "pairwise"]), name="study_rating_type_valid"
            ),
            models.CheckConstraint(condition=Q(scale_max__in=[5, 7, 10]), name="study_scale_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def is_pairwise(self) -> bool:
        return self.rating_type == self.RatingType.PAIRWISE

    @property
    def stale_minutes(self) -> int:
        return self.stale_after_minutes or 2 * self.estimated_minutes

    @property
    def evaluator_name(self) -> str:
        """The label of the study's evaluator; the study finds it by foreign key."""
        kind = "gold human" if self.kind == self.Kind.GOLD else "crowd human"
        pairwise = " pairwise" if self.is_pairwise else ""
        return f"{kind}{pairwise} ({self.name})"

    def rating_scale(self) -> Precomputed:
        """The study's ratings as the evaluator interface takes them: scores
        made by people on 1..scale_max, mapped linearly onto 1-10 (as imports are)."""
        return Precomputed(Scale(1, self.scale_max))

    def to_common_scale(self, raw: float) -> float:
        """A raw rating on 1..scale_max mapped linearly onto 1-10 (as imports are)."""
        return self.rating_scale().common_score(raw)


class InclusionProbability(models.Model):
    """A response of the frame a study's responses were sampled from, with the
    probability it had of being picked: what lets PPI weight a sample that
    was not drawn uniformly (Zrnic & Candes, "Active Statistical Inference",
    ICML 2024). Written once, when the report's planner creates the study."""

    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="inclusion_probabilities"
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    probability = models.FloatField()
    picked = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "response"], name="inclusion_unique"),
            models.CheckConstraint(
                condition=Q(probability__gt=0) & Q(probability__lte=1),
                name="inclusion_probability_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study_id}/{self.response_id}: {self.probability:.3f}"


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
    """One thing to rate: a response (with an opponent in pairwise studies), an
    attention check, or a practice item of the qualification round."""

    class Kind(models.TextChoices):
        RESPONSE = "response", "Response"
        ATTENTION = "attention", "Attention check"
        PRACTICE = "practice", "Practice (qualification)"

    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.RESPONSE)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="items")
    response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.PROTECT, related_name="study_items"
    )
    opponent = models.ForeignKey(
        Response,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Pairwise: the baseline system's answer to the same question.",
    )
    # What the rater sees, frozen when the study's items are built.
    question = models.TextField()
    correct_answer = models.TextField()
    answer = models.TextField()
    other_answer = models.TextField(blank=True, help_text="Pairwise: the opponent's answer.")
    expected_min = models.PositiveSmallIntegerField(null=True, blank=True)
    expected_max = models.PositiveSmallIntegerField(null=True, blank=True)
    feedback = models.TextField(blank=True, help_text="Practice: shown after the rating.")

    class Meta:
        ordering = ["task_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "response"], name="item_unique_response"),
            models.CheckConstraint(
                condition=Q(kind__in=["response", "attention", "practice"]),
                name="item_kind_valid",
            ),
            models.CheckConstraint(
                condition=(Q(kind="response") & Q(response__isnull=False))
                | (~Q(kind="response") & Q(response__isnull=True) & Q(expected_min__isnull=False)),
                name="item_response_or_check",
            ),
        ]

    def __str__(self) -> str:
        return self.question[:60]

    @property
    def is_attention_check(self) -> bool:
        return self.kind == self.Kind.ATTENTION

    @property
    def is_practice(self) -> bool:
        return self.kind == self.Kind.PRACTICE

    def in_expected_range(self, score: int | None) -> bool:
        """A practice item: whether `score` (on the study's scale) is within the
        expected range (no score, or an item without a range: not within)."""
        low, high = self.expected_min, self.expected_max
        return score is not None and low is not None and high is not None and low <= score <= high


class Participant(models.Model):
    """A crowd worker (by Prolific id only: no other personal data) or a gold annotator."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        EXCLUDED = "excluded", "Excluded"
        # Given the failed-check code (an attention check or the qualification
        # round): their ratings never count, and no researcher can reinstate them.
        FAILED_CHECK = "failed_check", "Failed a check (given the failed-check code)"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="participants")
    prolific_pid = models.CharField(max_length=64, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="study_participations",
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACCEPTED)
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
        return self.prolific_pid or (self.user.username if self.user is not None else f"#{self.pk}")

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
        NOT_QUALIFIED = "unqualified", "Did not pass the qualification round (released)"

    participant = models.OneToOneField(
        Participant, on_delete=models.PROTECT, related_name="assignment"
    )
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="assignments")
    token = models.CharField(max_length=64, unique=True, default=new_token)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    item_order = models.JSONField(help_text="Item ids in the order this participant sees them.")
    shuffle_seed = models.BigIntegerField()
    prolific_study_id = models.CharField(max_length=64, blank=True)
    prolific_session_id = models.CharField(max_length=64, blank=True)
    other_session_ids = models.JSONField(
        default=list,
        blank=True,
        help_text="SESSION_IDs this participant came back with that differ from the first.",
    )
    # Who may take this work up again by the study link (PROLIFIC_PID alone is
    # no secret): the browser that consented and those admitted since, as
    # hashes of their session keys; or the first arrival's SESSION_ID; or,
    # once, another device a researcher allowed (annotator.actions.arrival.check_admit_return).
    browsers = models.JSONField(
        default=list,
        blank=True,
        help_text="Browsers (SHA-256 of their session key) that may continue this work.",
    )
    other_device_allowed_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A researcher let this participant continue once from another browser, "
        "until then.",
    )
    swapped_item_ids = models.JSONField(
        default=list,
        blank=True,
        help_text="Pairwise: items whose two answers this participant sees swapped.",
    )
    # The item page last delivered, and when: time per item is measured here,
    # on the server, from delivery to rating (the browser's figure is a hint).
    served_item_id = models.BigIntegerField(null=True, blank=True)
    served_at = models.DateTimeField(null=True, blank=True)
    practice_passed = models.BooleanField(null=True, blank=True)
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
    class Choice(models.TextChoices):
        A = "A", "Answer A"
        B = "B", "Answer B"
        TIE = "tie", "Tie"

    class Flag(models.TextChoices):
        NONE = "", "-"
        WRONG_ITEM = "wrong_item", "The question or the reference is wrong"
        CANNOT_JUDGE = "cannot_judge", "I cannot judge"

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="ratings")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="ratings")
    score = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Rubric studies: on the study's scale (1..scale max)."
    )
    choice = models.CharField(
        max_length=3, choices=Choice.choices, blank=True, help_text="Pairwise: as shown."
    )
    swapped = models.BooleanField(
        default=False, help_text="Pairwise: the item's response was shown as B."
    )
    seconds = models.FloatField(
        default=0, help_text="Server-measured time on the item, summed over visits."
    )
    client_seconds = models.FloatField(
        default=0, help_text="The browser's own figure (a hint only: it can be forged)."
    )
    comment = models.TextField(blank=True)
    flag = models.CharField(max_length=12, choices=Flag.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment_id", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="rating_unique_per_item"),
            models.CheckConstraint(
                condition=(Q(score__gte=1) & Q(score__lte=10) & Q(choice=""))
                | (Q(score__isnull=True) & Q(choice__in=["A", "B", "tie"])),
                name="rating_score_or_choice",
            ),
            models.CheckConstraint(condition=Q(seconds__gte=0), name="rating_seconds_positive"),
            models.CheckConstraint(
                condition=Q(flag__in=["", "wrong_item", "cannot_judge"]), name="rating_flag_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.score}" if self.score is not None else self.choice


class AuditEvent(models.Model):
    """Who did what to a study or a participant, and why.

    Every state change of annotator.actions writes one, in the same
    transaction as the change (Zulip's audit-log style)."""

    class Action(models.TextChoices):
        BUILD_ITEMS = "build_items", "Items built"
        OPENED = "opened", "Opened"
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"
        CHANGED = "changed", "Settings changed"
        ASSIGNED = "assigned", "Assigned a task"
        REOPENED = "reopened", "Came back and continued"
        SESSION_CHANGED = "session_changed", "Came back with another SESSION_ID"
        SESSION_REFUSED = "session_refused", "Refused: another browser and another SESSION_ID"
        OTHER_DEVICE_ALLOWED = "other_device_allowed", "Allowed to continue on another device"
        OTHER_DEVICE_USED = "other_device_used", "Continued on another device (allowed)"
        TIMED_OUT = "timed_out", "Timed out (released)"
        RELEASED = "released", "Released (Prolific)"
        NOT_QUALIFIED = "not_qualified", "Failed the qualification round"
        FAILED_CHECK = "failed_check", "Failed an attention check (given the failed-check code)"
        COMPLETED = "completed", "Completed"
        FLAGGED = "flagged", "Flagged automatically"
        EXCLUDED = "excluded", "Excluded"
        REINSTATED = "reinstated", "Reinstated"
        QUOTA_REFILLED = "quota_refilled", "Quota refilled"
        PROLIFIC_CREATED = "prolific_created", "Created on Prolific"
        PROLIFIC_PUBLISHED = "prolific_published", "Published on Prolific"
        PROLIFIC_PLACES = "prolific_places", "Places changed on Prolific"
        PROLIFIC_APPROVED = "prolific_approved", "Approved on Prolific"
        PROLIFIC_REJECTED = "prolific_rejected", "Rejected on Prolific"
        PROLIFIC_TRANSITION = "prolific_transition", "Paused, started or stopped on Prolific"
        BONUS_SET_UP = "bonus_set_up", "Bonus set up on Prolific"
        BONUS_REFUSED = "bonus_refused", "Bonus refused by Prolific"
        BONUS_PAID = "bonus_paid", "Bonus paid"
        BONUS_UNKNOWN = "bonus_unknown", "Bonus pay request without an answer"
        MESSAGED = "messaged", "Sent a message on Prolific"
        GROUP_ADDED = "group_added", "Added to a participant group"
        GROUP_REMOVED = "group_removed", "Removed from a participant group"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="audit_events")
    participant = models.ForeignKey(
        Participant, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    action = models.CharField(max_length=40, choices=Action.choices)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} ({self.created_at:%Y-%m-%d %H:%M})"


# Bonuses and participant groups (their own module; registered with the app here).
from annotator.prolific_records import (  # noqa: E402, F401
    BonusLine,
    BonusPayment,
    ParticipantGroup,
    ParticipantGroupMember,
)
