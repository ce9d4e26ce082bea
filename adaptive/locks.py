"""The adaptive app's row lock: an adaptive study's. Every step the loop
decides and every change a researcher makes (budget, deadline, stop) takes it
first, so that two of them never act on the same study at once; a batch
study's own lock (annotator.actions.locks.lock_study) is taken after it."""

from __future__ import annotations

from adaptive.models import AdaptiveStudy


def lock_adaptive(adaptive: AdaptiveStudy | int) -> AdaptiveStudy:
    """The adaptive study's row lock, the study as stored now (inside a transaction)."""
    pk = adaptive if isinstance(adaptive, int) else adaptive.pk
    return AdaptiveStudy.objects.select_for_update().get(pk=pk)
