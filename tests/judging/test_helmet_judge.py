"""HELMET's GPT-4o judge of long-document QA (the protocol helmet_longqa)
against its authors' script as published
(tests/data/helmet/official/eval_gpt4_longqa.py, its model standing in):
each prompt byte for byte (the question, every right answer as the script's
list, the output parsed as the script parses it), each answer read as the
script reads it, and the run's mean equal to the script's gpt-4-score; a
judging run shows the judge every right answer, the reference and the
alternatives."""

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
from judging.parsers import parse_helmet_longqa
from tests.conftest import REPO
from tests.fakes.openai_server import FakeOpenAI

OFFICIAL_DIR = REPO / "tests" / "data" / "helmet" / "official"


def official_script():
    sys.modules.setdefault("model_utils", types.SimpleNamespace(OpenAIModel=None))  # type: ignore[arg-type]
    sys.path.insert(0, str(OFFICIAL_DIR))
    try:
        return importlib.import_module("eval_gpt4_longqa")
    finally:
        sys.path.remove(str(OFFICIAL_DIR))


SCRIPT = official_script()
PIECES = ["the North Pole", "Answer: ", "\n", "They head north.", "{x}", "Straße", "  ", "1919"]
# what a judge answers: read (a score), unread (no JSON, or not JSON), as the script reads them
REPLIES = [
    'Reasoning... {"fluency": 1, "correctness": 3}',
    '{"fluency": 0, "correctness": 2}',
    'First {"fluency": 1, "correctness": 0} then {"fluency": 1, "correctness": 2}',
    "The answer is fine, score 3.",
    '{"fluency": 1, correctness: 2}',
    '{\n  "fluency": 1,\n  "correctness": 1\n}',
]


class Judge:
    """OpenAIModel.generate_batch as check_metrics calls it, answering in turn."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = replies, []

    def generate_batch(self, prompt, batch_file):
        self.prompts = list(prompt)
        return [{"output": reply} for reply in self.replies]


def test_each_prompt_reading_and_the_mean_are_the_scripts(tmp_path):
    rng = random.Random(17)
    judge = judge_for(JudgeConfig.from_dict({"protocol": "helmet_longqa"}))
    config = judge.config
    assert (config.model, config.temperature, config.top_p) == ("gpt-4o-2024-05-13", 0.1, 0.9)
    assert (config.max_tokens, config.seeds, config.reask) == (2048, (42,), 0)
    data, replies = [], []
    for index in range(200):
        answers = [rng.choice(PIECES) for _ in range(rng.randint(1, 3))]
        output = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 5)))
        data.append(
            {"id": index, "question": rng.choice(PIECES), "answer": answers, "output": output}
        )
        replies.append(rng.choice(REPLIES))
    results = tmp_path / "narrativeqa_v1.json"
    results.write_text(json.dumps({"data": data, "averaged_metrics": {}}))
    model = Judge(replies)
    scored = SCRIPT.check_metrics(model, str(results), str(tmp_path / "out.json"))
    values = []
    for d, prompt, reply in zip(data, model.prompts, replies, strict=True):
        messages = judge.answer_messages(d["question"], d["output"], d["answer"])
        assert messages == [{"role": "user", "content": prompt}]
        parsed = judge.parse(reply)
        official = SCRIPT.parse_json(reply)
        if official is None:
            assert not parsed.ok
        else:
            assert parsed.ok and parsed.value == official["fluency"] * official["correctness"]
            values.append(parsed.value)
    assert 0 < len(values) < len(data)
    assert sum(values) / len(values) == scored["averaged_metrics"]["gpt-4-score"]


def test_a_score_the_script_would_average_off_its_rubric_is_refused():
    assert parse_helmet_longqa('{"fluency": 1, "correctness": 5}').outcome == "out_of_range"
    assert parse_helmet_longqa('{"fluency": "1", "correctness": 2}').outcome == "parse_failure"
    assert parse_helmet_longqa('{"correctness": 2}').outcome == "parse_failure"  # the script stops


@pytest.mark.django_db(transaction=True)
def test_a_run_shows_the_judge_every_right_answer(tmp_path):
    lines = [
        {"document_id": "book-1", "document": "A story of a voyage north.", "question_id": "1",
         "question": "Where are they headed?",
         "answers": ["the North Pole", "North Pole", "to the pole"]},
    ]  # fmt: skip
    data = tmp_path / "narrativeqa.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    call_command(
        "import_benchmark", str(data), "--format", "generic", "--benchmark", "helmet",
        "--task", "narrativeqa_130772", stdout=None,
    )  # fmt: skip
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps(
            {
                "system": "m",
                "document_id": "book-1",
                "question_id": "1",
                "response": "Answer: They are headed for the North Pole.\nMore.",
            }
        )  # fmt: skip
        + "\n"
    )
    call_command(
        "import_responses", str(answers), "--benchmark", "helmet", "--split", "test",
        "--task", "narrativeqa_130772", stdout=None,
    )  # fmt: skip
    with FakeOpenAI() as server:
        evaluator = Evaluator.objects.create(
            name="helmet judge",
            kind="llm_rubric",
            config={"protocol": "helmet_longqa", "server": "vllm", "base_url": server.url},
        )
        run = judge_run(create_judging_run(evaluator, Dataset.objects.get(), "st").pk)
        (sent,) = server.requests
    prompt = sent["messages"][0]["content"]
    assert "Correct answers: ['the North Pole', 'North Pole', 'to the pole']\n" in prompt
    assert prompt.endswith("Answer: They are headed for the North Pole. More.\n")
    assert (sent["temperature"], sent["top_p"], sent["seed"]) == (0.1, 0.9, 42)
    assert run.status == "done" and Judgment.objects.get(evaluator=evaluator).raw_score == 3
