"""A gold annotator's work, meeting by meeting.

A gold study is one task holding every item of its selection, often over
several meetings. An expert reads the meeting's transcript beside each item,
so the items come grouped by meeting (annotator.actions.arrival._item_order), and the pages
say which meeting an item belongs to and how far the annotator is in each
(/gold/ and the item page). Reads only; no state changes here.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from annotator.models import Assignment, Item, Rating, Study


def grouped_by_meeting(items: Iterable[tuple[int, str]], rng: random.Random) -> list[int]:
    """Item ids ordered meeting by meeting (meetings by name, each meeting's
    items shuffled with `rng`); items of no meeting (attention checks) go in at
    random places, so that they still look like any other item."""
    groups: dict[str, list[int]] = defaultdict(list)
    loose: list[int] = []
    for pk, meeting in items:
        (groups[meeting] if meeting else loose).append(pk)
    order: list[int] = []
    for meeting in sorted(groups):
        ids = groups[meeting]
        rng.shuffle(ids)
        order += ids
    for pk in loose:
        order.insert(rng.randrange(len(order) + 1), pk)
    return order


def item_meetings(item_ids: Iterable[int]) -> dict[int, str]:
    """The meeting (document id as the benchmark names it) of each item; "" for
    attention checks and practice items."""
    return {
        pk: meeting or ""
        for pk, meeting in Item.objects.filter(pk__in=list(item_ids)).values_list(
            "pk", "response__question__document__external_id"
        )
    }


@dataclass
class MeetingProgress:
    meeting: str
    total: int
    done: int
    first_open: int | None = None  # the position of its first item not rated yet

    @property
    def finished(self) -> bool:
        return self.done >= self.total


def meeting_progress(assignment: Assignment) -> list[MeetingProgress]:
    """Per meeting, in the order the annotator meets them: items, rated, and
    where to go on."""
    meetings = item_meetings(assignment.item_order)
    rated = set(Rating.objects.filter(assignment=assignment).values_list("item_id", flat=True))
    groups: dict[str, MeetingProgress] = {}
    for position, item_id in enumerate(assignment.item_order, 1):
        meeting = meetings.get(item_id, "")
        if not meeting:
            continue
        group = groups.setdefault(meeting, MeetingProgress(meeting, 0, 0))
        group.total += 1
        if item_id in rated:
            group.done += 1
        elif group.first_open is None:
            group.first_open = position
    return list(groups.values())


def study_meetings(study: Study) -> list[MeetingProgress]:
    """Before the annotator starts: the study's meetings and their items."""
    counts: dict[str, int] = defaultdict(int)
    for meeting in Item.objects.filter(study=study, kind=Item.Kind.RESPONSE).values_list(
        "response__question__document__external_id", flat=True
    ):
        counts[meeting] += 1
    return [MeetingProgress(meeting, total, 0) for meeting, total in sorted(counts.items())]


@dataclass
class MeetingPlace:
    meeting: str
    index: int  # this item's place among the meeting's items, from 1
    count: int  # the meeting's items

    @property
    def starts(self) -> bool:
        return self.index == 1


def place_in_meeting(assignment: Assignment, position: int) -> MeetingPlace | None:
    """Where the item at `position` stands in its meeting (None for an item of
    no meeting)."""
    meetings = item_meetings(assignment.item_order)
    meeting = meetings.get(assignment.item_order[position - 1], "")
    if not meeting:
        return None
    same = [p for p, i in enumerate(assignment.item_order, 1) if meetings.get(i) == meeting]
    return MeetingPlace(meeting, same.index(position) + 1, len(same))
