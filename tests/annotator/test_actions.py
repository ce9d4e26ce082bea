"""Study building, assignment, stale work, exclusion and quota refill, as plain calls."""

from datetime import timedelta

import pytest
from django.utils import timezone

from annotator.actions.arrival import check_start_assignment
from annotator.actions.items import check_build_items
from annotator.actions.participants import (
    check_exclude_participant,
    check_reinstate_participant,
    check_release_stale,
)
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.errors import QuotaFull, StudyConflict, StudyError
from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study, Task
from annotator.quality import participant_quality
from annotator.selectors import missing_positions
from judging.models import Judgment
from tests.annotator.conftest import make_study

pytestmark = pytest.mark.django_db


def rate_all(assignment, score=5):
    for position in range(1, len(assignment.item_order) + 1):
        check_rate_item(assignment, position, score=score, client_seconds=2.5)


def served(assignment, position: int, seconds_ago: float) -> None:
    """The item page at `position` was delivered `seconds_ago` (as the view records it)."""
    Assignment.objects.filter(pk=assignment.pk).update(
        served_item_id=assignment.item_order[position - 1],
        served_at=timezone.now() - timedelta(seconds=seconds_ago),
    )


def test_crowd_study_has_one_task_per_meeting(crowd_study):
    tasks = Task.objects.filter(study=crowd_study).with_counts().order_by("label")
    assert [(t.label, t.item_count) for t in tasks] == [
        ("meeting_en_synthetic_001", 18),
        ("meeting_en_synthetic_002", 18),
    ]
    item = Item.objects.filter(study=crowd_study).first()
    assert item.question and item.correct_answer and item.answer


def test_gold_study_has_one_task_of_all_meetings(gold_study):
    assert list(
        Task.objects.filter(study=gold_study).with_counts().values_list("label", "item_count")
    ) == [("all meetings", 36)]


def test_attention_checks_are_added_per_task(two_meetings):
    study = make_study(name="With checks", attention_checks=True)
    assert Item.objects.filter(study=study, response__isnull=True).count() == 2 * 2


def test_selection_without_a_run_is_refused(two_meetings):
    study = make_study(name="Any")
    study.mode = "mt"
    study.save()
    with pytest.raises(StudyError, match="No single-turn run|No multi-turn run"):
        check_build_items(study)


