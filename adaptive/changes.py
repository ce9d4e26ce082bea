"""The researcher's changes to an adaptive study: stop it, change its budget,
change its deadline. Each is a check_/do_ pair (annotator.actions): check_
takes the adaptive study's row lock (adaptive.locks), checks and calls do_,
which writes the change and its Decision and must run with that lock held.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from adaptive.errors import AdaptiveError
from adaptive.locks import lock_adaptive
from adaptive.loop import begin_stop, decide
from adaptive.models import AdaptiveStudy, Decision
from adaptive.waves import money
from users.models import User


@transaction.atomic
def check_stop(adaptive: AdaptiveStudy, actor: User | None, reason: str = "") -> AdaptiveStudy:
    """Stop a planned study at once, or a running one after its work in progress."""
    adaptive = lock_adaptive(adaptive)
    if adaptive.status not in (AdaptiveStudy.Status.PLANNED, AdaptiveStudy.Status.RUNNING):
        raise AdaptiveError(f"'{adaptive.name}' is {adaptive.status} already.")
    do_stop(adaptive, actor, reason)
    return adaptive


def do_stop(adaptive: AdaptiveStudy, actor: User | None, reason: str) -> None:
    """Needs the adaptive study's lock (check_stop takes it)."""
    if adaptive.status == AdaptiveStudy.Status.PLANNED:
        adaptive.status = AdaptiveStudy.Status.FINISHED
        adaptive.stop_reason = "stopped before it started"
        adaptive.finished_at = timezone.now()
        adaptive.save(update_fields=["status", "stop_reason", "finished_at"])
        decide(adaptive, Decision.Action.FINISHED, adaptive.stop_reason, actor)
    else:
        begin_stop(
            adaptive,
            f"stopped by {actor or 'a researcher'}" + (f": {reason}" if reason else ""),
            actor,
        )


@transaction.atomic
def check_change_budget(adaptive: AdaptiveStudy, pence: int, actor: User | None) -> AdaptiveStudy:
    """A new budget, never below what is spent or reserved already."""
    adaptive = lock_adaptive(adaptive)
    if adaptive.status in (AdaptiveStudy.Status.STOPPING, AdaptiveStudy.Status.FINISHED):
        raise AdaptiveError(
            f"'{adaptive.name}' is {adaptive.status}: its budget no longer matters."
        )
    committed = sum(money(adaptive).values())
    if pence < committed:
        raise AdaptiveError(
            f"GBP {pence / 100:.2f} is below what is spent or reserved already "
            f"(GBP {committed / 100:.2f})."
        )
    do_change_budget(adaptive, pence, actor)
    return adaptive


def do_change_budget(adaptive: AdaptiveStudy, pence: int, actor: User | None) -> None:
    """Needs the adaptive study's lock (check_change_budget takes it)."""
    before = adaptive.budget_pence
    adaptive.budget_pence = pence
    adaptive.save(update_fields=["budget_pence"])
    decide(
        adaptive, Decision.Action.BUDGET, f"GBP {before / 100:.2f} -> GBP {pence / 100:.2f}", actor
    )


@transaction.atomic
def check_change_deadline(
    adaptive: AdaptiveStudy, deadline: datetime, actor: User | None
) -> AdaptiveStudy:
    """A later deadline for a study that has not begun to stop."""
    adaptive = lock_adaptive(adaptive)
    if adaptive.status in (AdaptiveStudy.Status.STOPPING, AdaptiveStudy.Status.FINISHED):
        raise AdaptiveError(f"'{adaptive.name}' is {adaptive.status}: it cannot be extended.")
    if deadline <= timezone.now():
        raise AdaptiveError("The new deadline has passed already.")
    do_change_deadline(adaptive, deadline, actor)
    return adaptive


def do_change_deadline(adaptive: AdaptiveStudy, deadline: datetime, actor: User | None) -> None:
    """Needs the adaptive study's lock (check_change_deadline takes it)."""
    before = adaptive.deadline
    adaptive.deadline = deadline
    adaptive.save(update_fields=["deadline"])
    decide(
        adaptive,
        Decision.Action.DEADLINE,
        f"{before:%Y-%m-%d %H:%M} -> {deadline:%Y-%m-%d %H:%M}",
        actor,
    )
