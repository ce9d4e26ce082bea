"""LLM judging runs against a local OpenAI-compatible server with faults."""

import pytest
from django.core.management import call_command

from judging.evaluators.config import ConfigError, JudgeConfig
from judging.judging_runs import JudgingError, cancel_run, create_judging_run, resume_run
from judging.model_judging import run_llm_judging
from judging.models import Evaluator, JudgeItem, JudgingRun, Judgment
from llm.models import LLMCall
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.fixtures import llm_judge

# The executor's threads use their own database connections: the data must be
# committed for them to see it.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]

# The two synthetic meetings ask the same questions and get the same answers:
# 36 responses make 18 distinct prompts, and the ledger calls each once.
DISTINCT = 18


@pytest.fixture
def server():
    with FakeOpenAI() as fake:
        yield fake


def judged(evaluator):
    return Judgment.objects.filter(evaluator=evaluator)


def test_config_refuses_what_a_server_does_not_accept():
    with pytest.raises(ConfigError, match="A openai server does not accept repetition_penalty"):
        JudgeConfig.from_dict({"server": "openai", "repetition_penalty": 1.1})
    with pytest.raises(ConfigError, match="Unknown judge setting"):
        JudgeConfig.from_dict({"temprature": 0.6})
    params = JudgeConfig.from_dict({"server": "vllm", "repetition_penalty": 1.1}).sampling(7)
    assert params == {
        "temperature": 0.6,
        "max_tokens": 1024,
        "top_p": 0.9,
        "seed": 7,
        "extra_body": {"repetition_penalty": 1.1},
    }


def test_run_judges_everything_and_a_second_run_calls_nothing(two_meetings_committed, server):
    judge = llm_judge(server.url)
    run = create_judging_run(judge, qa_test2(), "st")
    assert run.total == 36
    run = run_llm_judging(run.pk)
    assert (run.status, run.done, run.failed) == ("done", 36, 0)
    assert (run.requests, run.cache_hits, server.count) == (DISTINCT, 36 - DISTINCT, DISTINCT)
    assert server.max_in_flight <= 8
    scores = {
        j.response.run.system.name: j.score
        for j in judged(judge).select_related("response__run__system")
    }
    assert scores["Synthetic-Echo"] == 9 and scores["Synthetic-Hedge"] == 2
    judgment = judged(judge).first()
    assert judgment.seed == 2023 and "\\boxed{" in judgment.feedback
    call = LLMCall.objects.first()
    assert call.params == {"temperature": 0.6, "max_tokens": 1024, "top_p": 0.9, "seed": 2023}
    assert call.system_fingerprint == "fp_fake_1" and call.prompt_tokens > 0
    assert call.messages[0] == {"role": "system", "content": "You are a helpful assistant."}
    # the same requests again: answered from the ledger, no call, nothing duplicated
    again = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert (again.requests, again.cache_hits, server.count) == (0, 36, DISTINCT)
    assert judged(judge).count() == 36 and LLMCall.objects.count() == DISTINCT
    # unless asked to refresh: each distinct request once more
    fresh = run_llm_judging(create_judging_run(judge, qa_test2(), "st", refresh=True).pk)
    assert (fresh.requests, server.count) == (DISTINCT, 2 * DISTINCT)
    assert LLMCall.objects.count() == 2 * DISTINCT and judged(judge).count() == 36


def test_faults_are_retried_and_nothing_is_lost_or_doubled(two_meetings_committed):
    with FakeOpenAI(plan=["429", "500", "timeout", "429", "500"], hang=3) as server:
        judge = llm_judge(server.url, max_concurrency=2)
        run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert (run.status, run.done, run.failed) == ("done", 36, 0)
    assert judged(judge).count() == 36
    assert LLMCall.objects.filter(status="ok").count() == DISTINCT
    assert server.count == DISTINCT + 5


def test_unparseable_answers_go_to_a_human_never_to_a_score(two_meetings_committed, server):
    from generation.models import Response

    Response.objects.filter(run__system__name="Synthetic-Terse").update(text="GARBLE GARBLE")
    Response.objects.filter(run__system__name="Synthetic-Hedge", question__external_id="1").update(
        text="TRUNCATE"
    )
    # one item at a time: the order of the answers is the items'
    judge = llm_judge(server.url, reask=2, max_concurrency=1)
    run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert run.status == "done" and run.done == 24 - 2 and run.failed == 12 + 2
    assert "14 answers need a human" in run.message
    human = JudgeItem.objects.filter(run=run, status="needs_human")
    assert human.count() == 14
    assert set(human.values_list("outcome", flat=True)) == {"parse_failure", "truncated"}
    items = list(JudgeItem.objects.filter(run=run).order_by("pk"))
    first_read = next(n for n, item in enumerate(items) if item.status == "done")
    for n, item in enumerate(items):
        if item.status == "needs_human":
            # asked, then re-asked twice with new seeds; but before the run read
            # any answer, an unreadable one is not asked again (a judge whose
            # format the parser misses would pay every item three times over)
            assert item.attempts == (1 if n < first_read else 3), (n, first_read)
    assert sum(item.attempts == 3 for item in items) >= 10
    seeds = {c.params["seed"] for c in LLMCall.objects.filter(raw_output__startswith="I think")}
    assert len(seeds) == 3
    assert judged(judge).count() == 22  # failures are not scores


