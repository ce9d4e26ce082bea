"""Generation over an OpenAI-compatible server goes through the call ledger,
like judging: every call recorded with its cost, a repeated request answered
from the ledger, an unreachable endpoint stopping the run with its cause."""

import time

import pytest

from generation.models import GenerationRun, Response, System
from generation.runner import create_generation_run, run_generation
from llm.models import LLMCall
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db(transaction=True)


def api_system(url: str, name: str = "api model", **settings) -> System:
    config = {
        "backend": "openai",
        "base_url": url,
        "model": "m",
        "server": "vllm",
        "max_new_tokens": 32,
        "price_input_per_million": 1.0,
        "price_output_per_million": 2.0,
        **settings,
    }
    return System.objects.create(name=name, model_name="m", backend="openai", config=config)


def test_every_generation_call_is_in_the_ledger_and_priced(two_meetings_committed):
    with FakeOpenAI() as server:
        run = run_generation(create_generation_run(api_system(server.url), qa_test2(), "st").pk)
        assert (run.status, run.done, run.failed) == ("done", 12, 0)
        calls = LLMCall.objects.filter(purpose="generate", status="ok")
        # the two synthetic meetings are different transcripts: 12 distinct requests
        assert calls.count() == 12 == server.count == run.requests
        assert run.cache_hits == 0
        assert run.prompt_tokens == sum(c.prompt_tokens for c in calls) > 0
        expected = sum(c.prompt_tokens * 1.0 + c.completion_tokens * 2.0 for c in calls) / 1e6
        assert run.cost == pytest.approx(expected) and run.cost > 0
        for response in Response.objects.filter(run=run).select_related("call"):
            assert response.call is not None and response.text == response.call.raw_output.strip()
            assert response.input_tokens == response.call.prompt_tokens

        # the same model and settings under another name: answered from the ledger
        twin = run_generation(
            create_generation_run(api_system(server.url, name="twin"), qa_test2(), "st").pk
        )
        assert (twin.status, twin.done, twin.requests, twin.cache_hits) == ("done", 12, 0, 12)
        assert twin.cost == 0 and server.count == 12


def test_api_errors_leave_questions_for_a_resume(two_meetings_committed, eager_celery):
    from generation.runner import resume_generation_run

    with FakeOpenAI(plan=["400"]) as server:
        system = api_system(server.url, max_concurrency=1)
        run = run_generation(create_generation_run(system, qa_test2(), "st").pk)
        assert (run.status, run.done, run.failed) == ("failed", 11, 1)
        assert "1 question failed with API errors" in run.message and "400" in run.message
        assert resume_generation_run(run).changed
        run.refresh_from_db()
        assert (run.status, run.done, run.failed) == ("done", 12, 0), run.message
        assert server.count == 13  # the failed question asked again, nothing else
        # one answer per request: the retry is the failed call's next attempt
        ok = LLMCall.objects.filter(status="ok")
        assert ok.count() == ok.values("request_hash").distinct().count() == 12
        assert LLMCall.objects.filter(status="api_error").count() == 1


def test_an_unreachable_server_stops_generation_with_its_cause(two_meetings_committed):
    closed = FakeOpenAI()
    with closed:
        url = closed.url
    system = api_system(url, max_concurrency=4, max_retries=5)
    started = time.monotonic()
    run = run_generation(create_generation_run(system, qa_test2(), "st").pk)
    assert time.monotonic() - started < 10
    assert run.status == GenerationRun.Status.FAILED
    assert "could not be reached" in run.message and "identical connection errors" in run.message
    assert run.done == 0 and not Response.objects.filter(run=run).exists()


def test_generation_counts_the_tokens_a_server_does_not_report(two_meetings_committed):
    with FakeOpenAI(no_usage=True) as server:
        run = run_generation(create_generation_run(api_system(server.url), qa_test2(), "st").pk)
    calls = LLMCall.objects.filter(purpose="generate", status="ok")
    assert run.status == "done" and run.counted_usage == calls.count() == 12
    assert all(c.usage_counted and c.prompt_tokens > 0 for c in calls)
    assert run.cost == pytest.approx(sum(c.cost for c in calls)) and run.cost > 0
    assert "sent no token usage with 12 answers" in run.message
