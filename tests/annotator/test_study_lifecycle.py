"""A study's states and the signals from its workers, as plain service calls:
pause and close, returning participants, attention checks, the qualification
round, scales, pairwise studies, flags, incremental judgments, quota refill."""

from datetime import timedelta

import pytest
from django.db.models import ProtectedError
from django.utils import timezone

from annotator import defaults
from annotator.actions.arrival import check_start_assignment
from annotator.actions.judgments import check_sync_study_judgments
from annotator.actions.participants import check_exclude_participant, check_refill_quota
from annotator.actions.prolific_sync import check_create_on_prolific
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.actions.settings import check_save_study
from annotator.actions.status import check_set_study_status
from annotator.errors import StudyConflict, StudyError
from annotator.models import Assignment, AuditEvent, Item, Participant, Rating, Study
from annotator.prolific_api import ProlificClient
from annotator.quality import participant_quality
from annotator.selectors import selection
from corpus.models import Dataset, Document
from demo.fake_prolific import FakeProlific
from generation.models import System
from judging.models import Evaluator, Judgment, PairwiseVerdict
from tests.annotator.conftest import make_study

pytestmark = pytest.mark.django_db


def rate_all(assignment, score=5, seconds_each=None):
    for position in range(1, len(assignment.item_order) + 1):
        if seconds_each is not None:
            Assignment.objects.filter(pk=assignment.pk).update(
                served_item_id=assignment.item_order[position - 1],
                served_at=timezone.now() - timedelta(seconds=seconds_each),
            )
        value = score(position) if callable(score) else score
        check_rate_item(assignment, position, score=value)


# --- States ---------------------------------------------------------------------------------


def test_pause_stops_arrivals_but_work_in_progress_finishes(crowd_study):
    working = check_start_assignment(crowd_study, pid="WORKING")
    check_rate_item(working, 1, score=6)
    check_set_study_status(crowd_study, Study.Status.PAUSED)
    with pytest.raises(StudyError, match="paused"):
        check_start_assignment(crowd_study, pid="LATECOMER")
    assert check_start_assignment(crowd_study, pid="WORKING").pk == working.pk  # resumes
    rate_all(working)
    assert check_complete_assignment(working) == "C0DE1234"
    assert not Participant.objects.filter(prolific_pid="LATECOMER").exists()
    check_set_study_status(crowd_study, Study.Status.OPEN)  # reopen
    assert check_start_assignment(crowd_study, pid="LATECOMER").task_id
    actions = list(
        AuditEvent.objects.filter(study=crowd_study, action__in=["paused", "opened"])
        .order_by("pk")
        .values_list("action", flat=True)
    )
    assert actions == ["opened", "paused", "opened"]


def test_closing_stops_ratings_and_keeps_them(crowd_study):
    working = check_start_assignment(crowd_study, pid="WORKING")
    check_rate_item(working, 1, score=6)
    check_set_study_status(crowd_study, Study.Status.CLOSED)
    with pytest.raises(StudyError, match="closed"):
        check_rate_item(working, 2, score=6)
    with pytest.raises(StudyError, match="closed"):
        check_start_assignment(crowd_study, pid="WORKING")
    assert Rating.objects.filter(assignment=working).count() == 1


def test_unknown_status_is_refused(crowd_study):
    with pytest.raises(StudyError, match="open, paused or closed"):
        check_set_study_status(crowd_study, "archived")


# --- Returning participants ------------------------------------------------------------------


def test_a_different_session_id_is_recorded_for_the_researcher(crowd_study):
    first = check_start_assignment(crowd_study, pid="P1", session_id="SUB-A")
    again = check_start_assignment(crowd_study, pid="P1", session_id="SUB-B")
    check_start_assignment(crowd_study, pid="P1", session_id="SUB-B")  # recorded once
    check_start_assignment(crowd_study, pid="P1", session_id="SUB-A")  # the first: nothing
    assert again.pk == first.pk
    first.refresh_from_db()
    assert first.prolific_session_id == "SUB-A" and first.other_session_ids == ["SUB-B"]
    row = next(q for q in participant_quality(crowd_study) if q.rater == "P1")
    assert row.other_session_ids == ["SUB-B"]
    assert AuditEvent.objects.filter(action="session_changed").count() == 1


