"""import_ratings adds only to evaluators that ratings files made: the paper's
gold (or a judge, a metric, a study) never gets a rater from a file."""

import pytest
from django.core.management import CommandError, call_command

from generation.models import Response
from judging.models import Evaluator, Judgment
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db


def ratings_file(path, rows):
    path.write_text("response,evaluator,rater,score\n" + "".join(f"{r}\n" for r in rows))
    return path


def test_a_file_naming_the_papers_gold_is_refused_and_changes_nothing(two_meetings, tmp_path):
    gold = Evaluator.objects.get(name="gold-human-eval")
    assert gold.origin == "paper"
    unrated = Response.objects.exclude(judgments__evaluator=gold).first()
    rated = Response.objects.filter(judgments__evaluator=gold).first()
    path = ratings_file(
        tmp_path / "zed.csv",
        [f"{rated.pk},other-panel,ann1,5", f"{rated.pk},gold-human-eval,zed,3"]
        + ([f"{unrated.pk},gold-human-eval,,7"] if unrated else []),
    )
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command("import_ratings", str(path))
    assert "gold-human-eval did not come from a ratings file" in str(error.value)
    assert "Nothing was imported; the database is unchanged." in str(error.value)
    assert database_snapshot() == before
    assert not Judgment.objects.filter(evaluator=gold, rater="zed").exists()
    assert not Evaluator.objects.filter(name="other-panel").exists()  # nothing of the file


@pytest.mark.parametrize("origin", ["concord", "paper"])
def test_other_origins_are_refused_too(two_meetings, tmp_path, origin):
    Evaluator.objects.create(name="somebody's", kind="metric", origin=origin)
    response = Response.objects.first()
    path = ratings_file(tmp_path / "r.csv", [f"{response.pk},somebody's,a,4"])
    before = database_snapshot()
    with pytest.raises(CommandError, match="did not come from a ratings file"):
        call_command("import_ratings", str(path))
    assert database_snapshot() == before


def test_a_second_file_adds_to_an_evaluator_a_first_file_created(two_meetings, tmp_path):
    first, second = Response.objects.order_by("pk")[:2]
    call_command(
        "import_ratings", str(ratings_file(tmp_path / "a.csv", [f"{first.pk},panel,ann1,4"]))
    )
    panel = Evaluator.objects.get(name="panel")
    assert (panel.origin, panel.kind) == ("ratings_file", "imported")
    call_command(
        "import_ratings",
        str(
            ratings_file(
                tmp_path / "b.csv",
                [
                    f"{first.pk},panel,ann1,4",
                    f"{first.pk},panel,ann2,6",
                    f"{second.pk},panel,ann1,2",
                ],
            )
        ),
    )
    stored = set(
        Judgment.objects.filter(evaluator=panel).values_list("response_id", "rater", "raw_score")
    )
    assert stored == {(first.pk, "ann1", 4), (first.pk, "ann2", 6), (second.pk, "ann1", 2)}
    assert Evaluator.objects.filter(name="panel").count() == 1
    # ... but never overwrites what the first file stored
    before = database_snapshot()
    changed = ratings_file(tmp_path / "c.csv", [f"{first.pk},panel,ann1,9"])
    with pytest.raises(CommandError, match="already holds score 4"):
        call_command("import_ratings", str(changed))
    assert database_snapshot() == before
