"""Benchmark formats as plug-ins: L-Eval's task files and ZeroSCROLLS' rows
(JSON Lines and Parquet) import as their authors publish them, the generic
format from JSON Lines, CSV and Parquet; anything else is a line-numbered
error and the database stays as it was; a second import changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers.formats import read_benchmark
from corpus.importers.samples import write_leval_tasks, write_zeroscrolls_task, zeroscrolls_row
from corpus.models import Benchmark, Dataset, Document, Question, QuestionText

pytestmark = pytest.mark.django_db


def snapshot() -> tuple:
    return (
        list(Benchmark.objects.values_list("slug", "format").order_by("slug")),
        list(Dataset.objects.values_list("split", "task").order_by("pk")),
        Document.objects.count(),
        list(QuestionText.objects.values_list("text", "reference_answer", "prompt").order_by("pk")),
    )


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_leval_task_files_import_as_published(tmp_path, capsys):
    quality, reports = write_leval_tasks(tmp_path / "leval")
    call_command("import_benchmark", str(quality), "--format", "leval")
    call_command("import_benchmark", str(reports), "--format", "leval")
    benchmark = Benchmark.objects.get(slug="leval")
    assert benchmark.format == "leval" and benchmark.name == "L-Eval"
    tasks = dict(Dataset.objects.filter(benchmark=benchmark).values_list("task", "split"))
    assert tasks == {"quality": "test", "report_qa": "test"}
    story = Document.objects.get(benchmark=benchmark, external_id="quality-1")
    assert story.text.startswith("THE NIGHT SHIFT AT HARROW RIDGE")
    texts = QuestionText.objects.filter(dataset__task="quality").order_by(
        "question__document__external_id", "question__order"
    )
    assert texts.count() == 3
    first = texts[0]
    assert first.reference_answer == "(B) The motor had failed and the sky was clear."
    assert first.text.startswith("Why did Mira turn the dome gear by hand?\n\n (A)")
    assert first.prompt == {"evaluation": "exam", "source": "quality_raw"}
    evaluations = QuestionText.objects.filter(dataset__task="report_qa").values_list(
        "prompt__evaluation", flat=True
    )
    assert sorted(evaluations) == ["f1", "f1", "rouge", "rouge"]
    before = snapshot()
    capsys.readouterr()
    call_command("import_benchmark", str(quality), "--format", "leval")
    assert "Nothing changed" in capsys.readouterr().out
    assert snapshot() == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"instructions": ["a", "b"], "outputs": ["x"]}, "2 instructions but 1 outputs"),
        ({"evaluation": "bleu"}, "'evaluation' 'bleu' is not one of exam, f1, rouge"),
        ({"answer": "x"}, "unknown field(s) answer"),
        ({"input": ""}, "'input' must be a non-empty string"),
        ({"outputs": [3]}, "'outputs' must be a list of strings"),
        ({"instructions": []}, "no instructions"),
    ],
)
def test_a_bad_leval_line_is_named_and_nothing_changes(tmp_path, change, message):
    quality, _ = write_leval_tasks(tmp_path / "leval")
    call_command("import_benchmark", str(quality), "--format", "leval")
    before = snapshot()
    lines = [json.loads(line) for line in quality.read_text().splitlines()]
    lines.append(lines[0] | change)
    with pytest.raises(CommandError) as refused:
        call_command("import_benchmark", str(write_lines(quality, lines)), "--format", "leval")
    assert f"quality.jsonl, line 3: {message}" in str(refused.value)
    assert "the database is unchanged" in str(refused.value)
    assert snapshot() == before


def test_zeroscrolls_rows_keep_the_whole_prompt_and_merge_references(tmp_path):
    path = write_zeroscrolls_task(tmp_path / "zs")
    call_command("import_benchmark", str(path), "--format", "zeroscrolls")
    dataset = Dataset.objects.get(benchmark__slug="zeroscrolls")
    assert (dataset.task, dataset.split) == ("qasper", "validation")
    assert Document.objects.filter(benchmark__slug="zeroscrolls").count() == 2  # shared by text
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for text in QuestionText.objects.filter(dataset=dataset).select_related("question__document"):
        row = next(r for r in rows if r["id"] == text.question.external_id)
        parts = text.prompt
        rebuilt = (
            parts["before_document"]
            + text.question.document.text
            + parts["between"]
            + text.text
            + parts["after_query"]
        )
        assert rebuilt == row["input"]  # the authors' prompt, exactly
        assert parts["truncation_separator"] == row["truncation_seperator"]
    twice = QuestionText.objects.get(dataset=dataset, question__external_id="q3")
    assert (twice.reference_answer, twice.alternative_answers) == ("214", ["214 nights"])


def test_zeroscrolls_parquet_equals_its_json_lines(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = write_zeroscrolls_task(tmp_path / "zs")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    parquet = tmp_path / "parquet" / "qasper.parquet"
    parquet.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    from_json = read_benchmark("zeroscrolls", path, benchmark="zeroscrolls")
    from_parquet = read_benchmark("zeroscrolls", parquet, benchmark="zeroscrolls")
    assert from_parquet.documents == from_json.documents
    assert [(i.question_id, i.question, i.answers, i.prompt) for i in from_parquet.items] == [
        (i.question_id, i.question, i.answers, i.prompt) for i in from_json.items
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"query_start_index": 5}, "the indices do not cut 'input' in order"),
        ({"document_end_index": 10**6}, "the indices do not cut 'input' in order"),
        ({"query_end_index": 2.5}, "'query_end_index' must be a whole number, not 2.5"),
        ({"output": ["a"]}, "'output' must be a string"),
        ({"question": "x"}, "unknown field(s) question"),
        ({"input": "other\x00"}, "a NUL character"),
    ],
)
def test_a_bad_zeroscrolls_row_is_named(tmp_path, change, message):
    row = zeroscrolls_row("q1", "d1", "A document.", "A query?", "An answer")
    path = write_lines(tmp_path / "qasper.jsonl", [row, row | {"id": "q2"} | change])
    with pytest.raises(CommandError) as refused:
        call_command("import_benchmark", str(path), "--format", "zeroscrolls")
    assert f"qasper.jsonl, line 2: {message}" in str(refused.value)
    assert not Benchmark.objects.filter(slug="zeroscrolls").exists()


def test_a_nan_in_a_parquet_file_is_refused_with_its_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        # row 1's null is no field (the file is read a row at a time: row 1 is checked first)
        {"document_id": "d", "document": "Text.", "question": "Q?", "answer": "A", "score": None},
        {"document_id": "d", "question": "Q2?", "answer": "B", "score": float("nan")},
    ]
    path = tmp_path / "bench.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(CommandError, match=r"bench.parquet, row 2: score is nan"):
        call_command("import_jsonl", str(path), "--benchmark", "mine")


def test_the_generic_format_reads_csv_and_parquet_as_json_lines(tmp_path):
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [
        {"document_id": "r1", "document": "The report.", "question": "Who?", "answer": "Ann"},
        {"document_id": "r1", "question": "When?", "answers": ["May", "in May"], "task": "dates"},
    ]
    jsonl = write_lines(tmp_path / "b.jsonl", records)
    with (tmp_path / "b.csv").open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(
            out, ["document_id", "document", "question", "answer", "answers", "task"]
        )
        writer.writeheader()
        for record in records:
            writer.writerow(
                {k: json.dumps(v) if isinstance(v, list) else v for k, v in record.items()}
            )
    columns = sorted({key for record in records for key in record})  # nulls where a record has none
    table = pa.Table.from_pylist([{key: r.get(key) for key in columns} for r in records])
    pq.write_table(table, tmp_path / "b.parquet")
    bundles = [
        read_benchmark("generic", tmp_path / name, benchmark="mine")
        for name in ("b.jsonl", "b.csv", "b.parquet")
    ]
    shapes = [
        (b.documents, [(i.task, i.question_id, i.question, i.answers) for i in b.items])
        for b in bundles
    ]
    assert shapes[0] == shapes[1] == shapes[2]
    assert shapes[0][1][1] == ("dates", "2", "When?", ("May", "in May"))
    call_command("import_jsonl", str(jsonl), "--benchmark", "mine")
    assert sorted(Dataset.objects.values_list("task", flat=True)) == ["", "dates"]
    assert Question.objects.filter(document__external_id="r1").count() == 2


def test_a_benchmark_keeps_its_format(tmp_path):
    quality, _ = write_leval_tasks(tmp_path / "leval")
    call_command("import_benchmark", str(quality), "--format", "leval", "--benchmark", "mine")
    generic = write_lines(
        tmp_path / "g.jsonl",
        [{"document_id": "x", "document": "T.", "question": "Q?", "answer": "A"}],
    )
    before = snapshot()
    with pytest.raises(CommandError, match="benchmark mine holds L-Eval data"):
        call_command("import_jsonl", str(generic), "--benchmark", "mine")
    assert snapshot() == before
