"""State changes of a study racing each other, with real threads on PostgreSQL.

Every change takes the study's row lock first (annotator.actions), so no
race may fail, deadlock or double anything, and afterwards the study's
judgments always equal the ratings of accepted participants whose work is
complete. SQLite runs one writer at a time, so these tests need PostgreSQL."""

from __future__ import annotations

import threading
import traceback

import pytest
from django.db import connection, connections

from annotator.actions.arrival import check_start_assignment
from annotator.actions.participants import check_exclude_participant, check_reinstate_participant
from annotator.actions.rating import check_complete_assignment, check_rate_item
from annotator.actions.settings import check_save_study
from annotator.errors import StudyError
from annotator.models import Assignment, Item, Participant, Rating, Study
from annotator.selectors import task_loads
from corpus.importers.synthetic import write_synthetic_elitr
from judging.importing import import_elitr_bench
from judging.models import Judgment
from tests.annotator.conftest import make_study
from tests.conftest import require

pytestmark = pytest.mark.django_db(transaction=True)
TRIALS = 5


@pytest.fixture
def data(tmp_path):
    require(
        connection.vendor == "postgresql",
        f"race tests need PostgreSQL (DATABASE_URL); this run uses {connection.vendor}",
    )
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)


def race(*work) -> list[str]:
    """Run the callables at the same moment in their own threads (own connections);
    return 'ok' or the error of each."""
    barrier = threading.Barrier(len(work))
    outcomes: list[str] = [""] * len(work)

    def run(index: int, job) -> None:
        try:
            barrier.wait()
            job()
            outcomes[index] = "ok"
        except StudyError as error:
            outcomes[index] = f"refused: {error}"
        except Exception:  # noqa: BLE001 - the test reports any crash
            outcomes[index] = "crash: " + traceback.format_exc()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(work)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def expected_judgments(study: Study) -> set[tuple]:
    return {
        (response_id, pid or f"user:{user_id}", float(score))
        for response_id, pid, user_id, score in Rating.objects.filter(
            item__study=study,
            item__kind=Item.Kind.RESPONSE,
            assignment__status=Assignment.Status.COMPLETED,
            assignment__participant__status=Participant.Status.ACCEPTED,
        ).values_list(
            "item__response_id",
            "assignment__participant__prolific_pid",
            "assignment__participant__user_id",
            "score",
        )
    }


def stored_judgments(study: Study) -> set[tuple]:
    study.refresh_from_db()
    rows = list(
        Judgment.objects.filter(evaluator_id=study.evaluator_id).values_list(
            "response_id", "rater", "score"
        )
    )
    assert len(rows) == len(set(rows)), "a judgment is stored twice"
    return set(rows)


def assert_consistent(study: Study) -> None:
    assert stored_judgments(study) == expected_judgments(study)


def rated(study: Study, pid: str) -> Assignment:
    assignment = check_start_assignment(study, pid=pid)
    for position in range(1, len(assignment.item_order) + 1):
        check_rate_item(assignment, position, score=1 + position % 10)
    return assignment


def no_crash(outcomes: list[str]) -> None:
    crashes = [o for o in outcomes if o.startswith("crash")]
    assert not crashes, crashes[0]


def test_simultaneous_arrivals_fill_each_place_once(data):
    study = make_study(raters=2)  # 2 meetings x 2 raters = 4 places
    outcomes = race(*(lambda n=n: check_start_assignment(study, pid=f"RUSH{n}") for n in range(10)))
    no_crash(outcomes)
    assert outcomes.count("ok") == 4
    assert all("places in this study are taken" in o for o in outcomes if o != "ok")
    per_task = list(Assignment.objects.values_list("task_id", flat=True))
    assert len(per_task) == 4 and len(set(per_task)) == 2 and per_task.count(per_task[0]) == 2


def test_exclusion_during_completion(data):
    study = make_study(raters=3)
    for trial in range(TRIALS):
        assignment = rated(study, f"EX{trial}")
        participant = assignment.participant
        outcomes = race(
            lambda a=assignment: check_complete_assignment(a),
            lambda p=participant: check_exclude_participant(p, None, "failed a check"),
        )
        no_crash(outcomes)
        assert outcomes == ["ok", "ok"]
        participant.refresh_from_db()
        assert participant.status == Participant.Status.EXCLUDED
        assert not Judgment.objects.filter(rater=participant.rater_id).exists()
        assert_consistent(study)


