"""One run life cycle for generation, judging and imports: one owner at a
time (a lease with a heartbeat), resume that never pays twice, takeover from
a dead worker, a broker that is down, counters recomputed from what is stored.
On PostgreSQL and Redis, with real workers where a worker is the point."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judging.judging_runs import cancel_run, create_judging_run, resume_run, retry_failed
from judging.model_judging import run_llm_judging
from judging.models import Evaluator, JudgeItem, JudgingRun
from judging.tasks import run_judging
from llm.models import LLMCall
from runs.lifecycle import holding_lease, reclaim_stale_runs
from tests.conftest import REPO, port_open, require
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.fixtures import llm_judge
from tests.workers import (
    app_sends_to,
    database_url_for_worker,
    redis_url,
    send_run,
    start_worker,
    stop,
    wait_for,
)

pytestmark = pytest.mark.django_db(transaction=True)
DISTINCT = 18  # the two synthetic meetings' 36 responses make 18 distinct prompts


def make_judge(server_url: str, name: str = "judge", **settings: object) -> Evaluator:
    """A judge of 4 concurrent calls that waits 5 s for an answer (without
    llm_judge's retries: each failure here is the point of the test)."""
    settings = {"max_concurrency": 4, "timeout_s": 5, **settings}
    judge = llm_judge(server_url, name, **settings)
    if "max_retries" not in settings:
        judge.config.pop("max_retries")
        judge.save(update_fields=["config"])
    return judge


def need_redis() -> str:
    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    return url


def researcher_client(django_user_model) -> APIClient:
    user = django_user_model.objects.create_user("lead", password="x", role="researcher")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def in_threads(function, count: int = 2) -> list:
    """Call `function` from `count` threads at once (each with its own connection)."""
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def work(index: int) -> None:
        try:
            barrier.wait()
            results[index] = function()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def assert_paid_once(server: FakeOpenAI, run: JudgingRun) -> None:
    run.refresh_from_db()
    assert (run.status, run.done, run.failed) == ("done", 36, 0), run.message
    assert server.count == DISTINCT  # each distinct prompt asked once
    assert run.requests + run.cache_hits == 36 and run.requests == DISTINCT
    assert not LLMCall.objects.filter(attempt__gt=0).exists()


@pytest.mark.worker
def test_resuming_a_running_run_is_a_no_op_that_says_so(
    two_meetings_committed, tmp_path, django_user_model
):
    url = need_redis()
    queue = f"test-resume-{uuid.uuid4().hex[:8]}"
    client = researcher_client(django_user_model)
    with FakeOpenAI(latency=0.3) as server:
        run = create_judging_run(make_judge(server.url, max_concurrency=2), qa_test2(), "st")
        worker = start_worker(queue, url, tmp_path, "resume")
        try:
            send_run(run_judging, run, queue, url)
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).lease_owner != "", 60)
            answers = in_threads(
                lambda: client.post(f"/api/judging-runs/{run.pk}/resume/"), count=2
            )
            assert [a.status_code for a in answers] == [200, 200]
            assert [a.json()["code"] for a in answers] == ["already_running"] * 2
            assert not any(a.json()["changed"] for a in answers)
            assert "already running" in answers[0].json()["detail"]
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).status == "done", 90), (
                tmp_path / "resume.log"
            ).read_text()
        finally:
            stop(worker)
        assert_paid_once(server, run)


@pytest.mark.worker
def test_two_resumes_of_a_stopped_run_queue_it_once(two_meetings_committed, tmp_path):
    url = need_redis()
    queue = f"test-resume2-{uuid.uuid4().hex[:8]}"
    with FakeOpenAI(latency=0.05) as server:
        run = create_judging_run(make_judge(server.url), qa_test2(), "st")
        cancel_run(run)
        JudgingRun.objects.filter(pk=run.pk).update(queue_name=queue)
        # the services send on the app's broker: point it at the test's Redis
        with app_sends_to(url):
            outcomes = in_threads(lambda: resume_run(JudgingRun.objects.get(pk=run.pk)))
        assert sorted(o.changed for o in outcomes) == [False, True]
        assert {o.code for o in outcomes} == {"ok", "already_queued"}
        worker = start_worker(queue, url, tmp_path, "resume2")
        try:
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).status == "done", 90), (
                tmp_path / "resume2.log"
            ).read_text()
            time.sleep(1.5)  # a second message, had one been sent, would be taken by now
        finally:
            stop(worker)
        assert_paid_once(server, run)
        assert "judging.run_judging" in (tmp_path / "resume2.log").read_text()
        assert (tmp_path / "resume2.log").read_text().count("received") == 1


