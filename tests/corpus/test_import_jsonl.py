import json

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Dataset, Document, Question, QuestionText
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db

DOC = "Alice opened the meeting. Bob reported that the model scored 61.2 on the test set."


def write_lines(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


@pytest.fixture
def good_file(tmp_path):
    return write_lines(
        tmp_path / "bench.jsonl",
        [
            {
                "document_id": "doc-1",
                "document": DOC,
                "question": "Who opened the meeting?",
                "answer": "Alice",
                "question_type": "who",
                "answer_position": "B",
            },
            {
                "document_id": "doc-1",
                "question_id": "score",
                "question": "What did the model score?",
                "answers": ["61.2", "61.2 points"],
            },
            {"document_id": "doc-2", "document": "Short.", "question": "Q?", "answer": "A"},
        ],
    )


def test_import_and_reimport(good_file, capsys):
    call_command("import_jsonl", str(good_file), "--benchmark", "toy-qa", "--split", "dev")
    assert Dataset.objects.filter(benchmark__slug="toy-qa", split="dev", version="qa").exists()
    assert Document.objects.get(external_id="doc-1").word_count == len(DOC.split())
    first, second = Question.objects.filter(document__external_id="doc-1").order_by("order")
    assert (first.external_id, first.question_type, first.answer_position) == ("1", "who", "B")
    assert second.external_id == "score"
    text = QuestionText.objects.get(question=second)
    assert (text.reference_answer, text.alternative_answers) == ("61.2", ["61.2 points"])
    capsys.readouterr()
    before = database_snapshot()
    call_command("import_jsonl", str(good_file), "--benchmark", "toy-qa", "--split", "dev")
    assert "Nothing changed" in capsys.readouterr().out
    assert database_snapshot() == before


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        ({"document_id": "doc-9", "question": "Q?", "answer": "A"}, "must hold its text"),
        (
            {"document_id": "doc-1", "document": "Other text", "question": "Q?", "answer": "A"},
            "different text",
        ),
        (
            {"document_id": "doc-1", "question_id": "1", "question": "Q?", "answer": "A"},
            "appears twice",
        ),
        ({"document_id": "doc-1", "question": "Q?"}, "either 'answer'"),
        ({"document_id": "doc-1", "question": "Q?", "answers": []}, "non-empty strings"),
        (
            {"document_id": "doc-1", "question": "Q?", "answer": "A", "question_type": "why"},
            "question_type 'why'",
        ),
        ({"document_id": "doc-1", "question": "Q?", "answer": "A", "extra": 1}, "unknown field"),
        ("[1, 2]", "expected a JSON object"),
        # what the database cannot store, or would store as no id
        (
            {"document_id": "doc-1", "question": "Who\u0000?", "answer": "A"},
            "a NUL character (\\u0000) in question",
        ),
        (
            {"document_id": "doc-1", "question": "Who?", "answers": ["A", "B\u0000"]},
            "a NUL character (\\u0000) in answers[1]",
        ),
        (
            {"document_id": "doc-\u0000", "document": "x", "question": "Q?", "answer": "A"},
            "NUL character (\\u0000) in document_id",
        ),
        (r'{"document_id": "doc-1", "question": "Q\u0000?", "answer": "A"}', "NUL character"),
        ('{"document_id": "doc-1", "question": "Q\x00?", "answer": "A"}', "a NUL byte"),
        ('{"document_id": NaN, "document": "x", "question": "Q?", "answer": "A"}', "NaN is not"),
        ('{"document_id": 1e999, "document": "x", "question": "Q?", "answer": "A"}', "too large"),
        (
            '{"document_id": "doc-1", "question_id": -Infinity, "question": "Q?", "answer": "A"}',
            "-Infinity is not a number JSON allows",
        ),
        (
            {"document_id": "doc-1", "question_id": 2.5, "question": "Q?", "answer": "A"},
            "'question_id' must be a non-empty string or a whole number",
        ),
        (
            {"document_id": True, "document": "x", "question": "Q?", "answer": "A"},
            "'document_id' must be a non-empty string or a whole number",
        ),
        ('{"document_id": "doc-1", "question_id": 1' + "0" * 5000 + "}", "not valid JSON"),
    ],
)
def test_bad_lines_are_refused_and_nothing_changes(tmp_path, good_file, line, message):
    call_command("import_jsonl", str(good_file), "--benchmark", "toy-qa")
    first = {"document_id": "doc-1", "document": DOC, "question": "Who?", "answer": "Alice"}
    bad = write_lines(tmp_path / "bad.jsonl", [first, line])
    before = database_snapshot()
    with pytest.raises(CommandError, match="line 2") as error:
        call_command("import_jsonl", str(bad), "--benchmark", "toy-qa")
    assert message in str(error.value)
    assert database_snapshot() == before


def test_whole_number_ids_are_kept_as_text(tmp_path):
    rows = [
        {"document_id": 7, "document": DOC, "question_id": 3.0, "question": "Q?", "answer": "A"}
    ]
    call_command("import_jsonl", str(write_lines(tmp_path / "n.jsonl", rows)), "--benchmark", "n")
    assert Question.objects.get(document__external_id="7").external_id == "3"


def test_line_numbers_count_newlines_only(tmp_path):
    """A JSON text may hold U+2028 or U+0085, which str.splitlines() would also cut at."""
    first = {"document_id": "doc-1", "document": DOC + "\u2028more\x85", "question": "Who?"}
    first["answer"] = "Alice"
    line_one = json.dumps(first, ensure_ascii=False)
    assert "\u2028" in line_one
    path = tmp_path / "sep.jsonl"
    path.write_text(line_one + "\n" + '{"document_id": "doc-1", "question": "Q?"}\n')
    before = database_snapshot()
    with pytest.raises(CommandError, match="line 2: give either 'answer'"):
        call_command("import_jsonl", str(path), "--benchmark", "toy-qa")
    assert database_snapshot() == before


def test_bad_options(good_file, tmp_path):
    with pytest.raises(CommandError, match="--dataset-version .chat."):
        call_command(
            "import_jsonl", str(good_file), "--benchmark", "x", "--dataset-version", "chat"
        )
    with pytest.raises(CommandError, match="--benchmark 'Bad Name'"):
        call_command("import_jsonl", str(good_file), "--benchmark", "Bad Name")
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_jsonl", str(tmp_path / "none.jsonl"), "--benchmark", "x")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CommandError, match="no questions"):
        call_command("import_jsonl", str(tmp_path / "empty.jsonl"), "--benchmark", "x")


def test_document_cannot_change_split(good_file):
    call_command("import_jsonl", str(good_file), "--benchmark", "toy-qa", "--split", "dev")
    before = database_snapshot()
    with pytest.raises(
        CommandError, match="bench.jsonl: document doc-1 is already stored in split dev"
    ):
        call_command("import_jsonl", str(good_file), "--benchmark", "toy-qa", "--split", "test")
    assert database_snapshot() == before
