"""What Concord did with participants on Prolific beyond a study's own life:
bonuses paid and participant groups kept (messages are audit events).

A bonus is money: Prolific pays a bulk bonus payment again for every pay
request with the same id, so each payment's state is recorded before the
request goes out and a payment whose outcome is unknown is never paid again
by itself (annotator.actions.bonuses).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class BonusPayment(models.Model):
    """One bulk bonus payment of a study: its lines (BonusLine), why, and how
    far it went on Prolific."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Recorded (not yet set up on Prolific)"
        SET_UP = "set_up", "Set up on Prolific (not paid)"
        PAYING = "paying", "Pay request sent (outcome unknown until confirmed)"
        PAID = "paid", "Paid"
        REFUSED = "refused", "Refused by Prolific (nothing paid)"

    study = models.ForeignKey(
        "annotator.Study", on_delete=models.PROTECT, related_name="bonus_payments"
    )
    reason = models.CharField(max_length=300)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.DRAFT)
    # a form's or a caller's key: the same request sent twice makes one payment
    request_key = models.CharField(max_length=64, unique=True)
    prolific_id = models.CharField(max_length=64, blank=True)
    # what Prolific will deduct, fees included, in pence (its answer to the set-up)
    total_pence = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status="draft") | Q(status="refused") | ~Q(prolific_id=""),
                name="bonus_payment_set_up_has_prolific_id",
            )
        ]

    def __str__(self) -> str:
        return f"Bonus {self.pk} of {self.study_id} ({self.get_status_display()})"

    @property
    def total_text(self) -> str:
        """What Prolific said it will deduct, as money ("" before it said)."""
        if self.total_pence is None:
            return ""
        return f"GBP {self.total_pence / 100:,.2f}"


class BonusLine(models.Model):
    payment = models.ForeignKey(BonusPayment, on_delete=models.PROTECT, related_name="lines")
    participant = models.ForeignKey(
        "annotator.Participant", on_delete=models.PROTECT, related_name="bonus_lines"
    )
    amount = models.DecimalField(max_digits=7, decimal_places=2)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["payment", "participant"], name="bonus_line_once"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_line_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.participant} {self.amount}"


class ParticipantGroup(models.Model):
    """A participant group on Prolific kept across studies: an allowlist (raters
    who qualified before) or a blocklist (raters excluded); the studies it
    filters get it as their allowlist or blocklist filter when created there."""

    class Kind(models.TextChoices):
        ALLOW = "allow", "Allowlist (only these may take part)"
        BLOCK = "block", "Blocklist (these may not take part)"

    name = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=5, choices=Kind.choices)
    prolific_id = models.CharField(max_length=64, unique=True)
    studies = models.ManyToManyField(
        "annotator.Study", blank=True, related_name="participant_groups"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"


class ParticipantGroupMember(models.Model):
    """A Prolific participant in a group: why, and from which study."""

    group = models.ForeignKey(ParticipantGroup, on_delete=models.CASCADE, related_name="members")
    prolific_pid = models.CharField(max_length=64)
    reason = models.CharField(max_length=300, blank=True)
    study = models.ForeignKey(
        "annotator.Study", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group_id", "added_at"]
        constraints = [
            models.UniqueConstraint(fields=["group", "prolific_pid"], name="group_member_once")
        ]

    def __str__(self) -> str:
        return f"{self.prolific_pid} in {self.group}"
