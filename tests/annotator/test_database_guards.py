"""The database itself refuses to delete human data (docs/human-studies.md):
raw SQL, not only the admin and the API. Runs on SQLite and, with
DATABASE_URL, on PostgreSQL; each vendor has its own trigger."""

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from annotator.actions.arrival import check_start_assignment
from annotator.actions.items import check_build_items
from annotator.actions.rating import check_rate_item
from annotator.models import Assignment, Participant, Rating, Study
from tests.annotator.conftest import make_study

GUARDED = ("annotator_rating", "annotator_assignment", "annotator_participant")


def rated(study: Study) -> Rating:
    assignment = check_start_assignment(study, pid="KEEP1")
    check_rate_item(assignment, 1, score=7)
    return Rating.objects.get(assignment=assignment)


def raw_delete(sql: str, params=()) -> None:
    """Run a DELETE the way a person at a SQL prompt would (in a savepoint, so
    that the test's transaction goes on after the refusal)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM annotator_rating",
        "DELETE FROM annotator_rating WHERE id = %s",
    ],
)
def test_raw_delete_of_a_rating_is_refused_and_the_row_stays(crowd_study, sql):
    rating = rated(crowd_study)
    before = list(Rating.objects.values_list())
    with pytest.raises(IntegrityError, match="Concord keeps human data: rows of annotator_rating"):
        raw_delete(sql, [rating.pk] if "%s" in sql else ())
    assert list(Rating.objects.values_list()) == before


@pytest.mark.django_db
def test_orm_delete_of_a_rating_is_refused_too(crowd_study):
    rating = rated(crowd_study)
    with pytest.raises(IntegrityError, match="annotator_rating"), transaction.atomic():
        Rating.objects.filter(pk=rating.pk).delete()
    assert Rating.objects.filter(pk=rating.pk).exists()


@pytest.mark.django_db
def test_raw_delete_of_an_unrated_assignment_or_its_participant_is_refused(crowd_study):
    """No foreign key holds an assignment nobody rated in: the trigger does."""
    assignment = check_start_assignment(crowd_study, pid="ARRIVED")
    for table, pk in (
        ("annotator_assignment", assignment.pk),
        ("annotator_participant", assignment.participant_id),
    ):
        with pytest.raises(IntegrityError, match=f"rows of {table} cannot be deleted"):
            raw_delete(f"DELETE FROM {table} WHERE id = %s", [pk])
    assert Assignment.objects.filter(pk=assignment.pk).exists()
    assert Participant.objects.filter(pk=assignment.participant_id).exists()


@pytest.mark.django_db
def test_items_nobody_rated_may_still_be_rebuilt(crowd_study):
    """Items are not guarded by a trigger: rebuilding before any arrival deletes them."""
    before = set(crowd_study.items.values_list("pk", flat=True))
    check_build_items(crowd_study)
    assert not before & set(crowd_study.items.values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_flushing_the_whole_database_still_works_and_keeps_the_guard(tmp_path):
    """What pytest-django does between transactional tests (SQLite: DELETE FROM
    with the triggers set aside; PostgreSQL: TRUNCATE), and `manage.py flush`."""
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    rated(make_study(name="Before the flush"))
    call_command("flush", interactive=False, verbosity=0)
    assert not Rating.objects.exists() and not Participant.objects.exists()

    import_elitr_bench(write_synthetic_elitr(tmp_path / "again", meetings=2), with_responses=True)
    rating = rated(make_study(name="After the flush"))
    with pytest.raises(IntegrityError, match="annotator_rating"):
        raw_delete("DELETE FROM annotator_rating")
    assert Rating.objects.filter(pk=rating.pk).exists()


@pytest.mark.django_db
def test_every_guarded_table_has_its_trigger():
    """A migration that rebuilds one of these tables on SQLite drops its trigger
    with the old table (0005 adds columns to annotator_assignment, and creates
    its trigger again: annotator/triggers.py); this says which one is missing."""
    if connection.vendor == "sqlite":
        sql = "SELECT tbl_name FROM sqlite_master WHERE type = 'trigger'"
    else:
        sql = (
            "SELECT event_object_table FROM information_schema.triggers "
            "WHERE event_manipulation = 'DELETE' AND action_timing = 'BEFORE'"
        )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        tables = {row[0] for row in cursor.fetchall()}
    assert set(GUARDED) <= tables
