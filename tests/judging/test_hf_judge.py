"""A judge on a local HF transformers model: loaded once per process, answers
through the same executor and ledger as an API judge."""

import pytest

from corpus.models import Dataset
from judging.evaluators.config import ConfigError, JudgeConfig
from judging.judging_runs import create_judging_run
from judging.model_judging import run_llm_judging
from judging.models import Evaluator, JudgeItem
from llm.models import LLMCall

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def local_judge(path, **settings):
    config = {
        "server": "hf",
        "model_path": str(path),
        "model": "tiny-llama",
        "protocol": "prometheus",
        "max_concurrency": 1,
        "max_tokens": 12,
        "seeds": [7],
        "reask": 0,
        "top_p": 0.9,
        "temperature": 0.6,
        "dtype": "float32",
        **settings,
    }
    return Evaluator.objects.create(name="local prometheus", kind="llm_rubric", config=config)


def test_local_configuration_checks():
    with pytest.raises(ConfigError, match="needs model_path"):
        JudgeConfig.from_dict({"server": "hf"})
    with pytest.raises(ConfigError, match="one request at a time"):
        JudgeConfig.from_dict({"server": "hf", "model_path": "x", "max_concurrency": 4})


def test_a_local_model_judges_through_the_ledger(two_meetings_committed, tiny_model):
    from llm import hf

    # a random model never writes a score: the unreadable-answer watch off, the
    # run goes on to the end (this test is about the ledger; test_llm_runs has the stop)
    judge = local_judge(tiny_model, stop_after_unreadable=0)
    dataset = Dataset.objects.get(version="qa", language="en", split="test2")
    run = create_judging_run(judge, dataset, "st")
    assert run.queue() == "gpu"
    run = run_llm_judging(run.pk)
    spec = hf.HFModelSpec(str(tiny_model), "float32")
    assert spec in hf.loaded_specs()
    loaded_after_first_run = list(hf.loaded_specs())
    # a random model writes no [RESULT]: every answer goes to a human, none becomes a score
    assert run.status == "done" and run.done + run.failed == 36
    assert JudgeItem.objects.filter(run=run, status="needs_human").count() == run.failed
    call = LLMCall.objects.first()
    assert call.base_url == f"hf://{tiny_model}" and call.system_fingerprint.startswith("hf:")
    assert call.completion_tokens <= 12 and call.prompt_tokens > 100
    assert call.finish_reason in ("stop", "length")
    assert run.requests == 18 and run.cache_hits == 18  # identical prompts asked once
    # the model stays loaded: a second run loads nothing more
    again = run_llm_judging(create_judging_run(judge, dataset, "st", refresh=True).pk)
    assert again.requests == 18
    assert hf.loaded_specs() == loaded_after_first_run


def test_seeds_make_sampling_reproducible(tiny_model):
    from llm.hf import HFModelSpec, load_model

    model = load_model(HFModelSpec(str(tiny_model), dtype="float32"))
    messages = [{"role": "user", "content": "Who opened the meeting?"}]
    first = model.generate(messages, max_tokens=10, temperature=0.9, top_p=0.9, seed=2023)
    again = model.generate(messages, max_tokens=10, temperature=0.9, top_p=0.9, seed=2023)
    greedy = model.generate(messages, max_tokens=10)
    assert first == again
    assert greedy == model.generate(messages, max_tokens=10)
    assert first[2] == greedy[2] > 5  # the same prompt length
