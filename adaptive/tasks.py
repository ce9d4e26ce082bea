"""The adaptive loop on the worker: a step after every completed task of a
batch (adaptive.signals) and every minute for every running study (beat), so
that a deadline or a lost message never leaves a study running."""

from __future__ import annotations

from config.celery import app

# adaptive.loop loads numpy and pandas: imported when a task runs, not when
# the worker starts (tests/test_startup.py)


@app.task(name="adaptive.advance")
def advance_adaptive(adaptive_id: int) -> str:
    """One step of the loop, then the batches' state carried to Prolific
    (outside the step's transaction: a slow or failing Prolific never holds
    the study's lock, and the next step retries what did not go through)."""
    from adaptive.loop import check_advance
    from adaptive.models import AdaptiveStudy
    from adaptive.prolific import sync_on_prolific

    if not AdaptiveStudy.objects.filter(pk=adaptive_id).exists():
        return "gone"  # a message older than its study (a test database, a restore)
    done = check_advance(adaptive_id)
    sync_on_prolific(adaptive_id)
    return done


@app.task(name="adaptive.advance_all")
def advance_all() -> int:
    from adaptive.loop import running_ids

    ids = running_ids()
    for adaptive_id in ids:
        advance_adaptive.delay(adaptive_id)
    return len(ids)
