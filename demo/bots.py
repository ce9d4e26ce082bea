"""Simulated participants for the adaptive study's loop in the demo and the
tests: each takes a free place of an open batch the way a Prolific
participant does (a submission on the fake Prolific server, then the study
link's arrival), rates every item of its task as the paper's gold annotator
did plus noise, and completes; some return the study unfinished, as real
participants do, and their places are taken again."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
from django.db import DatabaseError

from annotator.actions.arrival import check_start_assignment
from annotator.actions.participants import check_mark_returned
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.errors import QuotaFull, StudyError
from annotator.models import Assignment, Item, Study
from demo.fake_prolific import FakeProlific

# response id -> the score (1-10) the bot's ratings scatter around
Truth = Callable[[int], float]


def rate_as_bots(
    study: Study,
    truth: Truth,
    rng: np.random.Generator,
    *,
    prolific: FakeProlific | None = None,
    noise: float = 1.0,
    dropout: float = 0.1,
    most: int = 1000,
) -> dict[str, int]:
    """Bots arrive until the study's places are taken (at most `most`); counts
    of those who completed and those who returned their place."""
    counts = {"completed": 0, "returned": 0}
    for _ in range(most):
        pid = "bot" + "".join(rng.choice(list("0123456789abcdef"), 21))
        submission = None
        if prolific is not None and study.prolific_study_id:
            submission = prolific.add_submission(study.prolific_study_id, pid, "ACTIVE")
        try:
            assignment = check_start_assignment(
                study, pid=pid, prolific_study_id=study.prolific_study_id, session_id=pid
            )
        except (QuotaFull, StudyError):
            if submission is not None:
                prolific.submissions[submission]["status"] = "RETURNED"  # type: ignore[union-attr]
            break
        if rng.random() < dropout:
            counts["returned"] += 1
            if submission is not None:
                prolific.submissions[submission]["status"] = "RETURNED"  # type: ignore[union-attr]
            # what the study's Prolific sync does on reading that submission
            check_mark_returned(study, pid, "RETURNED")
            continue
        try:
            rate_and_complete(assignment, study, truth, rng, noise)
        except (StudyError, DatabaseError):
            # refused on the way (the study closed under it) or kept out by the
            # database: it returns its place, as a participant whose page failed
            # does, so that no work stays in progress for the loop to wait on
            if submission is not None:
                prolific.submissions[submission]["status"] = "RETURNED"  # type: ignore[union-attr]
            with contextlib.suppress(StudyError, DatabaseError):
                check_mark_returned(study, pid, "RETURNED")
            raise
        counts["completed"] += 1
        if submission is not None:
            prolific.submissions[submission]["status"] = "AWAITING REVIEW"  # type: ignore[union-attr]
    return counts


def rate_and_complete(
    assignment: Assignment, study: Study, truth: Truth, rng: np.random.Generator, noise: float
) -> None:
    """Every item of the bot's task, as the truth plus noise; then its completion."""
    items = Item.objects.in_bulk(assignment.item_order)
    for position, item_id in enumerate(assignment.item_order, 1):
        item = items[item_id]
        centre = truth(item.response_id) if item.response_id else 5.5
        # the study's scale (1-10 by default) from the common 1-10 scale
        on_scale = 1 + (centre - 1) * (study.scale_max - 1) / 9
        score = int(np.clip(round(on_scale + noise * rng.normal()), 1, study.scale_max))
        check_rate_item(assignment, position, score=score, client_seconds=30)
    check_complete_assignment(assignment)
