"""LongBench v2 end to end: its data file (one JSON array, read a record at a
time; or JSON Lines) imported, a system on an OpenAI-compatible server (the
fake one) prompted byte for byte as the authors' `pred.py` prompts (its
template file, its replacement chain and its middle truncation, transcribed
below from THUDM/LongBench at 2e00731, MIT licence), the answers scored by
longbench_v2.accuracy. The questions are made up here."""

from __future__ import annotations

import json
import random
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis.report.benchmark_report import benchmark_report
from core.tiktoken_offline import tiktoken_encoding
from corpus.importers.errors import ImportFailure
from corpus.importers.formats import read_benchmark
from corpus.models import Dataset, Document
from generation.models import System
from generation.prompts_longbench_v2 import (
    TEMPLATE_0SHOT,
    longbench_v2_prompt,
    truncate_middle,
)
from generation.runner import GenerationError, create_generation_run, run_generation
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.metrics import longbench_v2
from judging.models import Evaluator, Judgment
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.test_leval_metrics import DATA

TEMPLATE_FILE = DATA.parent / "longbench_v2" / "0shot.txt"


def pred_py_prompt(template, context, item):
    """pred.py's get_pred, the 0-shot branch's prompt line."""
    return (
        template.replace("$DOC$", context.strip())
        .replace("$Q$", item["question"].strip())
        .replace("$C_A$", item["choice_A"].strip())
        .replace("$C_B$", item["choice_B"].strip())
        .replace("$C_C$", item["choice_C"].strip())
        .replace("$C_D$", item["choice_D"].strip())
    )


def pred_py_truncate(prompt, tokenizer, max_len):
    """pred.py's query_llm, the tiktoken branch."""
    input_ids = tokenizer.encode(prompt, disallowed_special=())
    if len(input_ids) > max_len:
        input_ids = input_ids[: max_len // 2] + input_ids[-max_len // 2 :]
        prompt = tokenizer.decode(input_ids)
    return prompt


def items() -> list[dict]:
    shared = "  The committee met on 3 March. It approved the budget of 4.2 million.\n"
    rows = [
        ("q1", shared, "When did the committee meet?", ("3 March", "4 March", "May", "June"), "A"),
        ("q2", shared, "What budget? ", ("1 M", "4.2 million", "none", "$Q$"), "B"),
        ("q3", "Ünïcødé: 東京 $Q$ 会議", "Where?", ("大阪", "京都", "東京", ""), "C"),
    ]  # fmt: skip
    return [
        {
            "_id": identifier,
            "domain": "Single-Document QA",
            "sub_domain": "Governmental",
            "difficulty": "easy" if n % 2 else "hard",
            "length": ("short", "medium", "long")[n % 3],
            "question": question,
            **{f"choice_{letter}": c for letter, c in zip("ABCD", choices, strict=True)},
            "answer": answer,
            "context": context,
        }
        for n, (identifier, context, question, choices, answer) in enumerate(rows)
    ]


def test_the_template_and_prompt_are_pred_pys_byte_for_byte():
    assert TEMPLATE_FILE.read_text(encoding="utf-8") == TEMPLATE_0SHOT
    rng = random.Random(3)
    words = ["$DOC$", "$Q$", "$C_A$", "  ", "\n", "word", "Ünï", "東京", "(A)", "$"]
    for _ in range(2000):
        item = {
            key: " ".join(rng.choices(words, k=rng.randint(0, 6)))
            for key in ("question", "choice_A", "choice_B", "choice_C", "choice_D", "context")
        }
        ours = longbench_v2_prompt(item["context"], item["question"], item)
        assert ours == pred_py_prompt(TEMPLATE_0SHOT, item["context"], item)


@pytest.mark.parametrize("max_len", [1, 2, 7, 50, 51, 400])
def test_the_middle_truncation_is_pred_pys(max_len):
    encoding = tiktoken_encoding("cl100k_base")
    rng = random.Random(max_len)
    for _ in range(50):
        prompt = " ".join(rng.choices(["alpha", "Ünï", "<|endoftext|>", "東京", "\n"], k=300))
        assert truncate_middle(prompt, encoding, max_len) == pred_py_truncate(
            prompt, encoding, max_len
        )
    assert truncate_middle("short", encoding, 400) == "short"


def write_data(tmp_path, records, *, lines=False):
    path = tmp_path / ("data.jsonl" if lines else "data.json")
    if lines:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        text = json.dumps(records, ensure_ascii=False, indent=2)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_data_file_reads_as_an_array_or_as_lines(tmp_path):
    array = read_benchmark("longbench_v2", write_data(tmp_path, items()))
    lines = read_benchmark("longbench_v2", write_data(tmp_path, items(), lines=True))
    assert array.items == lines.items and array.documents == lines.documents
    assert len(array.documents) == 2  # q1 and q2 share their context
    first = array.items[0]
    assert (first.question_id, first.answers, first.task) == ("q1", ("A",), "")
    assert first.prompt["choice_A"] == "3 March" and first.prompt["difficulty"] == "hard"
    assert array.items[1].document_id == first.document_id


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"answer": "E"}, "'answer' must be one of A, B, C, D"),
        ({"_id": "q1"}, "'_id' 'q1' appears before"),
        ({"context": " "}, "'context' must be a non-empty string"),
        ({"choice_E": "x"}, "unknown field(s) choice_E"),
    ],
)
def test_a_bad_question_is_refused_by_its_record(tmp_path, change, error):
    records = items()
    records[1] = {**records[1], **change}
    with pytest.raises(ImportFailure, match=re.escape("data.json, record 2: " + error)):
        read_benchmark("longbench_v2", write_data(tmp_path, records))


