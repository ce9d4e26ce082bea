import pytest
from django.urls import reverse

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.models import Study
from corpus.models import Dataset
from generation.models import System
from judging.models import Evaluator


def make_study(name="Crowd pilot", kind=Study.Kind.CROWD, raters=2, **fields) -> Study:
    """A study over every system's test2 QA responses, saved (and built) as the
    admin and the API save one, then opened."""
    study = Study(
        name=name,
        kind=kind,
        raters_per_task=raters,
        dataset=Dataset.objects.get(version="qa", language="en", split="test2"),
        completion_code="C0DE1234",
        **fields,
    )
    check_save_study(study, [], after_save=lambda saved: saved.systems.set(System.objects.all()))
    check_set_study_status(study, Study.Status.OPEN)
    return study


@pytest.fixture
def crowd_study(two_meetings) -> Study:
    return make_study(gold_evaluator=Evaluator.objects.get(name="gold-human-eval"))


@pytest.fixture
def gold_study(two_meetings) -> Study:
    return make_study(name="Gold pass", kind=Study.Kind.GOLD, raters=1)


def entry_url(study: Study, pid: str, session: str = "SESSION1") -> str:
    return f"/s/{study.public_id}/?PROLIFIC_PID={pid}&STUDY_ID=PSTUDY&SESSION_ID={session}"


def item_url(assignment, position) -> str:
    return reverse("annotator:item", args=[assignment.token, position])


def finished(study: Study, pid: str, score: int = 6):
    """An assignment of `pid` started, every item rated `score`, completed."""
    assignment = check_start_assignment(study, pid=pid)
    for position in range(1, len(assignment.item_order) + 1):
        check_rate_item(assignment, position, score=score)
    check_complete_assignment(assignment)
    return assignment


def rate_as_a_person(assignment, score_of, seconds: float = 40) -> None:
    """Rate every item of an assignment as a careful person would: each item
    page delivered `seconds` before its rating (the server measures the time
    from delivery), `score_of(item)` as the score."""
    from datetime import timedelta

    from django.utils import timezone

    from annotator.models import Assignment, Item

    items = Item.objects.in_bulk(assignment.item_order)
    for position, item_id in enumerate(assignment.item_order, 1):
        Assignment.objects.filter(pk=assignment.pk).update(
            served_item_id=item_id, served_at=timezone.now() - timedelta(seconds=seconds)
        )
        check_rate_item(assignment, position, score=score_of(items[item_id]))
