"""Every kind of bad input aborts the import with a message naming the file and
the problem, and leaves the database exactly as it was."""

import json
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from corpus.importers import ImportFailure
from judging import importing
from judging.importing import import_elitr_bench
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated(synthetic_source, tmp_path):
    """A database that already holds an import, and a copy of its source to break."""
    import_elitr_bench(synthetic_source, with_responses=True)
    broken = tmp_path / "broken"
    shutil.copytree(synthetic_source, broken)
    return broken


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def assert_refused(source, *expected_fragments, **options):
    before = database_snapshot()
    with pytest.raises(ImportFailure) as failure:
        import_elitr_bench(source, with_responses=True, **options)
    for fragment in expected_fragments:
        assert fragment in str(failure.value)
    assert database_snapshot() == before
    return failure.value


def test_malformed_json(populated):
    (populated / "data" / "elitr-bench-qa_test2.json").write_text(
        '{"split": "test2", "meetings": ['
    )
    assert_refused(populated, "elitr-bench-qa_test2.json", "not valid JSON")


def test_missing_transcript(populated):
    shutil.rmtree(populated / "ELITR-English-test")
    assert_refused(
        populated, "No transcript for meeting meeting_en_synthetic_001", "transcript_MAN"
    )


def test_missing_transcript_names_the_question_file_that_asked_for_it(populated):
    """A meeting only the conv file names: the message names that file (it used to
    name the first question file of the split, which never mentions the meeting)."""

    def add_meeting(data):
        extra = json.loads(json.dumps(data["meetings"][0]))
        extra["id"] = "meeting_en_synthetic_777"
        data["meetings"].append(extra)

    edit_json(populated / "data" / "elitr-bench-conv_test2.json", add_meeting)
    failure = assert_refused(
        populated,
        "No transcript for meeting meeting_en_synthetic_777, which ",
        "elitr-bench-conv_test2.json asked for",
        "meeting_en_synthetic_777/transcript_MAN*.txt",
        languages=("en",),
    )
    assert "elitr-bench-qa_test2.json" not in str(failure)


def test_a_nul_character_in_a_question_file_names_the_file_and_the_place(populated):
    edit_json(
        populated / "data" / "elitr-bench-qa_test2.json",
        lambda d: d["meetings"][0]["questions"][1].update(question="Who\u0000 spoke?"),
    )
    assert_refused(
        populated,
        "elitr-bench-qa_test2.json: a NUL character (\\u0000) in meetings[0].questions[1].question",
    )


def test_a_nul_character_in_a_response_file_names_the_file(populated):
    path = populated / "generated-responses" / "elitr-bench-qa_test2_st_all-eval.json"
    edit_json(
        path,
        lambda d: d["meetings"][0]["questions"][0]["generated-responses"][0].update(
            {"model": "GPT\u0000-4"}
        ),
    )
    assert_refused(
        populated,
        "elitr-bench-qa_test2_st_all-eval.json: a NUL character",
        "meetings[0].questions[0].generated-responses[0].model",
    )


def test_a_nul_character_in_a_transcript_names_the_file_and_the_line(populated):
    transcript = next((populated / "ELITR-English-test").rglob("transcript_MAN*.txt"))
    lines = transcript.read_text().splitlines()
    lines[2] = lines[2] + "\x00"
    transcript.write_text("\n".join(lines) + "\n")
    assert_refused(populated, f"{transcript.name}, line 3: a NUL character")


def test_reordered_questions_name_the_file(populated):
    def swap(data):
        questions = data["meetings"][0]["questions"]
        questions[0], questions[1] = questions[1], questions[0]

    for path in (populated / "data").glob("*.json"):
        edit_json(path, swap)
    for path in (populated / "czech").glob("*.json"):
        edit_json(path, swap)
    assert_refused(populated, "elitr-bench-qa_test2.json: meeting ", "reordering stored questions")