# --- Attention checks and the qualification round --------------------------------------------


def test_attention_checks_look_like_other_items_and_need_a_failed_code(two_meetings):
    with pytest.raises(StudyError, match="failed-check completion code"):
        make_study(name="No code", attention_checks=True, failed_attention_code="")
    study = make_study(name="Checks", attention_checks=True, failed_attention_code="FA1LED00")
    checks = Item.objects.filter(study=study, kind=Item.Kind.ATTENTION)
    assert checks.count() == 2 * 2
    assert not any(
        "attention" in text.lower() for text in checks.values_list("question", flat=True)
    )
    careless = check_start_assignment(study, pid="CARELESS")
    rate_all(careless, 10)  # the obviously wrong answer gets 10
    assert check_complete_assignment(careless) == "FA1LED00"
    careful = check_start_assignment(study, pid="CAREFUL")
    expected = {c.pk: c.expected_max for c in checks}
    rate_all(careful, lambda position: expected.get(careful.item_order[position - 1], 5))
    assert check_complete_assignment(careful) == "C0DE1234"


def practice_study(**fields):
    settings = {
        "name": "Qualified",
        "practice_items": defaults.PRACTICE_ITEMS,
        "practice_pass": 2,
        "failed_attention_code": "FA1LED00",
        "raters": 1,
    }
    return make_study(**(settings | fields))


def test_qualification_round_comes_first_and_failing_it_releases_the_place(two_meetings):
    study = practice_study()
    failing = check_start_assignment(study, pid="FAILS")
    practice = list(
        Item.objects.filter(pk__in=failing.item_order[:3]).values_list("kind", flat=True)
    )
    assert practice == ["practice"] * 3
    results = [
        check_rate_item(failing, position, score=score)
        for position, score in enumerate([1, 1, 9], 1)
    ]
    assert [r.practice_ok for r in results] == [False, False, False]
    assert results[0].practice_feedback == defaults.PRACTICE_ITEMS[0]["feedback"]
    assert [r.qualification for r in results] == ["", "", "failed"]
    failing.refresh_from_db()
    assert failing.status == Assignment.Status.NOT_QUALIFIED
    assert failing.completion_code == "FA1LED00" and failing.practice_passed is False
    with pytest.raises(StudyError, match="no longer open"):
        check_rate_item(failing, 4, score=5)
    # the place went back: the next participant gets the same meeting
    passing = check_start_assignment(study, pid="PASSES")
    assert passing.task_id == failing.task_id
    for position, score in enumerate([7, 10, 2], 1):
        result = check_rate_item(passing, position, score=score)
    assert result.qualification == "passed"
    for position in range(4, len(passing.item_order) + 1):
        check_rate_item(passing, position, score=6)
    check_complete_assignment(passing)
    judged = Judgment.objects.filter(evaluator=Study.objects.get(pk=study.pk).evaluator)
    assert judged.count() == len(passing.item_order) - 3  # practice is not a judgment
    assert not judged.filter(rater="FAILS").exists()


def test_practice_settings_are_checked(two_meetings):
    with pytest.raises(StudyError, match="higher than the number of practice items"):
        practice_study(practice_pass=5)
    with pytest.raises(StudyError, match="lacks expected_min"):
        make_study(
            name="Bad practice",
            practice_items=[{"question": "q", "correct_answer": "c", "answer": "a"}],
            practice_pass=1,
        )
    assert not Study.objects.exists()


# --- Scales ------------------------------------------------------------------------------------


def test_a_five_point_scale_is_mapped_onto_one_to_ten(two_meetings):
    labels = ["Wrong", "Mostly wrong", "Partly right", "Mostly right", "Right"]
    study = make_study(name="Five points", scale_max=5, scale_labels=labels)
    assignment = check_start_assignment(study, pid="P5")
    with pytest.raises(StudyError, match="from 1 to 5"):
        check_rate_item(assignment, 1, score=6)
    rate_all(assignment, 5)
    check_complete_assignment(assignment)
    judgment = Judgment.objects.filter(rater="P5").first()
    assert (judgment.score, judgment.raw_score, judgment.raw_scale_max) == (10, 5, 5)
    with pytest.raises(StudyError, match="one label per point"):
        make_study(name="Bad labels", scale_max=7, scale_labels=labels)