def test_a_second_holder_gets_no_lease(two_meetings_committed):
    run = (
        create_judging_run(Evaluator.objects.get(name="gold-human"), qa_test2(), "st")
        if False
        else None
    )
    evaluator = make_judge("http://127.0.0.1:9/v1")
    run = create_judging_run(evaluator, qa_test2(), "st")
    with holding_lease(JudgingRun, run.pk) as first:
        assert first is not None
        with holding_lease(JudgingRun, run.pk) as second:
            assert second is None
        held = JudgingRun.objects.get(pk=run.pk)
        assert held.status == "running" and held.lease_owner == first.owner
        assert "nothing to do" in resume_run(held).detail
    assert JudgingRun.objects.get(pk=run.pk).lease_owner == ""


def test_a_dead_workers_run_is_taken_over(two_meetings_committed, eager_celery):
    with FakeOpenAI() as server:
        run = create_judging_run(make_judge(server.url), qa_test2(), "st")
        long_ago = timezone.now() - timedelta(minutes=5)
        JudgingRun.objects.filter(pk=run.pk).update(
            status="running",
            lease_owner="gone-host:4242:abcd1234",
            lease_expires_at=long_ago,
            heartbeat_at=long_ago - timedelta(seconds=30),
            started_at=long_ago,
        )
        live = create_judging_run(make_judge(server.url, name="live judge"), qa_test2(), "st")
        JudgingRun.objects.filter(pk=live.pk).update(
            status="running",
            lease_owner="alive-host:1:ffff0000",
            lease_expires_at=timezone.now() + timedelta(seconds=30),
            heartbeat_at=timezone.now(),
        )
        taken = reclaim_stale_runs()
        assert taken == [f"judging run {run.pk} (was on gone-host:4242)"]
        assert_paid_once(server, run)
        untouched = JudgingRun.objects.get(pk=live.pk)
        assert (untouched.status, untouched.lease_owner) == ("running", "alive-host:1:ffff0000")


def test_an_unreachable_endpoint_stops_the_run_with_its_cause(two_meetings_committed):
    closed = FakeOpenAI()  # a port that nobody listens on once closed
    with closed:
        url = closed.url
    judge = make_judge(url, max_concurrency=8, max_retries=5)
    run = create_judging_run(judge, qa_test2(), "st")
    started = time.monotonic()
    run = run_llm_judging(run.pk)
    elapsed = time.monotonic() - started
    assert run.status == "failed"
    assert "could not be reached" in run.message and "APIConnectionError" in run.message
    assert "identical connection errors in a row" in run.message
    assert elapsed < 10  # not 36 items x 6 tries with backoff
    failed_calls = LLMCall.objects.filter(status="api_error").count()
    assert 1 <= failed_calls <= 8  # only the calls in flight when it opened
    assert JudgeItem.objects.filter(run=run, status="pending").count() == 36
    assert (run.done, run.requests) == (0, failed_calls)


def test_counters_and_needs_a_human_follow_what_is_stored(two_meetings_committed, eager_celery):
    # 3 client errors (the items stay pending), then 4 garbled answers: with
    # reask=1, two prompts need a human (4 items: each prompt is asked for 2
    # responses with the same text)
    # (the unreadable-answer watch off: these garbled answers come before any
    # readable one, and this test is about the counters and retry_failed)
    with FakeOpenAI(plan=["400"] * 3 + ["garbled"] * 4) as server:
        judge = make_judge(server.url, max_concurrency=1, stop_after_unreadable=0)
        run = run_llm_judging(create_judging_run(judge, qa_test2(), "st").pk)
        human = JudgeItem.objects.filter(run=run, status="needs_human").count()
        assert human == 4
        assert (run.status, run.failed, run.done) == ("failed", 3 + human, 36 - 3 - human)
        assert resume_run(run).changed
        run.refresh_from_db()
        assert (run.failed, run.done) == (human, 36 - human)  # the resumed items left `failed`
        assert not JudgeItem.objects.filter(run=run, outcome="api_error").exists()
        asked = server.count
        outcome = retry_failed(run)
        assert outcome.changed, outcome.detail
        run.refresh_from_db()
        assert (run.status, run.done, run.failed) == ("done", 36, 0), run.message
        assert not JudgeItem.objects.filter(run=run, status="needs_human").exists()
        # asked again with seeds not used before (the ledger holds the garbled answers)
        assert server.count == asked + 2
        new_seeds = {c.params["seed"] for c in LLMCall.objects.order_by("-pk")[:2]}
        assert min(new_seeds) > 2023 + 1_000_003
        assert retry_failed(run).code == "nothing_to_retry"


def test_judge_with_the_broker_down_fails_the_run_in_one_line(two_meetings_committed):
    environment = {
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": database_url_for_worker(),
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",  # nothing listens on port 1
        "PATH": "/usr/bin:/bin",
    }
    answer = subprocess.run(
        [sys.executable, "manage.py", "judge", "--evaluator", "metric: f1", "--split", "test2"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answer.returncode == 1
    lines = answer.stderr.strip().splitlines()
    assert len(lines) == 1 and "Could not queue the run" in lines[0], answer.stderr
    run = JudgingRun.objects.get()
    assert run.status == "failed" and "Start the broker, then resume the run." in run.message
    assert run.finished_at is not None
