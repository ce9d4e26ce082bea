"""The judging app's row lock: a judge item's, taken when a researcher
resolves an item no parser could read, so that two researchers never score
the same item twice. (A run's own lock is the run life cycle's:
runs.lifecycle.)"""

from __future__ import annotations

from judging.models import JudgeItem


def lock_judge_item(pk: int) -> JudgeItem:
    """The item's row lock (only the item's row: PostgreSQL cannot lock the
    nullable join to its call), read with its run's evaluator and its call."""
    return (
        JudgeItem.objects.select_for_update(of=("self",))
        .select_related("run__evaluator", "call")
        .get(pk=pk)
    )