# --- Pairwise studies -------------------------------------------------------------------------


def pairwise_study(raters=2) -> Study:
    return make_study(
        name="Pairwise",
        rating_type=Study.RatingType.PAIRWISE,
        baseline_system=System.objects.get(name="Synthetic-Terse"),
        raters=raters,
    )


def test_pairwise_items_pair_each_system_with_the_baseline(two_meetings):
    study = pairwise_study()
    items = Item.objects.filter(study=study).select_related("response__run__system", "opponent")
    assert items.count() == 2 * 6 * 2  # 2 meetings x 6 questions x 2 systems besides the baseline
    for item in items:
        assert item.response.run.system.name != "Synthetic-Terse"
        assert item.opponent.run.system.name == "Synthetic-Terse"
        assert item.opponent.question_id == item.response.question_id
        assert item.other_answer == item.opponent.text


def test_pairwise_orders_are_balanced_and_choices_become_verdicts(two_meetings):
    study = pairwise_study(raters=2)
    for pid in ("R1", "R2", "R3"):  # R1 and R3 share a meeting (fewest raters first)
        check_start_assignment(study, pid=pid)
    first = Assignment.objects.get(participant__prolific_pid="R1")
    second = Assignment.objects.get(participant__prolific_pid="R3")
    assert first.task_id == second.task_id
    # each item is swapped for exactly one of its two raters
    assert set(first.swapped_item_ids).isdisjoint(second.swapped_item_ids)
    assert sorted(first.swapped_item_ids + second.swapped_item_ids) == sorted(first.item_order)
    for position in range(1, len(first.item_order) + 1):
        check_rate_item(first, position, choice="A")
    with pytest.raises(StudyError, match="A, B or tie"):
        check_rate_item(second, 1, choice="C")
    check_complete_assignment(first)
    verdicts = PairwiseVerdict.objects.filter(rater="R1")
    assert verdicts.count() == len(first.item_order)
    for verdict in verdicts:
        swapped = Item.objects.get(study=study, response=verdict.response).pk in (
            first.swapped_item_ids
        )
        # "A" is the answer shown first: the response itself unless swapped
        assert (verdict.order, verdict.winner, verdict.seed) == (int(swapped), "first", 0)
        assert verdict.outcome == ("loss" if swapped else "win")
    check_exclude_participant(first.participant, None, "test")
    assert not PairwiseVerdict.objects.filter(rater="R1").exists()


def test_pairwise_needs_a_baseline(two_meetings):
    with pytest.raises(StudyError, match="baseline"):
        make_study(name="No baseline", rating_type=Study.RatingType.PAIRWISE)


# --- Flags ------------------------------------------------------------------------------------


def test_speed_and_straight_lining_are_flagged(crowd_study):
    fast = check_start_assignment(crowd_study, pid="FAST")
    rate_all(fast, 7, seconds_each=0.2)  # 18 items in under 4 s, one score everywhere
    check_complete_assignment(fast)
    fast.participant.refresh_from_db()
    reason = fast.participant.flag_reason
    assert fast.participant.flagged and "median 0.2 s per item" in reason
    assert "gave 7 to all 18 items" in reason
    careful = check_start_assignment(crowd_study, pid="CAREFUL")
    rate_all(careful, lambda position: 1 + position % 10, seconds_each=60)
    check_complete_assignment(careful)
    careful.participant.refresh_from_db()
    assert not careful.participant.flagged, careful.participant.flag_reason
    row = next(q for q in participant_quality(crowd_study) if q.rater == "FAST")
    assert row.straight_lined and row.median_seconds == pytest.approx(0.2, abs=0.5)