def test_a_broken_array_is_refused_after_the_records_read(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(items())[:-40], encoding="utf-8")
    with pytest.raises(ImportFailure, match=r"after record 2: not a readable JSON array"):
        read_benchmark("longbench_v2", path)
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ImportFailure, match="record 1: expected a JSON object"):
        read_benchmark("longbench_v2", path)


@pytest.mark.django_db(transaction=True)
def test_longbench_v2_is_prompted_as_pred_py_and_scored_by_its_accuracy(tmp_path):
    path = write_data(tmp_path, items())
    call_command("import_benchmark", str(path), "--format", "longbench_v2", stdout=None)
    dataset = Dataset.objects.get(benchmark__slug="longbench_v2")
    assert (dataset.split, dataset.task, Document.objects.count()) == ("test", "", 2)
    config = {"backend": "openai", "base_url": "", "model": "m", "server": "vllm"}
    with FakeOpenAI() as server:
        config["base_url"] = server.url
        system = System.objects.create(name="lb", model_name="m", backend="openai", config=config)
        run = run_generation(create_generation_run(system, dataset, "st").pk)
        sent = list(server.requests)
    assert (run.status, run.done) == ("done", 3)
    expected = {pred_py_prompt(TEMPLATE_0SHOT, r["context"], r) for r in items()}
    assert {request["messages"][0]["content"] for request in sent} == expected
    assert all(len(r["messages"]) == 1 and r["max_tokens"] == 128 for r in sent)
    with pytest.raises(GenerationError, match="asks each question alone"):
        create_generation_run(system, dataset, "mt")
    ensure_metric_evaluators()
    accuracy = Evaluator.objects.get(name="metric: longbench_v2.accuracy")
    scored = judge_run(create_judging_run(accuracy, dataset, "st").pk)
    assert (scored.status, scored.done) == ("done", 3)
    assert Judgment.objects.filter(evaluator=accuracy).count() == 3
    with pytest.raises(CommandError, match="'answer' must be one of"):
        bad = items()
        bad[0]["answer"] = "(A)"
        call_command("import_benchmark", str(write_data(tmp_path, bad)), "--format", "longbench_v2")


@pytest.mark.django_db
def test_the_results_export_is_what_result_py_reads_and_the_report_shows_its_table(
    tmp_path, client, researcher
):
    from tests.judging.test_longbench_v2 import extract_answer, result_row

    path = write_data(tmp_path, items())
    call_command("import_benchmark", str(path), "--format", "longbench_v2", stdout=None)
    answers = {"q1": "  The correct answer is (A)\n", "q2": "**The correct answer is C**", "q3": ""}
    records = [
        {"system": "my model", "document_id": d.question.document.external_id,
         "question_id": d.question.external_id, "response": answers[d.question.external_id]}
        for d in Dataset.objects.get().question_texts.select_related("question__document")
    ]  # fmt: skip
    file = tmp_path / "answers.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(file), "--benchmark", "longbench_v2", "--split", "test",
        stdout=None,
    )  # fmt: skip
    out = tmp_path / "out"
    out.mkdir()
    run = Dataset.objects.get().runs.get()
    call_command("export_leaderboard", "--runs", str(run.pk), "--output", str(out), stdout=None)
    lines = [
        json.loads(line)
        for line in (out / "results" / "my-model.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    by_id = {item["_id"]: item for item in items()}
    for line in lines:
        item = by_id[line["_id"]]
        # pred.py's line: the item's fields, the context's first 1,000 characters
        assert {k: line[k] for k in item if k != "context"} == {
            k: v for k, v in item.items() if k != "context"
        }
        assert line["context"] == item["context"][:1000]
        assert line["response"] == answers[line["_id"]].strip()
        assert line["pred"] == extract_answer(line["response"])
        assert line["judge"] == (line["pred"] == item["answer"])
    assert [line["judge"] for line in lines] == [True, False, False]
    assert result_row(lines)[0] == 33.3
    # scored in Concord, the benchmark report's table is result.py's on the export
    ensure_metric_evaluators()
    accuracy = Evaluator.objects.get(name="metric: longbench_v2.accuracy")
    judge_run(create_judging_run(accuracy, Dataset.objects.get(), "st").pk)
    ((item,),) = [benchmark_report("longbench_v2", "test").breakdown]
    official = dict(zip(longbench_v2.BREAKDOWN, result_row(lines), strict=True))
    assert item == {"system": "my model", "metric": "longbench_v2.accuracy", **official}
    client.force_login(researcher)
    page = client.get("/analysis/benchmark/longbench_v2/?split=test").content.decode()
    assert 'id="breakdown"' in page and "<td>33.3</td>" in page
