"""The two row locks of a human study, taken in this order: the study's, then
one assignment's (see annotator.actions). Both must run inside a transaction."""

from __future__ import annotations

from annotator.models import Assignment, Study


def lock_study(study: Study | int) -> Study:
    """Take the study's row lock (SELECT ... FOR UPDATE) and return the study as
    stored now. A Study instance passed in is refreshed in place, so the caller's
    object never holds stale state that a later save() would write back."""
    locking = Study.objects.select_for_update()
    if isinstance(study, Study):
        study.refresh_from_db(from_queryset=locking)
        return study
    return locking.get(pk=study)


def lock_assignment(pk: int, *related: str) -> Assignment:
    """Take one assignment's row lock, with `related` (default: its participant and
    task) read in the same query. Caller holds the study lock, or only this lock
    for a rating."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .select_related(*(related or ("participant", "task")))
        .get(pk=pk)
    )