def test_a_judge_whose_answers_never_parse_stops_the_run_at_twenty(two_meetings_committed, server):
    """Every answer unreadable (a prompt asking for a format the parser does
    not read): 20 answers, each asked once, then the run stops (failed, so it
    can be resumed once the judge is fixed) and shows the first answer."""
    from generation.models import Response

    for response in Response.objects.all():  # each request its own (none from the ledger)
        Response.objects.filter(pk=response.pk).update(text=f"GARBLE answer {response.pk}")
    judge = llm_judge(server.url, reask=2, max_concurrency=4)
    run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert run.status == "failed"
    assert run.message.startswith("Stopped: the first 20 answers held no readable score (no ")
    assert "The first answer was: 'I think this answer is rather good" in run.message
    assert "then resume the run" in run.message
    asked = JudgeItem.objects.filter(run=run).exclude(attempts=0)
    # each asked once; at most the calls in flight when it stopped came on top
    assert 20 <= asked.count() <= 20 + 4
    assert set(asked.values_list("attempts", flat=True)) == {1}
    assert server.count == asked.count()
    assert JudgeItem.objects.filter(run=run, status="pending").count() == 36 - asked.count()
    assert not judged(judge).exists()


def priced_judge(server, **settings):
    return llm_judge(
        server.url, price_input_per_million=1000, price_output_per_million=1000, **settings
    )


def test_a_run_projected_over_its_budget_starts_only_when_confirmed(two_meetings_committed, server):
    judge = priced_judge(server)
    with pytest.raises(
        JudgingError, match=r"projected cost, \d+\.\d\d, is above the budget of 10: "
    ):
        create_judging_run(judge, qa_test2(), "st", budget=10)
    assert not JudgingRun.objects.exists() and not JudgeItem.objects.exists()
    run = create_judging_run(judge, qa_test2(), "st", budget=10, confirm_over_budget=True)
    assert run.projected_cost > 10 and run.total == 36
    # under its budget a run needs no confirming
    create_judging_run(judge, qa_test2(), "st", budget=100)


@pytest.mark.parametrize("concurrency", [1, 8])
def test_the_budget_is_never_passed(two_meetings_committed, server, concurrency):
    from llm.budget import Prices, most_prompt_tokens

    judge = priced_judge(server, max_concurrency=concurrency)
    run = create_judging_run(judge, qa_test2(), "st", budget=10, confirm_over_budget=True)
    run = run_llm_judging(run.pk)
    calls = LLMCall.objects.filter(status="ok")
    spent = sum(c.cost for c in calls)
    assert run.status == "cancelled" and "the budget of 10 was reached" in run.message
    assert "items not judged" in run.message
    assert 0 < run.requests < DISTINCT and spent == pytest.approx(run.cost) and run.cost <= 10
    # it stopped only when its next request could have passed the budget
    prices = Prices(1000, 1000)
    most = max(prices.cost(most_prompt_tokens(c.messages), c.params["max_tokens"]) for c in calls)
    assert 10 - run.cost < most
    assert judged(judge).count() == run.done


def test_a_server_without_usage_is_counted_and_said(two_meetings_committed):
    with FakeOpenAI(no_usage=True) as server:
        judge = priced_judge(server)
        run = run_llm_judging(
            create_judging_run(judge, qa_test2(), "st", budget=10, confirm_over_budget=True).pk
        )
    calls = LLMCall.objects.filter(status="ok")
    assert calls and all(c.usage_counted and c.prompt_tokens > 0 for c in calls)
    assert run.counted_usage == run.requests == calls.count() < DISTINCT
    assert 0 < run.cost <= 10 and run.status == "cancelled"
    assert "sent no token usage with" in run.message and "counted" in run.message


