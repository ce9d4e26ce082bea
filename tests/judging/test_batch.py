"""Judging through the OpenAI Batch API, against the local fake server."""

import pytest

from corpus.models import Dataset
from judging.judging_runs import JudgingError, create_judging_run
from judging.model_judging import run_llm_judging as run_llm_batch
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment
from llm.models import LLMCall
from tests.fakes.openai_server import FakeOpenAI

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]


def test_batch_run_submits_once_polls_and_judges(two_meetings_committed):
    from generation.models import Response

    Response.objects.filter(run__system__name="Synthetic-Terse", question__external_id="1").update(
        text="GARBLE"
    )
    with FakeOpenAI() as server:
        judge = Evaluator.objects.create(
            name="batch judge",
            kind="llm_rubric",
            config={
                "base_url": server.url,
                "model": "m",
                "server": "openai",
                "seeds": [2023],
                "reask": 1,
                "price_input_per_million": 10,
                "price_output_per_million": 30,
            },
        )
        run = create_judging_run(
            judge,
            Dataset.objects.get(version="qa", language="en", split="test2"),
            "st",
            use_batch=True,
        )
        run = run_llm_batch(run.pk)  # submit
        assert run.batch_id == "batch-1" and run.status == "running"
        assert server.count == 0 and len(server.files) == 1
        uploaded = server.files["file-1"].decode().splitlines()
        assert len(uploaded) == 18  # 36 responses, 18 distinct requests
        run = run_llm_batch(run.pk)  # a restarted worker polls the same batch
        assert run.batch_id == "batch-1" and run.batch_status == "in_progress"
        assert len(server.batches) == 1
        run = run_llm_batch(run.pk)  # still running
        run = run_llm_batch(run.pk)  # completed: collected, judged from the ledger
    assert run.status == "done" and run.batch_id == ""
    assert Judgment.objects.filter(evaluator=judge).count() == 34
    # the garbled batch answers were re-asked at once, synchronously, with new seeds
    human = JudgeItem.objects.filter(run=run, status="needs_human")
    assert human.count() == 2 and server.count == 1
    batch_calls = LLMCall.objects.filter(params__seed=2023, status="ok")
    assert batch_calls.count() == 18
    call = batch_calls.exclude(raw_output__startswith="I think").first()
    full_price = (call.prompt_tokens * 10 + call.completion_tokens * 30) / 1e6
    assert call.cost == pytest.approx(full_price / 2)  # the batch price


def test_metrics_do_not_take_the_batch_api(two_meetings_committed):
    from judging.judging_runs import ensure_metric_evaluators

    with pytest.raises(JudgingError, match="Batch API is for LLM judges"):
        create_judging_run(
            ensure_metric_evaluators()[0],
            Dataset.objects.get(version="qa", language="en", split="test2"),
            "st",
            use_batch=True,
        )
    assert not JudgingRun.objects.exists()
