"""BABILong end to end: the Hub's files in both layouts imported as a task per
length with the authors' targets, asked of an OpenAI-compatible server as
run_model_on_babilong.py asks (prompts.py's get_formatted_input with the
task's DEFAULT_PROMPTS, byte for byte; one user message; 20 new tokens),
framed for a local model by its template, scored by the official accuracy
and exported as the script's CSV, which collect_results.py's logic scores
the same."""

from __future__ import annotations

import importlib.util
import json
import random

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers.errors import ImportFailure
from corpus.importers.formats import read_benchmark
from corpus.models import Dataset, QuestionText
from generation.local_prompts import framed as _framed
from generation.models import System
from generation.prompts_babilong import MAX_NEW_TOKENS, babilong_prompt, default_prompts
from generation.runner import GenerationError, create_generation_run, run_generation
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator, Judgment
from tests.conftest import database_snapshot
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.test_babilong_metrics import DATA, official_accuracy


def official_prompts():
    spec = importlib.util.spec_from_file_location(
        "babilong_official_prompts", DATA / "official" / "prompts.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OFFICIAL = official_prompts()
ROWS = {
    ("qa1", "0k"): [
        {"input": "Mary went to the garden. John moved to the office. ",
         "question": "Where is Mary?", "target": "garden"},
        {"input": "Sandra travelled to the kitchen.", "question": "Where is Sandra?",
         "target": "kitchen"},
    ],
    ("qa2", "4k"): [
        {"input": "  It was a dark {night}. Mary got the milk. Mary went to the hallway.\n",
         "question": "Where is the milk?", "target": "hallway"},
    ],
}  # fmt: skip


def write_hub_folder(root, array: bool = False) -> None:
    """RMT-team/babilong's layout: data/<task>/<length>.json."""
    for (task, length), rows in ROWS.items():
        path = root / "data" / task / f"{length}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        if array:
            path.write_text(json.dumps(rows), encoding="utf-8")
        else:
            path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_the_prompts_are_the_authors_byte_for_byte():
    assert default_prompts() == {
        task: {k: parts[k] for k in ("instruction", "examples", "post_prompt")}
        for task, parts in OFFICIAL.DEFAULT_PROMPTS.items()
    }
    rng = random.Random(7)
    pieces = ["Mary went to the garden. ", "{braces} ", "  ", "\n", "Straße 答案 ", "</context>"]
    for task in OFFICIAL.DEFAULT_PROMPTS:
        for _ in range(25):
            context = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
            question = rng.choice(["Where is Mary?", "What is {x}?", " Is John in the office? "])
            parts = OFFICIAL.DEFAULT_PROMPTS[task]
            expected = OFFICIAL.get_formatted_input(
                context, question, parts["examples"], parts["instruction"], parts["post_prompt"],
                template=OFFICIAL.DEFAULT_TEMPLATE,
            )  # fmt: skip
            assert babilong_prompt(context, question, f"{task}-4k") == expected


@pytest.mark.django_db(transaction=True)
def test_babilong_is_imported_asked_scored_and_exported_as_its_authors_do(tmp_path):
    write_hub_folder(tmp_path / "babilong")
    folder = tmp_path / "babilong"
    call_command("import_benchmark", str(folder), "--format", "babilong", stdout=None)
    datasets = Dataset.objects.filter(benchmark__slug="babilong").order_by("task")
    assert [(d.split, d.task) for d in datasets] == [("test", "qa1-0k"), ("test", "qa2-4k")]
    dataset = datasets.get(task="qa1-0k")
    texts = list(
        QuestionText.objects.filter(dataset=dataset)
        .select_related("question__document")
        .order_by("question__external_id")
    )
    rows = ROWS[("qa1", "0k")]
    for text, row in zip(texts, rows, strict=True):
        assert text.question.document.text == row["input"]
        assert (text.text, text.reference_answer) == (row["question"], row["target"])
        assert text.prompt == {"babilong_task": "qa1", "length": "0k", "tokens": 0}
    assert QuestionText.objects.get(dataset__task="qa2-4k").prompt["tokens"] == 4000

    config = {"backend": "openai", "base_url": "", "model": "m", "server": "vllm"}
    with FakeOpenAI() as server:
        config["base_url"] = server.url
        system = System.objects.create(
            name="my model", model_name="m", backend="openai", config=config
        )
        runs = {d.task: run_generation(create_generation_run(system, d, "st").pk) for d in datasets}
        sent = list(server.requests)
    assert all(r.status == "done" for r in runs.values())
    parts = OFFICIAL.DEFAULT_PROMPTS
    expected = {
        OFFICIAL.get_formatted_input(
            row["input"], row["question"], parts[task]["examples"], parts[task]["instruction"],
            parts[task]["post_prompt"],
        )
        for (task, _), task_rows in ROWS.items()
        for row in task_rows
    }  # fmt: skip
    assert {m["messages"][0]["content"] for m in sent} == expected
    assert all(len(m["messages"]) == 1 and m["max_tokens"] == MAX_NEW_TOKENS for m in sent)
    with pytest.raises(GenerationError, match="asks each question alone"):
        create_generation_run(system, dataset, "mt")

    # answers made elsewhere: right, a label the question names beside the right one, empty
    answers = ["The most recent location of Mary is garden.", ""]
    records = [
        {"system": "made elsewhere", "document_id": t.question.document.external_id,
         "question_id": t.question.external_id, "response": a}
        for t, a in zip(texts, answers, strict=True)
    ]  # fmt: skip
    file = tmp_path / "answers.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(file), "--benchmark", "babilong", "--split", "test",
        "--task", "qa1-0k", stdout=None,
    )  # fmt: skip
    ensure_metric_evaluators()
    accuracy = Evaluator.objects.get(name="metric: babilong.accuracy")
    scored = judge_run(create_judging_run(accuracy, dataset, "st").pk)
    assert (scored.status, scored.done) == ("done", 4)
    elsewhere = dataset.runs.get(system__name="made elsewhere")
    judged = Judgment.objects.filter(evaluator=accuracy, response__run=elsewhere)
    stored = [judged.get(response__question=t.question).raw_score for t in texts]
    assert stored == [1.0, 0.0]

    out = tmp_path / "out"
    out.mkdir()
    call_command(
        "export_leaderboard", "--runs", f"{runs['qa1-0k'].pk},{elsewhere.pk}",
        "--output", str(out), stdout=None,
    )  # fmt: skip
    # the server's chat template framed the prompt; an imported system's config says nothing
    name = "qa1_0k_instruction_yes_examples_yes_post_prompt_yes_chat_template_{}_system_prompt_no"
    exported = out / "made-elsewhere" / f"{name.format('no')}.csv"
    table = pd.read_csv(exported)
    assert list(table.columns) == ["Unnamed: 0", "target", "output", "question"]
    assert list(table["target"]) == [r["target"] for r in rows]
    assert list(table["question"]) == [r["question"] for r in rows]
    assert (out / "my-model" / f"{name.format('yes')}.csv").is_file()
    # collect_results.py's logic on the exported file is the task score of Concord's values
    score, _ = official_accuracy(exported, "qa1")
    assert score == 50.0 == accuracy_plugin().task_score(stored, [])