def test_a_long_retry_after_is_capped_and_a_cancel_ends_the_wait(two_meetings_committed):
    import threading
    import time

    from llm.policy import RetryPolicy
    from llm.providers import Failure, FailureKind

    policy = RetryPolicy()
    assert policy.wait_seconds(Failure(FailureKind.RATE_LIMITED, "429", 900), 0) == 120
    with FakeOpenAI(plan=["429"] * 8, retry_after=900) as server:
        judge = llm_judge(server.url, max_concurrency=8)
        run = create_judging_run(judge, qa_test2(), "st")
        worker = threading.Thread(target=run_llm_judging, args=(run.pk,))
        worker.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.waiting_until:
                break
            time.sleep(0.1)
        # every thread waits for the server: the run says until when
        from console.monitors import run_monitor

        assert run.status == "running" and run.waiting_until is not None
        seconds = (run.waiting_until - run.started_at).total_seconds()
        assert 100 < seconds < 130, seconds
        assert run_monitor(run).waiting_until == run.waiting_until
        cancelled_at = time.monotonic()
        cancel_run(run)
        worker.join(10)
        assert not worker.is_alive()
        assert time.monotonic() - cancelled_at < 5
    run.refresh_from_db()
    assert run.status == "cancelled" and server.count == 8


def test_cancel_and_resume(two_meetings_committed, server):
    judge = llm_judge(server.url)
    run = create_judging_run(judge, qa_test2(), "st")
    cancel_run(run)
    assert run_llm_judging(run.pk).status == "cancelled" and server.count == 0
    resume_run(run)
    run = run_llm_judging(run.pk)
    assert (run.status, run.done, server.count) == ("done", 36, DISTINCT), run.message


def test_client_errors_stay_pending_until_resumed(two_meetings_committed):
    with FakeOpenAI(plan=["400"] * 3) as server:
        judge = llm_judge(server.url, max_concurrency=1)
        run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
        assert run.status == "failed" and run.failed == 3 and "resume the run" in run.message
        assert JudgeItem.objects.filter(run=run, status="pending", outcome="api_error").count() == 3
        resume_run(run)
        run = run_llm_judging(run.pk)
    assert (run.status, judged(judge).count()) == ("done", 36)


def test_prometheus_protocol_maps_to_ten_points(two_meetings_committed, server):
    judge = llm_judge(server.url, name="prometheus local", protocol="prometheus", top_p=None)
    run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    echo = judged(judge).filter(response__run__system__name="Synthetic-Echo").first()
    assert (echo.raw_score, echo.score, echo.raw_scale_max) == (5, 10, 5)
    assert "[RESULT]" in LLMCall.objects.first().messages[0]["content"]


def test_command_runs_a_judge_now(two_meetings_committed, server, capsys):
    llm_judge(server.url)
    call_command("judge", "--evaluator", "local judge", "--split", "test2", "--now")
    out = capsys.readouterr().out
    assert "36/36 judged, 0 failed (done); 18 requests, 18 answered from the ledger" in out


def test_bad_configuration_is_refused_at_start(two_meetings_committed):
    judge = Evaluator.objects.create(
        name="broken", kind="llm_rubric", config={"server": "ollama", "top_k": 40}
    )
    with pytest.raises(JudgingError, match="does not accept top_k"):
        create_judging_run(judge, qa_test2(), "st")
    assert not JudgingRun.objects.exists()


def test_a_researcher_scores_what_no_parser_could(
    two_meetings_committed, server, client, django_user_model
):
    from generation.models import Response
    from judging.human_review import ReviewError, check_reparse_run, check_resolve_item

    Response.objects.filter(run__system__name="Synthetic-Terse").update(text="GARBLE")
    judge = llm_judge(server.url, reask=0)
    run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    item = JudgeItem.objects.filter(run=run, status="needs_human").first()
    admin = django_user_model.objects.create_superuser("boss", "b@example.org", "pw-boss-123")
    client.force_login(admin)
    url = f"/admin/judging/judgeitem/{item.pk}/change/"
    page = client.get(url).content.decode()
    assert "maybe an eight out of ten" in page and "Store this score" in page
    client.post(url, {"raw_score": "11"})
    assert not judged(judge).filter(response_id=item.response_id).exists()
    client.post(url, {"raw_score": "8"})
    judgment = judged(judge).get(response_id=item.response_id)
    assert (judgment.score, judgment.seed) == (8, 2023) and "Scored by boss" in judgment.feedback
    item.refresh_from_db()
    assert item.status == "resolved"
    with pytest.raises(ReviewError, match="does not need a human"):
        check_resolve_item(item, 7, admin)
    # a newer parser reads stored answers again, without any call
    calls = server.count
    LLMCall.objects.filter(raw_output__startswith="I think").update(
        raw_output="I think this is good. \\boxed{8}"
    )
    assert (
        check_reparse_run(run)
        == JudgeItem.objects.filter(run=run, status="done", detail="re-parsed").count()
        == 11
    )
    assert server.count == calls