def test_items_cannot_change_after_the_first_rating(crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    check_rate_item(assignment, 1, score=7)
    before = list(Item.objects.filter(study=crowd_study).values_list("pk", flat=True))
    with pytest.raises(StudyError, match="already has ratings"):
        check_build_items(crowd_study)
    assert list(Item.objects.filter(study=crowd_study).values_list("pk", flat=True)) == before


def test_items_cannot_change_after_the_first_arrival(crowd_study):
    """An arrival without a rating holds its task and its order of the items: a
    rebuild is refused with the reason (it used to fail on PROTECT)."""
    assignment = check_start_assignment(crowd_study, pid="P1")
    builds = AuditEvent.objects.filter(study=crowd_study, action="build_items").count()
    before = sorted(Item.objects.filter(study=crowd_study).values_list("pk", "task_id"))
    with pytest.raises(StudyConflict, match="has 1 participant with a task"):
        check_build_items(crowd_study)
    assert sorted(Item.objects.filter(study=crowd_study).values_list("pk", "task_id")) == before
    assignment.refresh_from_db()
    assert set(assignment.item_order) <= {pk for pk, _ in before}
    # a change of the selection is refused the same way, before anything is saved
    crowd_study.attention_checks = True
    with pytest.raises(StudyConflict, match="attention_checks"):
        check_save_study(crowd_study, ["attention_checks"])
    crowd_study.refresh_from_db()
    assert crowd_study.attention_checks is False
    assert AuditEvent.objects.filter(study=crowd_study, action="build_items").count() == builds


def test_items_may_be_rebuilt_before_anyone_arrives(crowd_study):
    assert check_build_items(crowd_study) == {"tasks": 2, "items": 36, "responses": 36}


def test_arrivals_spread_over_meetings_and_fill_the_quota(crowd_study):
    first = check_start_assignment(crowd_study, pid="P1")
    second = check_start_assignment(crowd_study, pid="P2")
    assert first.task != second.task  # the second worker gets the next meeting
    third = check_start_assignment(crowd_study, pid="P3")
    fourth = check_start_assignment(crowd_study, pid="P4")
    assert {third.task, fourth.task} == {first.task, second.task}
    with pytest.raises(QuotaFull):
        check_start_assignment(crowd_study, pid="P5")
    assert not Participant.objects.filter(prolific_pid="P5").exists()
    # the same participant never gets a second task
    assert check_start_assignment(crowd_study, pid="P1") == first


def test_items_are_shuffled_per_participant_reproducibly(crowd_study):
    import random

    a = check_start_assignment(crowd_study, pid="P1")
    b = check_start_assignment(crowd_study, pid="P3")
    c = check_start_assignment(crowd_study, pid="P2")
    same_task = [x for x in (b, c) if x.task == a.task][0]
    assert sorted(a.item_order) == sorted(same_task.item_order)
    assert a.item_order != same_task.item_order
    replay = sorted(a.item_order)
    random.Random(a.shuffle_seed).shuffle(replay)
    assert replay == a.item_order


@pytest.mark.parametrize("bad", [0, 11, "abc", "5.5", "", None, "-3", " 10x"])
def test_bad_scores_are_refused_and_nothing_is_stored(crowd_study, bad):
    assignment = check_start_assignment(crowd_study, pid="P1")
    with pytest.raises(StudyError, match="whole number from 1 to 10|score first"):
        check_rate_item(assignment, 1, score=bad)
    assert Rating.objects.count() == 0


def test_double_submit_stores_one_rating(crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    check_rate_item(assignment, 3, score=4, client_seconds=2)
    check_rate_item(assignment, 3, score=6, client_seconds=1.5)
    rating = Rating.objects.get()
    assert (rating.score, rating.client_seconds) == (6, 3.5)


def test_time_per_item_is_measured_on_the_server(crowd_study):
    """The browser's figure is a hint: a forged one (shown_at=-1e12 once stored
    3600 s) changes nothing in the time that quality control reads."""
    assignment = check_start_assignment(crowd_study, pid="P1")
    served(assignment, 1, 12)
    check_rate_item(assignment, 1, score=4, client_seconds=3600)
    rating = Rating.objects.get()
    assert rating.seconds == pytest.approx(12, abs=1) and rating.client_seconds == 3600
    # same visit, a second later: ~0 s more
    check_rate_item(assignment, 1, score=5, client_seconds=0)
    rating.refresh_from_db()
    assert rating.seconds == pytest.approx(12, abs=1)
    check_rate_item(assignment, 2, score=5)  # never served: no server time
    assert Rating.objects.get(item_id=assignment.item_order[1]).seconds == 0
    with pytest.raises(StudyError, match="positive number"):
        check_rate_item(assignment, 3, score=5, client_seconds=-1e12)


def test_stale_work_is_released_and_kept(crowd_study):
    crowd_study.raters_per_task = 1
    crowd_study.save()
    slow = check_start_assignment(crowd_study, pid="SLOW")
    check_rate_item(slow, 1, score=8)
    other = check_start_assignment(crowd_study, pid="OTHER")
    Assignment.objects.filter(pk=slow.pk).update(started_at=timezone.now() - timedelta(minutes=61))
    late = check_start_assignment(crowd_study, pid="LATE")  # triggers the release
    slow.refresh_from_db()
    assert slow.status == Assignment.Status.TIMED_OUT
    assert late.task == slow.task and other.task != slow.task
    assert Rating.objects.filter(assignment=slow).count() == 1  # kept, marked incomplete
    assert AuditEvent.objects.filter(action="timed_out", participant=slow.participant).exists()
    with pytest.raises(StudyError, match="time for this study ran out"):
        check_start_assignment(crowd_study, pid="SLOW")


def test_returning_after_release_continues_when_there_is_room(crowd_study):
    slow = check_start_assignment(crowd_study, pid="SLOW")
    check_rate_item(slow, 1, score=8)
    Assignment.objects.filter(pk=slow.pk).update(started_at=timezone.now() - timedelta(hours=2))
    check_release_stale(crowd_study)
    again = check_start_assignment(crowd_study, pid="SLOW")
    assert again.pk == slow.pk and again.status == Assignment.Status.ACTIVE
    assert missing_positions(again)[0] == 2


def test_completion_codes_and_attention_checks(two_meetings):
    study = make_study(name="Checks", attention_checks=True, failed_attention_code="FAILED01")
    good = check_start_assignment(study, pid="GOOD")
    careless = check_start_assignment(study, pid="CARELESS")
    for assignment in (good, careless):
        with pytest.raises(StudyError, match="rate every item"):
            check_complete_assignment(assignment)
    for position, item_id in enumerate(good.item_order, 1):
        item = Item.objects.get(pk=item_id)
        check_rate_item(good, position, score=item.expected_max or 6)
    rate_all(careless, score=5)  # 5 is wrong for both checks
    assert check_complete_assignment(good) == "C0DE1234"
    assert check_complete_assignment(careless) == "FAILED01"
    careless.participant.refresh_from_db()
    assert careless.participant.flagged and "attention" in careless.participant.flag_reason


def test_exclusion_refills_the_quota_and_leaves_the_analysis(crowd_study):
    crowd_study.raters_per_task = 1
    crowd_study.save()
    done = [check_start_assignment(crowd_study, pid=p) for p in ("A", "B")]
    for assignment in done:
        rate_all(assignment, score=9)
        check_complete_assignment(assignment)
    evaluator_judgments = Judgment.objects.filter(evaluator__name="crowd human (Crowd pilot)")
    assert evaluator_judgments.count() == 36
    with pytest.raises(QuotaFull):
        check_start_assignment(crowd_study, pid="C")
    participant = done[0].participant
    with pytest.raises(StudyError, match="Give a reason"):
        check_exclude_participant(participant, None, "  ")
    check_exclude_participant(participant, None, "rated everything 9 in 2 seconds")
    assert evaluator_judgments.count() == 18
    replacement = check_start_assignment(crowd_study, pid="C")
    assert replacement.task == done[0].task
    assert Rating.objects.filter(assignment=done[0]).count() == 18  # kept
    check_reinstate_participant(participant, None, "mistake")
    assert evaluator_judgments.count() == 36
    actions = list(
        AuditEvent.objects.filter(participant=participant).values_list("action", flat=True)
    )
    assert {"excluded", "reinstated", "completed", "assigned"} <= set(actions)


def test_quality_control_against_gold(crowd_study):
    crowd_study.min_gold_correlation = 0.5
    crowd_study.save()
    careful = check_start_assignment(crowd_study, pid="CAREFUL")
    random_rater = check_start_assignment(crowd_study, pid="RANDOM")
    gold = {}
    for item in Item.objects.filter(study=crowd_study).select_related("response__run__system"):
        gold[item.pk] = {"Synthetic-Echo": 9, "Synthetic-Hedge": 2, "Synthetic-Terse": 5}[
            item.response.run.system.name
        ]
    for position, item_id in enumerate(careful.item_order, 1):
        served(careful, position, 40)
        check_rate_item(careful, position, score=gold[item_id], client_seconds=3)
    for position, item_id in enumerate(random_rater.item_order, 1):
        served(random_rater, position, 40)
        check_rate_item(random_rater, position, score=11 - gold[item_id], client_seconds=1)
    check_complete_assignment(careful)
    check_complete_assignment(random_rater)
    rows = {q.rater: q for q in participant_quality(crowd_study)}
    assert rows["CAREFUL"].gold_correlation == pytest.approx(1.0)
    assert rows["RANDOM"].gold_correlation == pytest.approx(-1.0)
    assert rows["CAREFUL"].median_seconds == pytest.approx(40, abs=2)
    assert rows["CAREFUL"].ratings == 18
    random_rater.participant.refresh_from_db()
    assert random_rater.participant.flagged and "correlation with gold -1.00" in (
        random_rater.participant.flag_reason
    )
    assert not Participant.objects.get(prolific_pid="CAREFUL").flagged


def test_closed_study_refuses_arrivals(crowd_study):
    check_set_study_status(crowd_study, Study.Status.CLOSED)
    with pytest.raises(StudyError, match="closed"):
        check_start_assignment(crowd_study, pid="P1")
    assert not Participant.objects.exists()


def test_study_kinds(crowd_study, gold_study):
    assert crowd_study.evaluator_name == "crowd human (Crowd pilot)"
    assert gold_study.evaluator_name == "gold human (Gold pass)"
    assert Study.objects.count() == 2


def test_periodic_task_releases_stale_work(crowd_study):
    from annotator.tasks import release_stale_work

    slow = check_start_assignment(crowd_study, pid="SLOW")
    check_start_assignment(crowd_study, pid="FRESH")
    Assignment.objects.filter(pk=slow.pk).update(started_at=timezone.now() - timedelta(hours=3))
    assert release_stale_work() == 1
    assert dict(Assignment.objects.values_list("participant__prolific_pid", "status")) == {
        "SLOW": "timed_out",
        "FRESH": "active",
    }


def test_server_timing_header(client, crowd_study):
    answer = client.get(f"/s/{crowd_study.public_id}/?PROLIFIC_PID=P9")
    assert answer["Server-Timing"].startswith("app;dur=")
