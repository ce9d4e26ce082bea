"""LooGLE's GPT-4 judge (the protocols loogle_qa and loogle_summary) against
its authors' code as published (tests/data/loogle/official/llm_score.py and
llm_eval.py): the requests byte for byte (messages, model, temperature, top_p,
max_tokens) on generated questions and answers, each answer read as the
script reads it (True and False counted, anything else neither; a summary's
int()), and a judging run over imported LooGLE answers whose score is
llm_eval.py's get_accuracy on the same judge answers."""

from __future__ import annotations

import importlib
import json
import random
import sys
import types

import pytest
from django.core.management import call_command

from corpus.models import Dataset
from judging.evaluators import judge_for
from judging.evaluators.config import JudgeConfig
from judging.judging_runs import create_judging_run, judge_run
from judging.models import Evaluator, Judgment
from judging.parsers import parse_loogle_score, parse_loogle_truth
from tests.fakes.openai_server import FakeOpenAI
from tests.generation.test_loogle import write_task_files
from tests.judging.test_loogle_metrics import DATA


def official_modules():
    sys.path.insert(0, str(DATA / "official"))
    try:
        return importlib.import_module("llm_score"), importlib.import_module("llm_eval")
    finally:
        sys.path.remove(str(DATA / "official"))


SCORE, EVAL = official_modules()
PIECES = ["Jerez", " de la Frontera", "\n", "{braces}", "Straße", "  ", "1919", "'quoted'", "."]


class OfficialChat:
    """openai.ChatCompletion as llm_score.py calls it, answering `reply`."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.reply = ""

    def create(self, **request):
        self.sent.append(request)
        return {"choices": [{"message": {"content": self.reply}}]}


def text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 8)))


def test_each_request_is_llm_scores_and_each_answer_is_read_as_it_reads_it(monkeypatch):
    chat = OfficialChat()
    monkeypatch.setattr(SCORE, "openai", types.SimpleNamespace(ChatCompletion=chat))
    qa = judge_for(JudgeConfig.from_dict({"protocol": "loogle_qa"}))
    summary = judge_for(JudgeConfig.from_dict({"protocol": "loogle_summary"}))
    assert qa.config.model == summary.config.model == "gpt-4"
    assert (qa.config.temperature, qa.config.top_p, qa.config.max_tokens) == (0.0, 1.0, 10)
    assert not qa.config.send_seed and qa.config.reask == 0
    rng = random.Random(11)
    readings = ["True", "False", "True.", " True", "false", "", "TRUE", "True\n"]
    scores = ["85", " 85", "85\n", "85.", "Score: 85", "100", "101", "-1", "0", "", "+7", "1_0"]
    for _ in range(300):
        question, reference, answer = text(rng), text(rng), text(rng)
        for task, judge, replies in (
            ("shortdep_qa", qa, readings),
            ("longdep_summarization", summary, scores),
        ):
            chat.reply = rng.choice(replies)
            try:
                official = SCORE.get_gpt4_score(question, reference, answer, task)
            except ValueError:  # int() of an answer that is no number: the script stops
                official = None
            sent = chat.sent[-1]
            assert judge.messages(question, answer, reference) == sent["messages"]
            assert (judge.config.model, judge.config.temperature) == (sent["model"], 0.0)
            assert (judge.config.top_p, judge.config.max_tokens) == (1, sent["max_tokens"])
            parsed = judge.parse(chat.reply)
            if task == "shortdep_qa":  # get_accuracy counts "True" and "False" alone
                counted = {"True": 1, "False": 0}.get(official)
                assert parsed.value == counted and parsed.ok == (counted is not None)
            elif official is None or not 0 <= official <= 100:
                assert not parsed.ok  # the script stops, or averages a score off its scale
            else:
                assert parsed.ok and parsed.value == official


def test_a_summary_score_off_the_scale_is_refused_not_averaged():
    assert parse_loogle_score("150").outcome == "out_of_range"
    assert parse_loogle_score(" 42 ").span == (1, 3)
    assert parse_loogle_truth("True").span == (0, 4)


def import_answers(tmp_path) -> None:
    """LooGLE's sample lines and a system's answers: right, wrong, and one the
    fake judge meets with "False." (counted as neither), and a summary."""
    write_task_files(tmp_path / "data")
    call_command("import_benchmark", str(tmp_path / "data"), "--format", "loogle", stdout=None)
    answers = {
        ("shortdep_qa-1", "1-1"): "He was born in Jerez.",
        ("shortdep_qa-1", "1-2"): "In Lisbon.",
        ("shortdep_qa-2", "2-1"): "I am unsure.",
        ("longdep_summarization-1", "1"): "We study distinction here.",
    }
    records = [
        {"system": "model", "task": d.split("-")[0], "document_id": d, "question_id": q,
         "response": a}
        for (d, q), a in answers.items()
    ]  # fmt: skip
    file = tmp_path / "answers.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for task in ("shortdep_qa", "longdep_summarization"):
        call_command(
            "import_responses", str(file), "--benchmark", "loogle", "--split", "test",
            "--task", task, stdout=None,
        )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_judging_run_scores_as_llm_eval_counts(tmp_path):
    import_answers(tmp_path)
    with FakeOpenAI() as server:
        judged = {}
        for protocol, task in (
            ("loogle_qa", "shortdep_qa"),
            ("loogle_summary", "longdep_summarization"),
        ):
            evaluator = Evaluator.objects.create(
                name=protocol,
                kind="llm_rubric",
                config={"protocol": protocol, "server": "vllm", "base_url": server.url},
            )
            dataset = Dataset.objects.get(benchmark__slug="loogle", task=task)
            run = judge_run(create_judging_run(evaluator, dataset, "st").pk)
            judged[protocol] = (run, evaluator)
        sent = list(server.requests)
    qa_run, qa = judged["loogle_qa"]
    assert qa_run.done == 2 and qa_run.failed == 1  # "False." is no verdict: left out
    values = sorted(Judgment.objects.filter(evaluator=qa).values_list("raw_score", flat=True))
    replies = ["True", "False", "False."]  # what the server answered, in some order
    official = EVAL.get_accuracy({"get_gpt4_score": replies}, ["get_gpt4_score"], "shortdep_qa")
    assert sum(values) / len(values) == official["get_gpt4_score"] == 0.5
    assert all(r["max_tokens"] == 10 and r["temperature"] == 0 and "seed" not in r for r in sent)
    summary_run, summary = judged["loogle_summary"]
    (score,) = Judgment.objects.filter(evaluator=summary).values_list("raw_score", flat=True)
    assert summary_run.done == 1 and score == 25  # "we" and "study": 2 of the reference's 8 words