def test_two_completions_of_one_task_at_once(data):
    study = make_study(raters=3)
    for trial in range(TRIALS):
        assignment = rated(study, f"TWICE{trial}")
        outcomes = race(
            lambda a=assignment: check_complete_assignment(a),
            lambda a=assignment: check_complete_assignment(a),
        )
        no_crash(outcomes)
        assert outcomes == ["ok", "ok"]
        assert (
            Judgment.objects.filter(rater=f"TWICE{trial}").count()
            == Rating.objects.filter(assignment=assignment, item__kind=Item.Kind.RESPONSE).count()
        )
        assert_consistent(study)


def test_two_participants_of_one_task_complete_at_once(data):
    study = make_study(raters=10)
    for trial in range(TRIALS):
        first, second = rated(study, f"A{trial}"), rated(study, f"B{trial}")
        outcomes = race(
            lambda a=first: check_complete_assignment(a),
            lambda a=second: check_complete_assignment(a),
        )
        no_crash(outcomes)
        assert outcomes == ["ok", "ok"]
        assert_consistent(study)


def test_reinstatement_during_completion(data):
    study = make_study(raters=3)
    for trial in range(TRIALS):
        assignment = rated(study, f"RE{trial}")
        check_exclude_participant(assignment.participant, None, "by mistake")
        outcomes = race(
            lambda a=assignment: check_complete_assignment(a),
            lambda p=assignment.participant: check_reinstate_participant(p, None, "undo"),
        )
        no_crash(outcomes)
        assert outcomes == ["ok", "ok"]
        assert Judgment.objects.filter(rater=f"RE{trial}").count() > 0
        assert_consistent(study)


def test_arrival_during_exclusion(data):
    """An excluded participant's place goes to an arrival; a simultaneous arrival
    either takes it or finds the study full, never both places at once."""
    study = make_study(raters=1)  # 2 places
    one, two = rated(study, "ONE"), rated(study, "TWO")
    check_complete_assignment(one)
    for trial in range(TRIALS):
        outcomes = race(
            lambda: check_exclude_participant(two.participant, None, "too fast"),
            lambda t=trial: check_start_assignment(study, pid=f"NEW{t}"),
        )
        no_crash(outcomes)
        loads = task_loads(study)
        assert all(load <= 1 for load in loads.values()), loads
        assert_consistent(study)
        check_reinstate_participant(two.participant, None, "next trial")
        for newcomer in Participant.objects.filter(
            prolific_pid__startswith="NEW", status=Participant.Status.ACCEPTED
        ):
            check_exclude_participant(newcomer, None, "make room for the next trial")


def test_rename_after_ratings_keeps_one_evaluator(data):
    study = make_study(raters=3)
    check_complete_assignment(rated(study, "R1"))
    evaluator_id = Study.objects.get(pk=study.pk).evaluator_id
    judgments = stored_judgments(study)
    outcomes = race(
        lambda: check_save_study(Study(**_fields(study, name="Renamed pilot")), ["name"]),
        lambda: check_complete_assignment(rated(study, "R2")),
    )
    no_crash(outcomes)
    study.refresh_from_db()
    assert study.name == "Renamed pilot" and study.evaluator_id == evaluator_id
    assert study.evaluator.name == "crowd human (Renamed pilot)"
    assert judgments < stored_judgments(study)  # R1's kept, R2's added, one evaluator
    assert_consistent(study)


def _fields(study: Study, **changes) -> dict:
    values = {f.attname: getattr(study, f.attname) for f in Study._meta.concrete_fields}
    return values | changes


def test_two_clicks_on_pay_at_once_pay_once(data):
    """Prolific pays a bonus again for every pay request: of two at once, one
    is sent and the other refused."""
    from annotator.actions.bonuses import (
        check_pay_bonuses,
        check_record_bonuses,
        check_set_up_bonuses,
    )
    from annotator.actions.prolific_sync import check_create_on_prolific
    from annotator.prolific_api import ProlificClient
    from demo.fake_prolific import FakeProlific

    study = make_study(raters=TRIALS)
    with FakeProlific() as prolific:
        client = ProlificClient(prolific.token, prolific.url)
        for trial in range(TRIALS):
            if not study.prolific_study_id:
                check_create_on_prolific(study, client, "https://c.example.org")
            pid = f"RATER{trial}"
            participant = check_start_assignment(study, pid=pid).participant
            prolific.add_submission(study.prolific_study_id, pid, "AWAITING REVIEW")
            payment, _ = check_record_bonuses(study, {participant: "1.00"}, "race", f"race{trial}")
            payment = check_set_up_bonuses(payment, client)
            before = len(prolific.paid)
            outcomes = race(
                lambda p=payment: check_pay_bonuses(p, client),
                lambda p=payment: check_pay_bonuses(p, client),
            )
            no_crash(outcomes)
            assert sorted(o.split(":")[0] for o in outcomes) == ["ok", "refused"]
            assert len(prolific.paid) == before + 1