def test_responses_for_a_meeting_that_does_not_exist(populated):
    path = populated / "generated-responses" / "elitr-bench-qa_test2_st_all-eval.json"
    edit_json(path, lambda d: d["meetings"][0].update(id="meeting_en_test2_999"))
    assert_refused(
        path.parent.parent, "elitr-bench-qa_test2_st_all-eval.json", "meeting_en_test2_999"
    )


def test_response_for_a_question_that_does_not_exist(populated):
    path = populated / "generated-responses" / "elitr-bench-qa_test2_st_all-eval.json"
    edit_json(path, lambda d: d["meetings"][0]["questions"][0].update(id="77"))
    assert_refused(populated, "question 77: no such question")


def test_unknown_question_type(populated):
    path = populated / "data" / "elitr-bench-conv_test2.json"
    edit_json(path, lambda d: d["meetings"][0]["questions"][2].update({"question-type": "why"}))
    assert_refused(populated, "elitr-bench-conv_test2.json", "unknown question-type 'why'")


@pytest.mark.parametrize("bad_score", ["11", "0", "n/a", "", None])
def test_score_out_of_range_or_not_a_number(populated, bad_score):
    path = populated / "generated-responses" / "elitr-bench-qa_test2_st_all-eval.json"
    edit_json(
        path,
        lambda d: d["meetings"][0]["questions"][1]["generated-responses"][0].update(
            {"gold-human-eval_score": bad_score}
        ),
    )
    assert_refused(populated, "gold-human-eval_score", "not a number from 1 to 10")


def test_split_in_file_contradicts_its_name(populated):
    edit_json(populated / "data" / "elitr-bench-qa_test2.json", lambda d: d.update(split="dev"))
    assert_refused(populated, "the file says split 'dev', its name says 'test2'")


def test_conflicting_copies_of_a_response(populated):
    original = populated / "generated-responses" / "elitr-bench-qa_test2_st_all-eval.json"
    copy = populated / "generated-responses" / "elitr-bench-qa_test2_st_gpt-4-eval.json"
    shutil.copy(original, copy)
    edit_json(
        copy,
        lambda d: d["meetings"][0]["questions"][0]["generated-responses"][0].update(
            {"generated-response": "Something else."}
        ),
    )
    assert_refused(populated, "differs from the one in")


def test_missing_language(populated):
    shutil.rmtree(populated / "czech")
    assert_refused(populated, "no cs qa question file found")


def test_wrong_password_on_the_real_archives(elitr_data):
    failure = assert_refused(elitr_data, "wrong password", password="not-utter")
    assert ".zip!" in str(failure)


def test_failure_while_writing_rolls_everything_back(populated, monkeypatch):
    """A failure after the corpus and responses were written still leaves nothing behind."""
    edit_json(
        populated / "data" / "elitr-bench-qa_test2.json",
        lambda d: d["meetings"][0]["questions"][0].update(question="A new wording?"),
    )

    def explode(*args, **kwargs):
        raise ImportFailure("simulated failure while writing judgments")

    monkeypatch.setattr(importing, "import_paper_scores", explode)
    assert_refused(populated, "simulated failure")


def test_command_reports_failure_and_unchanged_database(populated):
    (populated / "data" / "elitr-bench-qa_test2.json").write_text("[]")
    before = database_snapshot()
    with pytest.raises(CommandError, match="expected an object with a 'meetings' list"):
        call_command("import_elitr_bench", str(populated))
    assert database_snapshot() == before


def test_unknown_version_is_refused(synthetic_source):
    with pytest.raises(CommandError, match="Unknown version"):
        call_command("import_elitr_bench", str(synthetic_source), "--versions", "qa,chat")


def test_changed_source_updates_what_changed(populated):
    edit_json(
        populated / "data" / "elitr-bench-qa_test2.json",
        lambda d: d["meetings"][0]["questions"][0].update(question="Who took part in the meeting?"),
    )
    summary = import_elitr_bench(populated, with_responses=True)
    assert summary.counts["question texts"].updated == 1
    assert summary.counts["question texts"].created == 0
    assert summary.counts["judgments"].changed == 0
