"""A gold annotator's items come meeting by meeting (annotator.gold), and their
pages say how far they are in each meeting."""

from __future__ import annotations

import itertools
import random

import pytest

from annotator.actions.arrival import check_start_assignment
from annotator.actions.rating import check_rate_item
from annotator.gold import (
    grouped_by_meeting,
    item_meetings,
    meeting_progress,
    place_in_meeting,
    study_meetings,
)
from tests.annotator.conftest import make_study


def runs_of(sequence) -> list:
    """The values of a sequence with repeats collapsed: [a, a, b, a] -> [a, b, a]."""
    return [key for key, _ in itertools.groupby(sequence)]


def test_items_are_grouped_by_meeting_and_shuffled_within():
    items = [(pk, "m2" if pk % 2 else "m1") for pk in range(1, 21)] + [(100, ""), (101, "")]
    order = grouped_by_meeting(items, random.Random(7))
    assert sorted(order) == sorted(pk for pk, _ in items)
    meetings = dict(items)
    assert runs_of(meetings[pk] for pk in order if meetings[pk]) == ["m1", "m2"]
    first = [pk for pk in order if meetings[pk] == "m1"]
    assert first != sorted(first)  # shuffled within the meeting
    # the same seed, the same order (the assignment keeps its seed)
    assert grouped_by_meeting(items, random.Random(7)) == order
    assert grouped_by_meeting(items, random.Random(8)) != order


@pytest.mark.django_db
def test_a_gold_annotators_work_comes_meeting_by_meeting(two_meetings, gold_annotator):
    study = make_study(name="Gold pass", kind="gold", raters=1, attention_checks=True)
    assert [m.meeting for m in study_meetings(study)] == [
        "meeting_en_synthetic_001",
        "meeting_en_synthetic_002",
    ]
    assignment = check_start_assignment(study, user=gold_annotator)
    meetings = item_meetings(assignment.item_order)
    assert len(assignment.item_order) == 36 + 2  # 2 meetings x 6 questions x 3 systems, 2 checks
    assert runs_of(meetings[pk] for pk in assignment.item_order if meetings[pk]) == [
        "meeting_en_synthetic_001",
        "meeting_en_synthetic_002",
    ]
    for position in range(1, 5):
        check_rate_item(assignment, position, score=7)
    progress = {m.meeting: m for m in meeting_progress(assignment)}
    first, second = progress["meeting_en_synthetic_001"], progress["meeting_en_synthetic_002"]
    assert (first.total, second.total) == (18, 18)
    assert first.done + second.done == sum(1 for pk in assignment.item_order[:4] if meetings[pk])
    order = assignment.item_order
    assert first.first_open == next(
        p for p, pk in enumerate(order, 1) if p > 4 and meetings[pk] == first.meeting
    )
    assert second.done == 0 and second.first_open is not None
    assert meetings[assignment.item_order[second.first_open - 1]] == "meeting_en_synthetic_002"
    # the item page's "meeting_en_synthetic_002: 1 of 18"
    place = place_in_meeting(assignment, second.first_open)
    assert (place.meeting, place.index, place.count, place.starts) == (
        "meeting_en_synthetic_002",
        1,
        18,
        True,
    )


@pytest.mark.django_db
def test_crowd_tasks_keep_their_plain_shuffle(crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    replay = sorted(assignment.item_order)
    random.Random(assignment.shuffle_seed).shuffle(replay)
    assert replay == assignment.item_order
