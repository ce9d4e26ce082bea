"""RULER end to end: tasks made at two lengths (`make_ruler --import`), stored
as a task per length with the authors' references and prompt parts, asked of
an OpenAI-compatible server as call_api.py asks (input and answer prefix,
one user message, the task's answer budget), framed for a local model as
prepare.py's model templates frame it, scored by its string match and
exported as call_api.py's prediction file, which the authors' evaluate.py
logic scores the same."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers.errors import ImportFailure
from corpus.importers.formats import read_benchmark
from corpus.models import Dataset, QuestionText
from generation.local_prompts import ruler_prompt as _ruler_prompt
from generation.models import System
from generation.runner import GenerationError, create_generation_run, run_generation
from generation.work import MeetingWork
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator, Judgment
from tests.conftest import database_snapshot
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.test_ruler_metrics import OFFICIAL, postprocess_pred

# RULER's scripts/data/template.py, 'meta-chat'
META_CHAT = "[INST] {task_template} [/INST]"


def make(tmp_path, *extra: str) -> None:
    call_command(
        "make_ruler", "--output", str(tmp_path / "ruler"), "--tasks", "niah_single_1,vt",
        "--lengths", "1024,2048", "--samples", "2", *extra, stdout=None,
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_ruler_is_made_imported_asked_scored_and_exported_as_its_authors_do(tmp_path):
    make(tmp_path, "--import")
    datasets = Dataset.objects.filter(benchmark__slug="ruler").order_by("task")
    assert [(d.split, d.task) for d in datasets] == [
        ("validation", "niah_single_1-1024"),
        ("validation", "niah_single_1-2048"),
        ("validation", "vt-1024"),
        ("validation", "vt-2048"),
    ]
    data = tmp_path / "ruler" / "2048" / "data" / "vt" / "validation.jsonl"
    lines = [json.loads(line) for line in data.read_text().splitlines()]
    dataset = datasets.get(task="vt-2048")
    texts = list(
        QuestionText.objects.filter(dataset=dataset)
        .select_related("question__document")
        .order_by("question__document__external_id")
    )
    for text, line in zip(texts, lines, strict=True):
        assert text.question.document.text == line["input"]
        assert [text.reference_answer, *text.alternative_answers] == line["outputs"]
        assert text.text.startswith("Question: Find all variables that are assigned the value")
        assert text.prompt == {
            "answer_prefix": line["answer_prefix"], "ruler_task": "vt", "max_seq_length": 2048,
            "length": line["length"], "index": line["index"],
        }  # fmt: skip

    config = {"backend": "openai", "base_url": "", "model": "m", "server": "vllm"}
    with FakeOpenAI() as server:
        config["base_url"] = server.url
        system = System.objects.create(
            name="my model", model_name="m", backend="openai", config=config
        )
        runs = {d.task: run_generation(create_generation_run(system, d, "st").pk) for d in datasets}
        sent = list(server.requests)
    assert all((r.status, r.done) == ("done", 2) for r in runs.values())
    asked = {(m["messages"][0]["content"], m["max_tokens"]) for m in sent}
    assert {(line["input"] + line["answer_prefix"], 30) for line in lines} <= asked
    assert all(len(m["messages"]) == 1 for m in sent)
    assert sum(1 for m in sent if m["max_tokens"] == 128) == 4  # niah's budget, both lengths
    with pytest.raises(GenerationError, match="asks each question alone"):
        create_generation_run(system, dataset, "mt")

    # answers with some of the names (one in lower case), none, or all
    answers = [" ".join(lines[0]["outputs"][:3]) + " " + lines[0]["outputs"][3].lower(), ""]
    records = [
        {"system": "made elsewhere", "document_id": t.question.document.external_id,
         "question_id": t.question.external_id, "response": a}
        for t, a in zip(texts, answers, strict=True)
    ]  # fmt: skip
    file = tmp_path / "answers.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    call_command(
        "import_responses", str(file), "--benchmark", "ruler", "--split", "validation",
        "--task", "vt-2048", stdout=None,
    )  # fmt: skip
    ensure_metric_evaluators()
    match_all = Evaluator.objects.get(name="metric: ruler.string_match_all")
    scored = judge_run(create_judging_run(match_all, dataset, "st").pk)
    assert (scored.status, scored.done) == ("done", 4)
    elsewhere = dataset.runs.get(system__name="made elsewhere")
    judged = Judgment.objects.filter(evaluator=match_all, response__run=elsewhere)
    stored = [judged.get(response__question=t.question).raw_score for t in texts]
    assert stored == [0.8, 0.0]

    out = tmp_path / "out"
    out.mkdir()
    call_command(
        "export_leaderboard", "--runs", f"{runs['vt-2048'].pk},{elsewhere.pk}",
        "--output", str(out), stdout=None,
    )  # fmt: skip
    pred = out / "made-elsewhere" / "synthetic" / "2048" / "pred" / "vt.jsonl"
    exported = [json.loads(line) for line in pred.read_text().splitlines()]
    assert [e["index"] for e in exported] == [line["index"] for line in lines]
    assert [e["input"] for e in exported] == [x["input"] + x["answer_prefix"] for x in lines]
    assert [e["outputs"] for e in exported] == [x["outputs"] for x in lines]
    assert [e["pred"] for e in exported] == answers
    assert (out / "my-model" / "synthetic" / "2048" / "pred" / "vt.jsonl").is_file()
    # evaluate.py's logic on the exported file is the task score of Concord's values
    official = OFFICIAL["ruler.string_match_all"](
        [postprocess_pred(e["pred"], {}) for e in exported], [e["outputs"] for e in exported]
    )
    assert official == 40.0 == match_all_plugin().task_score(stored, [{}, {}])


def match_all_plugin():
    from judging.evaluators import metric_class

    return metric_class("ruler.string_match_all")()


@pytest.mark.django_db
def test_a_local_model_gets_prepares_model_template_with_the_answer_prefix_after_it(tmp_path):
    make(tmp_path, "--import")
    text = QuestionText.objects.select_related("question__document").get(
        dataset__task="niah_single_1-1024", question__external_id="1"
    )
    meeting = MeetingWork(
        text.question.document, [text.question], [text.text], [text.reference_answer]
    )
    meeting.prompts.append(text.prompt)

    class Config:
        chat_template = "llama-2"

    line = json.loads(
        (tmp_path / "ruler/1024/data/niah_single_1/validation.jsonl").read_text().splitlines()[0]
    )
    expected = META_CHAT.format(task_template=line["input"]) + line["answer_prefix"]
    assert _ruler_prompt(Config(), None, meeting, 0) == expected


@pytest.mark.django_db
def test_a_bad_file_or_folder_is_refused_and_nothing_is_stored(tmp_path):
    make(tmp_path)
    before = database_snapshot()
    good = tmp_path / "ruler" / "1024" / "data" / "vt" / "validation.jsonl"
    loose = tmp_path / "vt.jsonl"
    loose.write_text(good.read_text())
    with pytest.raises(CommandError, match="give the task with its length"):
        call_command("import_benchmark", str(loose), "--format", "ruler")
    with pytest.raises(CommandError, match="RULER's task and its length"):
        call_command("import_benchmark", str(loose), "--format", "ruler", "--task", "vt")
    line = json.loads(good.read_text().splitlines()[0])
    for change, error in [
        ({"outputs": "KDRXW"}, "'outputs' must be a list of non-empty strings"),
        ({"outputs": []}, "'outputs' must be a list of non-empty strings"),
        ({"input": ""}, "'input' must be a non-empty string"),
        ({"length": "4k"}, "'length' must be a whole number"),
        ({"needle": 1}, "unknown field"),
    ]:
        bad = tmp_path / "bad" / "1024" / "data" / "vt" / "validation.jsonl"
        bad.parent.mkdir(parents=True, exist_ok=True)
        bad.write_text(good.read_text() + json.dumps({**line, **change}) + "\n")
        with pytest.raises(CommandError, match=error):
            call_command("import_benchmark", str(tmp_path / "bad"), "--format", "ruler")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ImportFailure, match="no <length>/data/<task>/validation.jsonl"):
        read_benchmark("ruler", empty)
    assert database_snapshot() == before


def test_make_ruler_refuses_what_it_cannot_make(tmp_path):
    for args, error in [
        (("--tasks", "niah_single_2"), "made here are niah_single_1"),
        (("--lengths", "4k"), "whole numbers with commas"),
        (("--lengths", "0"), "positive whole numbers"),
        (("--samples", "0"), "from 1 to"),
        (("--tokenizer", "llama"), "'hf:<a local folder>'"),
    ]:
        with pytest.raises(CommandError, match=error):
            call_command("make_ruler", "--output", str(tmp_path), *args, stdout=None)
