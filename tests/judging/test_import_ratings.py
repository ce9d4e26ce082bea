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


def jsonl_file(path, lines):
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"response": RESPONSE, "evaluator": "panel", "rater": "a\\u0000", "score": 4}', "NUL"),
        ('{"response": RESPONSE, "evaluator": "pa\u0000nel", "score": 4}', "a NUL byte"),
        ('{"response": NaN, "evaluator": "panel", "score": 4}', "NaN is not a number"),
        ('{"response": 1e999, "evaluator": "panel", "score": 4}', "too large to be a number"),
        ('{"response": RESPONSE, "evaluator": "panel", "score": Infinity}', "Infinity is not"),
        ('{"response": 99999999999999999999999, "evaluator": "panel", "score": 4}', "whole number"),
        ('{"response": 1.5, "evaluator": "panel", "score": 4}', "response 1.5 is not a whole"),
        ('{"response": true, "evaluator": "panel", "score": 4}', "response True is not a whole"),
        # within the upload limits (corpus.importers.limits)
        ("[" * 100_000 + "]" * 100_000, "nest deeper than that, over the limit of 64 levels"),
        (
            '{"response": RESPONSE, "evaluator": "panel", "rater": "' + "r" * 4_000_001 + '"}',
            "'rater' holds 4,000,001 characters, over the limit of 4,000,000 characters",
        ),
    ],
)
def test_bad_jsonl_ratings_are_line_numbered_and_change_nothing(
    two_meetings, tmp_path, line, message
):
    response = Response.objects.order_by("pk").first()
    good = f'{{"response": {response.pk}, "evaluator": "panel", "rater": "ok", "score": 5}}'
    path = jsonl_file(tmp_path / "r.jsonl", [good, line.replace("RESPONSE", str(response.pk))])
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command("import_ratings", str(path))
    assert "r.jsonl, line 2: " in str(error.value) and message in str(error.value)
    assert database_snapshot() == before


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{pk},panel,a\x00b,4", "line 3: a NUL character (\\u0000) in rater"),
        ("{pk},panel,a,4,extra", "line 3: 1 more cell(s) than the header names"),
        ("{pk},panel,a,nan", "line 3: score 'nan' is not a number"),
        ("9" * 30 + ",panel,a,4", "line 3: response '999"),
    ],
)
def test_bad_csv_ratings_are_line_numbered_and_change_nothing(two_meetings, tmp_path, row, message):
    pk = Response.objects.order_by("pk").first().pk
    path = ratings_file(tmp_path / "r.csv", [f"{pk},panel,ok,5", row.format(pk=pk)])
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command("import_ratings", str(path))
    assert message in str(error.value)
    assert database_snapshot() == before


def test_a_bad_seed_is_refused_with_its_line(two_meetings, tmp_path):
    response = Response.objects.select_related("run__system", "run__dataset", "question").first()
    key = ",".join(
        [
            response.run.system.name,
            response.run.dataset.version,
            response.run.dataset.split,
            response.run.mode,
            response.question.document.external_id,
            response.question.external_id,
        ]
    )
    header = "system,dataset_version,split,mode,meeting,question_id,seed,evaluator,score\n"
    for seed, message in (("abc", "seed 'abc'"), ("1.5", "seed '1.5'"), ("-3", "seed '-3'")):
        path = tmp_path / "s.csv"
        path.write_text(header + f"{key},,panel,4\n{key},{seed},panel,4\n")
        before = database_snapshot()
        with pytest.raises(CommandError, match=f"s.csv, line 3: {message} is not a whole"):
            call_command("import_ratings", str(path))
        assert database_snapshot() == before


def test_a_multi_line_cell_keeps_the_line_numbers_right(two_meetings, tmp_path):
    pk = Response.objects.order_by("pk").first().pk
    path = tmp_path / "m.csv"
    path.write_text(
        f'response,evaluator,rater,score\n{pk},panel,"two\nlines",5\n{pk},panel,x,eleven\n'
    )
    with pytest.raises(CommandError, match="m.csv, line 4: score 'eleven'"):
        call_command("import_ratings", str(path))


def test_a_refused_file_makes_no_default_project_either(two_meetings, tmp_path):
    """Where the default project does not exist yet (renamed here), a refused
    file leaves none made for it: the command says the database is unchanged."""
    from users.models import DEFAULT_PROJECT_SLUG, Project

    Project.objects.filter(slug=DEFAULT_PROJECT_SLUG).update(slug="renamed", name="Renamed")
    pk = Response.objects.order_by("pk").first().pk
    path = ratings_file(tmp_path / "r.csv", [f"{pk},panel,ok,5", f"{pk},panel,a,nan"])
    before = database_snapshot()
    with pytest.raises(CommandError) as error:
        call_command("import_ratings", str(path))
    assert "the database is unchanged" in str(error.value)
    assert database_snapshot() == before
    assert not Project.objects.filter(slug=DEFAULT_PROJECT_SLUG).exists()
