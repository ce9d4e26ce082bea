"""--task on the commands that take a dataset (judge, generate, sweep) and on
import_responses: a split with several tasks (L-Eval's 20) is refused
without one, with its tasks named, where it used to take the first in
silence; a task is accepted as its authors write it (codeU) or as stored
(codeu); judge and generate take several, a run each."""

from __future__ import annotations

import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.importers.samples import write_leval_tasks
from corpus.models import Dataset
from corpus.services import DatasetChoiceError, datasets_from_options
from generation.models import GenerationRun, Response
from judging.models import JudgingRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def leval(tmp_path):
    quality, reports = write_leval_tasks(tmp_path)
    code = tmp_path / "codeU.jsonl"  # the authors' name for the task, capital U
    shutil.copy(quality, code)
    for path in (quality, reports, code):
        call_command("import_benchmark", str(path), "--format", "leval", stdout=None)
    records = [
        {"system": "my-model", "task": task, "document_id": text.question.document.external_id,
         "question_id": text.question.external_id, "response": "four"}
        for task, dataset in (("codeU", "codeu"), ("quality",) * 2, ("report_qa",) * 2)
        for text in Dataset.objects.get(task=dataset).question_texts.select_related(
            "question__document"
        )
    ]  # fmt: skip
    path = tmp_path / "responses.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test")
    return tmp_path


def options(**given) -> dict:
    named = {"benchmark": "leval", "dataset_version": "qa", "language": "en", "split": "test"}
    return named | given


def test_a_split_with_tasks_needs_one_named(leval):
    with pytest.raises(DatasetChoiceError, match="has 3 tasks: name one with --task") as error:
        datasets_from_options(options())
    assert "codeu, quality, report_qa" in str(error.value)
    assert [d.task for d in datasets_from_options(options(task="codeU"))] == ["codeu"]
    assert [d.task for d in datasets_from_options(options(task="codeu"))] == ["codeu"]
    both = datasets_from_options(options(task="report_qa, quality,quality"))
    assert [d.task for d in both] == ["report_qa", "quality"]
    with pytest.raises(DatasetChoiceError, match="No task 'coursera' in leval"):
        datasets_from_options(options(task="coursera"))
    with pytest.raises(DatasetChoiceError, match="One task only here"):
        datasets_from_options(options(task="codeU,quality"), many=False)
    with pytest.raises(DatasetChoiceError, match="No such dataset"):
        datasets_from_options(options(split="dev"))


def test_judge_refuses_a_split_with_tasks_and_runs_each_task_named(leval):
    judge = ["judge", "--evaluator", "metric: leval.f1", "--benchmark", "leval", "--split", "test"]
    with pytest.raises(CommandError, match="name one with --task"):
        call_command(*judge, "--now")
    assert JudgingRun.objects.count() == 0  # not the first task in silence
    call_command(*judge, "--task", "codeU", "--now", stdout=None)
    (run,) = JudgingRun.objects.all()
    assert run.dataset.task == "codeu" and run.done == run.total > 0
    call_command(*judge, "--task", "quality,report_qa", "--now", stdout=None)
    assert sorted(r.dataset.task for r in JudgingRun.objects.all()) == [
        "codeu",
        "quality",
        "report_qa",
    ]
    with pytest.raises(CommandError, match="No task 'nope'"):
        call_command(*judge, "--task", "nope")


def test_generate_and_sweep_refuse_a_split_with_tasks(leval):
    runs = GenerationRun.objects.count()
    with pytest.raises(CommandError, match="name one with --task"):
        call_command("generate", "--system", "my-model", "--benchmark", "leval", "--split", "test")
    with pytest.raises(CommandError, match="One task only here"):
        call_command("sweep", "--name", "s", "--system", "my-model", "--benchmark", "leval",
                     "--split", "test",
                     "--task", "codeU,quality")  # fmt: skip
    assert GenerationRun.objects.count() == runs


def test_import_responses_takes_the_authors_task_name_and_refuses_none(leval, tmp_path):
    text = Dataset.objects.get(task="codeu").question_texts.select_related("question__document")[0]
    record = {"system": "other-model", "document_id": text.question.document.external_id,
              "question_id": text.question.external_id, "response": "five"}  # fmt: skip
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(CommandError, match="has tasks .* name the record's 'task', or give --task"):
        call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test")
    assert not Response.objects.filter(run__system__name="other-model").exists()
    call_command("import_responses", str(path), "--benchmark", "leval", "--split", "test",
                 "--task", "codeU", stdout=None)  # fmt: skip
    (response,) = Response.objects.filter(run__system__name="other-model")
    assert response.run.dataset.task == "codeu" and response.text == "five"