def accuracy_plugin():
    from judging.evaluators import metric_class

    return metric_class("babilong.accuracy")()


@pytest.mark.django_db
def test_the_sample_layout_in_parquet_and_a_json_array_read_the_same(tmp_path):
    write_hub_folder(tmp_path / "array", array=True)
    samples = tmp_path / "babilong-1k-samples"
    for (task, length), rows in ROWS.items():
        (samples / length).mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_parquet(samples / length / f"{task}-00000-of-00001.parquet")
    loose = tmp_path / "qa2_4k.jsonl"
    loose.write_text("".join(json.dumps(r) + "\n" for r in ROWS[("qa2", "4k")]))
    bundles = [read_benchmark("babilong", tmp_path / "array"), read_benchmark("babilong", samples)]
    shapes = [
        sorted((i.task, i.question, i.answers, tuple(sorted(i.prompt.items()))) for i in b.items)
        for b in bundles
    ]
    assert shapes[0] == shapes[1] and len(shapes[0]) == 3
    assert [i.task for i in read_benchmark("babilong", loose).items] == ["qa2-4k"]
    named = read_benchmark("babilong", loose, task="qa3-1M")
    assert named.items[0].task == "qa3-1m" and named.items[0].prompt["length"] == "1M"


@pytest.mark.django_db
def test_a_local_model_gets_the_prompt_under_its_template():
    class Config:
        chat_template = "llama-2"

    text = babilong_prompt("Mary went to the garden.", "Where is Mary?", "qa1-0k")
    assert _framed(Config(), None, text) == f"[INST] {text} [/INST]"


@pytest.mark.django_db
def test_a_bad_file_or_folder_is_refused_and_nothing_is_stored(tmp_path):
    write_hub_folder(tmp_path / "good")
    before = database_snapshot()
    loose = tmp_path / "rows.jsonl"
    loose.write_text(json.dumps(ROWS[("qa1", "0k")][0]) + "\n")
    with pytest.raises(CommandError, match="give them"):
        call_command("import_benchmark", str(loose), "--format", "babilong")
    with pytest.raises(CommandError, match="BABILong's task and its length"):
        call_command("import_benchmark", str(loose), "--format", "babilong", "--task", "qa21-4k")
    with pytest.raises(CommandError, match="BABILong's task and its length"):
        call_command("import_benchmark", str(loose), "--format", "babilong", "--task", "qa1-3k")
    row = ROWS[("qa1", "0k")][0]
    for change, error in [
        ({"target": ""}, "'target' must be a non-empty string"),
        ({"target": ["garden"]}, "'target' must be a non-empty string"),
        ({"question": None}, "'question' must be a non-empty string"),
        ({"input": ""}, "'input' must be a non-empty string"),
        ({"answer": "garden"}, "unknown field"),
    ]:
        bad = tmp_path / "bad" / "data" / "qa1" / "0k.json"
        bad.parent.mkdir(parents=True, exist_ok=True)
        bad.write_text(json.dumps(row) + "\n" + json.dumps({**row, **change}) + "\n")
        with pytest.raises(CommandError, match=error):
            call_command("import_benchmark", str(tmp_path / "bad"), "--format", "babilong")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.json").write_text("[]")
    with pytest.raises(ImportFailure, match="no <task>/<length>.json"):
        read_benchmark("babilong", empty)
    assert database_snapshot() == before
