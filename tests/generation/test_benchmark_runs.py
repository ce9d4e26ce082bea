"""The seeds' other benchmarks run as ELITR-Bench does: imported from their
authors' files, answered by a system on an OpenAI-compatible server (the fake
one) with the benchmark's own prompts, scored by its official metric."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from corpus.importers.samples import write_leval_tasks, write_zeroscrolls_task
from corpus.models import Dataset
from generation.models import Response, System
from generation.prompts_zeroscrolls import Row, chat_prompt
from generation.runner import GenerationError, create_generation_run, run_generation
from judging.judging_runs import create_judging_run, ensure_metric_evaluators, judge_run
from judging.models import Evaluator, Judgment
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)


def api_system(url: str, name: str, **settings) -> System:
    config = {"backend": "openai", "base_url": url, "model": "m", "server": "vllm", **settings}
    return System.objects.create(name=name, model_name="m", backend="openai", config=config)


def test_zeroscrolls_is_prompted_with_its_rows_and_scored_officially(tmp_path):
    call_command(
        "import_benchmark", str(write_zeroscrolls_task(tmp_path)), "--format", "zeroscrolls"
    )
    qasper = Dataset.objects.get(benchmark__slug="zeroscrolls", task="qasper")
    with FakeOpenAI() as server:
        system = api_system(server.url, "zs model")
        run = run_generation(create_generation_run(system, qasper, "st").pk)
        sent = list(server.requests)
    assert (run.status, run.done) == ("done", 3)
    for request in sent:
        assert request["max_tokens"] == 128  # ZeroSCROLLS' budget for Qasper
        (message,) = request["messages"]
        assert message["role"] == "user"
        assert message["content"].endswith(
            "\n\nQuestion:\n" + message["content"].split("\n\nQuestion:\n")[1]
        )
        assert " Do not provide any explanation.\n\nArticle:" in message["content"]
        assert not message["content"].endswith("Answer:\n")  # the chat builder drops the header
    text = qasper.question_texts.select_related("question__document").first()
    row = Row.of_question(text.question.document.text, text.text, text.prompt)
    assert chat_prompt(row, "qasper", None, None, 128)[0] in [
        s["messages"][0]["content"] for s in sent
    ]
    with pytest.raises(GenerationError, match="asks each question alone"):
        create_generation_run(system, qasper, "mt")
    ensure_metric_evaluators()
    f1 = Evaluator.objects.get(name="metric: zeroscrolls.f1")
    scored = judge_run(create_judging_run(f1, qasper, "st").pk)
    assert (scored.status, scored.done) == ("done", 3)
    assert Judgment.objects.filter(evaluator=f1).count() == 3


def test_leval_runs_and_is_scored_with_its_exam(tmp_path):
    quality, _ = write_leval_tasks(tmp_path)
    call_command("import_benchmark", str(quality), "--format", "leval")
    dataset = Dataset.objects.get(benchmark__slug="leval", task="quality")
    with FakeOpenAI() as server:
        run = run_generation(
            create_generation_run(api_system(server.url, "leval model"), dataset, "st").pk
        )
    assert (run.status, run.done) == ("done", 3)
    ensure_metric_evaluators()
    exam = Evaluator.objects.get(name="metric: leval.exam_choice")
    scored = judge_run(create_judging_run(exam, dataset, "st").pk)
    assert (scored.status, scored.done) == ("done", 3)
    # the fake server's answers start "The response covers ...": the first A-D letter is none,
    # so L-Eval's extraction guesses "A" (its default), scored against each reference's letter
    values = dict(
        Judgment.objects.filter(evaluator=exam).values_list(
            "response__question__external_id", "raw_score"
        )
    )
    assert set(values.values()) <= {0.0, 1.0}
    assert Response.objects.filter(run=run).count() == 3


def test_leval_prompts_are_its_scripts_for_the_systems_family(tmp_path):
    import json

    from generation.prompts_leval import leval_calls

    quality, reports = write_leval_tasks(tmp_path)
    for path in (quality, reports):
        call_command("import_benchmark", str(path), "--format", "leval")
    sci_fi = tmp_path / "sci_fi.jsonl"
    sci_fi.write_text(
        json.dumps(
            {
                "input": "On Vell the lantern keeper heard a bell.",
                "instructions": [
                    "Is the keeper on Vell? Answer this question based on the world "
                    "described in the document."
                ],
                "outputs": ["True [fact: False]"],
                "source": "SFGram",
                "evaluation": "exam",
            }
        )
        + "\n"
    )
    call_command("import_benchmark", str(sci_fi), "--format", "leval")
    with FakeOpenAI() as server:
        for task, family in (("quality", ""), ("report_qa", "claude"), ("sci_fi", "")):
            dataset = Dataset.objects.get(benchmark__slug="leval", task=task)
            system = api_system(server.url, f"{task} model", prompt_family=family)
            before = len(server.requests)
            run = run_generation(create_generation_run(system, dataset, "st").pk)
            sent = server.requests[before:]
            texts = dataset.question_texts.select_related("question__document").order_by(
                "question__document__external_id", "question__order"
            )
            expected = []
            for text in texts:
                for call in leval_calls(
                    family or "turbo16k",
                    task,
                    text.question.document.text,
                    text.text,
                    text.reference_answer,
                    closed=task in ("quality", "sci_fi"),
                ):
                    expected.append(call.messages or [{"role": "user", "content": call.text}])
            assert sorted(json.dumps(r["messages"]) for r in sent) == sorted(
                json.dumps(m) for m in expected
            )
            assert {r["max_tokens"] for r in sent} == {512}
            assert run.status == "done"
    answer = Response.objects.get(run__dataset__task="sci_fi").text
    assert answer.count(" [fact: ") == 1  # both answers, as L-Eval's sci_fi scoring reads them
    open_ended = Response.objects.filter(run__dataset__task="report_qa").first()
    assert open_ended.length_instruction.startswith("Answer this question with")  # claude's wording
