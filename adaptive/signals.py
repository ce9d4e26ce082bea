"""A completed task of a batch: advance its adaptive study (on the worker)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from annotator.signals import task_completed


@receiver(task_completed)
def advance_owner(sender: Any, study_id: int, **kwargs: Any) -> None:
    from adaptive.loop import owner_of
    from adaptive.tasks import advance_adaptive

    owner = owner_of(study_id)
    if owner is not None:
        advance_adaptive.delay(owner)