def test_rate_limiter_counts_requests_and_tokens(monkeypatch):
    from llm import gate, ledger

    clock = {"now": 1000.0}
    sleeps = []
    monkeypatch.setattr(gate.time, "monotonic", lambda: clock["now"])

    def fake_sleep(seconds):
        sleeps.append(seconds)
        clock["now"] += seconds

    monkeypatch.setattr(gate.time, "sleep", fake_sleep)
    limiter = gate.RateLimiter(per_minute=2, tokens_per_minute=1000)
    limiter.acquire(100)
    limiter.acquire(100)
    limiter.acquire(100)  # third request in the minute: waits for the first to age out
    assert sleeps == [pytest.approx(60)]
    limiter = gate.RateLimiter(per_minute=None, tokens_per_minute=1000)
    sleeps.clear()
    limiter.acquire(600)
    limiter.acquire(600)  # 1200 tokens > 1000: waits
    assert len(sleeps) == 1
    assert ledger.estimated_tokens([{"content": "x" * 400}], {"max_tokens": 50}) == 150


@pytest.mark.parametrize("broker", ["redis", "local"])
def test_endpoint_limit_is_shared_by_simultaneous_runs(two_meetings_committed, settings, broker):
    """Two runs at once, each allowed 4 requests in flight, share one endpoint
    limited to 3: the server never sees more than 3."""
    import threading

    from django.db import connections

    from tests.conftest import port_open, require
    from tests.workers import redis_url

    if broker == "redis":
        url = redis_url()
        require(port_open("127.0.0.1", 6379), f"Redis is not reachable at {url}")
        settings.CELERY_BROKER_URL = url
    else:
        settings.CELERY_BROKER_URL = "filesystem://"
    with FakeOpenAI(latency=0.1) as server:
        judges = [
            llm_judge(
                server.url,
                name=f"judge {n}",
                max_concurrency=4,
                endpoint_max_in_flight=3,
                seeds=[2023 + n],
            )
            for n in (1, 2)
        ]
        runs = [create_judging_run(judge, qa_test2(), "st") for judge in judges]

        def work(run_id):
            try:
                run_llm_judging(run_id)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=work, args=(run.pk,)) for run in runs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert server.count == 2 * DISTINCT
    assert server.max_in_flight == 3
    assert all(JudgingRun.objects.get(pk=r.pk).status == "done" for r in runs)


def test_token_probabilities_are_each_judgment_s_confidence(two_meetings_committed, server):
    """Asked with logprobs, each judgment keeps the probability the server's
    tokens gave its score: the product the fake server drew for that prompt,
    read back through the ledger; the same run again is answered from the
    ledger with the same probabilities. Without logprobs: none."""
    judge = llm_judge(server.url, name="judge with logprobs", logprobs=True)
    run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
    assert (run.done, run.failed, server.count) == (36, 0, DISTINCT)
    call = LLMCall.objects.first()
    assert call.params["logprobs"] is True
    assert "".join(token for token, _ in call.token_logprobs) == call.raw_output
    items = {
        (i.response_id, i.seed): i for i in JudgeItem.objects.filter(run=run).select_related("call")
    }
    for judgment in judged(judge):
        user = items[(judgment.response_id, judgment.seed)].call.messages[-1]["content"]
        assert judgment.probability == pytest.approx(server.answer_probability[user], rel=1e-12)
    assert len({j.probability for j in judged(judge)}) == DISTINCT  # drawn per prompt

    again = llm_judge(server.url, name="the same judge again", logprobs=True)
    run_llm_judging(create_judging_run(again, qa_test2(), "st").pk)
    assert server.count == DISTINCT  # from the ledger, with its token probabilities
    first = dict(judged(judge).values_list("response_id", "probability"))
    assert dict(judged(again).values_list("response_id", "probability")) == first

    plain = llm_judge(server.url, name="judge without logprobs")
    run_llm_judging(create_judging_run(plain, qa_test2(), "st").pk)
    assert set(judged(plain).values_list("probability", flat=True)) == {None}


def test_a_server_without_token_probabilities_is_refused_them():
    with pytest.raises(ConfigError, match="A ollama server does not give token probabilities"):
        JudgeConfig.from_dict({"server": "ollama", "logprobs": True})
    assert JudgeConfig.from_dict({"server": "tgi", "logprobs": True}).sampling(7)["logprobs"]
    assert "logprobs" not in JudgeConfig.from_dict({"server": "tgi"}).sampling(7)