def test_comments_and_flags_are_kept_with_the_rating(crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    check_rate_item(assignment, 1, score=4, comment="The reference names the wrong person.")
    check_rate_item(assignment, 1, flag="wrong_item")  # a flag alone keeps the score
    rating = Rating.objects.get()
    assert (rating.score, rating.flag, rating.comment) == (
        4,
        "wrong_item",
        "The reference names the wrong person.",
    )
    with pytest.raises(StudyError, match="Unknown flag"):
        check_rate_item(assignment, 1, flag="spam")
    with pytest.raises(StudyError, match="score first"):
        check_rate_item(assignment, 2, comment="no score yet")


# --- Judgments rater by rater ----------------------------------------------------------------


def test_exclusion_touches_only_that_raters_judgments(crowd_study):
    crowd_study.raters_per_task = 3
    crowd_study.save()
    for pid in ("KEEP", "DROP"):
        assignment = check_start_assignment(crowd_study, pid=pid)
        rate_all(assignment, 6)
        check_complete_assignment(assignment)
    kept = set(Judgment.objects.filter(rater="KEEP").values_list("pk", flat=True))
    check_exclude_participant(Participant.objects.get(prolific_pid="DROP"), None, "too fast")
    assert set(Judgment.objects.filter(rater="KEEP").values_list("pk", flat=True)) == kept
    assert not Judgment.objects.filter(rater="DROP").exists()
    assert check_sync_study_judgments(crowd_study) == len(kept)  # nothing else to change
    assert set(Judgment.objects.filter(rater="KEEP").values_list("pk", flat=True)) == kept


def test_renaming_a_rated_study_keeps_its_one_evaluator(crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    rate_all(assignment, 6)
    check_complete_assignment(assignment)
    crowd_study.refresh_from_db()
    evaluator = crowd_study.evaluator
    crowd_study.name = "Pilot, renamed"
    check_save_study(crowd_study, ["name"])
    check_sync_study_judgments(crowd_study)
    evaluator.refresh_from_db()
    assert evaluator.name == "crowd human (Pilot, renamed)"
    assert Evaluator.objects.filter(kind="crowd_human").count() == 1
    assert Judgment.objects.filter(evaluator=evaluator).count() == len(assignment.item_order)


def test_rated_study_settings_are_frozen(crowd_study):
    check_rate_item(check_start_assignment(crowd_study, pid="P1"), 1, score=5)
    crowd_study.rubric = "A new rubric"
    with pytest.raises(StudyConflict, match="rubric"):
        check_save_study(crowd_study, ["rubric"])
    crowd_study.refresh_from_db()
    assert crowd_study.rubric == defaults.RUBRIC


# --- Selection checks -------------------------------------------------------------------------


def test_meetings_of_another_split_are_refused_by_name(two_meetings):
    other = Document.objects.first()
    Document.objects.filter(pk=other.pk).update(split="dev")
    with pytest.raises(StudyError, match=other.external_id):
        study = Study(
            name="Mixed", dataset=Dataset.objects.get(version="qa", language="en", split="test2")
        )
        selection(study, System.objects.all(), [Document.objects.get(pk=other.pk)])


def test_gold_evaluator_without_scores_on_the_selection_is_refused(two_meetings):
    empty = Evaluator.objects.create(name="gold elsewhere", kind="gold_human")
    with pytest.raises(StudyError, match="no scores on this selection"):
        make_study(name="Wrong gold", gold_evaluator=empty)
    assert not Study.objects.filter(name="Wrong gold").exists()


# --- Quota -----------------------------------------------------------------------------------


def test_refill_raises_prolific_places_for_excluded_participants(crowd_study):
    with FakeProlific() as prolific:
        client = ProlificClient(prolific.token, prolific.url)
        study_id = check_create_on_prolific(crowd_study, client, "https://concord.example.org")
        done = check_start_assignment(crowd_study, pid="DONE")
        rate_all(done, 5)
        check_complete_assignment(done)
        check_exclude_participant(done.participant, None, "failed gold check")
        result = check_refill_quota(crowd_study, None, client=client)
        assert result["prolific_places"] == 2 * 2 + 1
        assert prolific.studies[study_id]["total_available_places"] == 5
        assert result["open_places"] == 4
    assert AuditEvent.objects.filter(action="quota_refilled").exists()


def test_human_data_cannot_be_deleted(crowd_study):
    assignment = check_start_assignment(crowd_study, pid="P1")
    check_rate_item(assignment, 1, score=5)
    for delete in (
        lambda: Participant.objects.filter(pk=assignment.participant_id).delete(),
        lambda: Assignment.objects.filter(pk=assignment.pk).delete(),
        lambda: Study.objects.filter(pk=crowd_study.pk).delete(),
    ):
        with pytest.raises(ProtectedError):
            delete()
    assert Rating.objects.count() == 1


def test_a_rated_pairwise_study_reaches_the_agreement_report(two_meetings):
    from analysis.report.build import build_report
    from analysis.report.selection import Selection

    study = pairwise_study(raters=1)
    for pid in ("R1", "R2"):  # one rater per meeting; R1 always prefers A, R2 always B
        assignment = check_start_assignment(study, pid=pid)
        for position in range(1, len(assignment.item_order) + 1):
            check_rate_item(assignment, position, choice="A" if pid == "R1" else "B")
        check_complete_assignment(assignment)
    name = Study.objects.get(pk=study.pk).evaluator.name
    report = build_report(Selection(dataset_version="qa", split="test2", mode="st"))
    human = report.diagnostics.human_pairwise[name]
    assert (human.verdicts, human.raters) == (24, 2)
    # every verdict went to the answer shown first (R1) or second (R2): 12 and 12
    assert human.position_effect.first_wins == 12
    assert human.position_effect.first_position_win_rate == 0.5
    rates = report.diagnostics.win_rates.per_verdict[name]
    assert set(rates) == {"Synthetic-Echo", "Synthetic-Hedge"}
    assert all(r.against == "Synthetic-Terse" and r.n == 12 for r in rates.values())


def test_practice_answers_are_final_and_comments_keep_plain_new_lines(two_meetings):
    study = practice_study()
    assignment = check_start_assignment(study, pid="P1")
    check_rate_item(assignment, 1, score=7)
    with pytest.raises(StudyError, match="cannot change once its feedback"):
        check_rate_item(assignment, 1, score=1)
    check_rate_item(assignment, 1, score=7, comment="line one\r\nline two\r\n")  # same score
    rating = Rating.objects.get(assignment=assignment)
    assert (rating.score, rating.comment) == (7, "line one\nline two")


def test_on_prolific_who_fails_the_qualification_round_is_screened_out(two_meetings):
    from annotator.actions.prolific_sync import prolific_draft

    study = practice_study(screen_out_pence=20, screen_out_code="SCR33N0T")
    with FakeProlific() as prolific:
        client = ProlificClient(prolific.token, prolific.url)
        check_create_on_prolific(study, client, "https://concord.example.org")
        codes = prolific.studies[study.prolific_study_id]["completion_codes"]
        screen_out = [c for c in codes if c["code_type"] == "FIXED_SCREENOUT"]
        assert screen_out == [
            {
                "code": "SCR33N0T",
                "code_type": "FIXED_SCREENOUT",
                "actions": [
                    {
                        "action": "FIXED_SCREEN_OUT_PAYMENT",
                        "fixed_screen_out_reward": 20,
                        "slots": prolific_draft(study, "https://x.example")[
                            "total_available_places"
                        ],
                    }
                ],
            }
        ]
    failing = check_start_assignment(study, pid="FAILS", prolific_study_id="p1")
    for position, score in enumerate([1, 1, 9], 1):
        check_rate_item(failing, position, score=score)
    failing.refresh_from_db()
    assert failing.status == Assignment.Status.NOT_QUALIFIED
    assert failing.completion_code == "SCR33N0T"  # paid the fixed amount, place freed


def test_screen_out_settings_are_checked(two_meetings):
    with pytest.raises(StudyError, match="needs a qualification round"):
        make_study(name="No round", screen_out_pence=20)
    # the reward: 30 minutes at GBP 9 an hour, 450 pence
    with pytest.raises(StudyError, match=r"below the reward \(450 pence\)"):
        practice_study(screen_out_pence=450)
    with pytest.raises(StudyError, match="must be set and differ"):
        practice_study(screen_out_pence=20, screen_out_code="FA1LED00")
    assert not Study.objects.exists()
