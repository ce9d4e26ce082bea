"""A worker cut off from the network while its run was taken over comes back
later, with results in hand: it must write nothing of the run's (items,
counters, its end), since the new holder owns them now. Found by the cluster
rehearsal (tests/cluster): the returning worker marked items the new holder
had judged as failed API calls, on a run already done."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from corpus.models import Dataset
from judging.evaluators import JudgeConfig, judge_for
from judging.judging_runs import create_judging_run
from judging.model_judging import ItemResult, ResultWriter
from judging.models import Evaluator, JudgeItem, JudgingRun
from runs.lifecycle import finish, holding_lease, reclaim_stale_runs
from tests.conftest import require

pytestmark = pytest.mark.django_db

CONFIG = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "server": "vllm", "seeds": [2023]}


def test_a_worker_whose_run_was_taken_over_writes_nothing_of_it(two_meetings):
    judge = Evaluator.objects.create(name="fenced judge", kind="llm_rubric", config=CONFIG)
    run = create_judging_run(
        judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    item = JudgeItem.objects.filter(run=run).order_by("pk").first()
    with holding_lease(JudgingRun, run.pk) as lease:
        assert lease is not None
        # while this worker could not reach the database, its lease expired,
        # another worker took the run over and judged the item
        JudgingRun.objects.filter(pk=run.pk).update(lease_owner="llm2:7:other")
        JudgeItem.objects.filter(pk=item.pk).update(status="done", outcome="ok")
        # back on the network: its call timed out meanwhile
        writer = ResultWriter(run, judge_for(JudgeConfig.from_dict(CONFIG)), lease)
        writer.add(ItemResult(item, outcome="api_error", detail="timed out", attempts=1))
        writer.flush()
        finish(run, JudgingRun.Status.FAILED, "1 item failed with API errors", lease)
        assert lease.lost.is_set()
    item.refresh_from_db()
    assert (item.status, item.outcome, item.attempts) == ("done", "ok", 0)
    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.failed, run.message) == (
        "running",
        "llm2:7:other",
        0,
        "",
    )


def test_the_holder_still_writes_and_ends_its_run(two_meetings):
    judge = Evaluator.objects.create(name="holding judge", kind="llm_rubric", config=CONFIG)
    run = create_judging_run(
        judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    item = JudgeItem.objects.filter(run=run).order_by("pk").first()
    with holding_lease(JudgingRun, run.pk) as lease:
        assert lease is not None
        writer = ResultWriter(run, judge_for(JudgeConfig.from_dict(CONFIG)), lease)
        writer.add(ItemResult(item, outcome="api_error", detail="timed out", attempts=1))
        writer.flush()
        finish(run, JudgingRun.Status.FAILED, "1 item failed with API errors", lease)
        assert not lease.lost.is_set()
    item.refresh_from_db()
    assert (item.outcome, item.attempts) == ("api_error", 1)
    run.refresh_from_db()
    assert (run.status, run.failed) == ("failed", 1)


# --- a database blip, a cut-off holder --------------------------------------------------------

LEASE = 3.0  # seconds: renewed every second; a lost holder stops sending 1 s before expiry
MARGIN = 1.0


def wait_until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_that_failed_once_keeps_the_lease(two_meetings_committed, settings):
    """The database ends the heartbeat's session (a restart): the next renewal
    fails, the one after it succeeds, and nobody takes the run over."""
    require(connection.vendor == "postgresql", "ending a session needs PostgreSQL")
    settings.CONCORD_RUN_LEASE_SECONDS = LEASE
    judge = Evaluator.objects.create(name="beating judge", kind="llm_rubric", config=CONFIG)
    run = create_judging_run(
        judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
    )
    with holding_lease(JudgingRun, run.pk) as lease:
        assert lease is not None
        claimed = JudgingRun.objects.get(pk=run.pk).heartbeat_at

        def beat():
            return JudgingRun.objects.get(pk=run.pk).heartbeat_at

        wait_until(lambda: beat() > claimed, 5, "the lease was never renewed")
        with connection.cursor() as cursor:  # every session but this test's
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert cursor.fetchone()[0] >= 1  # the heartbeat's
        cut = timezone.now()
        time.sleep(3 * LEASE)  # three leases: an expired one would be taken over
        assert reclaim_stale_runs() == []
        held = JudgingRun.objects.get(pk=run.pk)
        assert held.lease_owner == lease.owner and held.lease_is_live
        assert held.heartbeat_at > cut + timedelta(seconds=LEASE)  # renewed on
        assert not lease.lost.is_set() and lease.sendable()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("eager_celery")
def test_a_holder_that_cannot_renew_stops_sending_before_its_lease_can_expire(
    two_meetings_committed, settings, monkeypatch
):
    """The holder's heartbeat cannot reach the database (its host was cut off
    from it); its calling threads must send nothing once the lease could have
    expired, less the margin, so that the worker taking the run over never
    overlaps it. Paid twice: at most the calls in flight when it was cut off."""
    from django.db import OperationalError
    from django.db.models import QuerySet

    from judging.model_judging import run_llm_judging
    from llm.models import LLMCall
    from tests.fakes.openai_server import FakeOpenAI
    from tests.judging.test_llm_runs import DISTINCT

    settings.CONCORD_RUN_LEASE_SECONDS = LEASE
    settings.CONCORD_RUN_LEASE_MARGIN_SECONDS = MARGIN
    seeds = [2023, 2024, 2025, 2026, 2027]
    concurrency = 4
    # The first holder's heartbeat: fails while `cut` is set; the time of its
    # last renewal that went through is kept (time.time(), the server's clock).
    cut = threading.Event()
    first: dict = {}
    original_update = QuerySet.update

    def update(queryset, **fields):
        thread = threading.current_thread()
        if not thread.name.startswith("lease-JudgingRun"):
            return original_update(queryset, **fields)
        first.setdefault("thread", thread)
        if thread is not first["thread"]:
            return original_update(queryset, **fields)  # the next holder's
        if cut.is_set():
            raise OperationalError("could not receive data from server: Connection timed out")
        renewed = original_update(queryset, **fields)
        first["renewed"] = time.time()
        return renewed

    monkeypatch.setattr(QuerySet, "update", update)
    with FakeOpenAI(latency=0.3) as server:
        judge = Evaluator.objects.create(
            name="cut judge",
            kind="llm_rubric",
            config={
                **CONFIG,
                "base_url": server.url,
                "seeds": seeds,
                "max_concurrency": concurrency,
                "timeout_s": 5,
            },
        )
        run = create_judging_run(
            judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
        )
        outcome: dict = {}

        def holder() -> None:
            try:
                outcome["run"] = run_llm_judging(run.pk)
            except BaseException as error:
                outcome["error"] = error
            finally:
                connections.close_all()

        old = threading.Thread(target=holder)
        old.start()
        wait_until(lambda: "renewed" in first and server.count >= 8, 20, "the run did not start")
        cut.set()
        last = first["renewed"]
        fence = last + LEASE - MARGIN
        # past the lease's expiry: what the cut-off holder sent meanwhile
        time.sleep(max(0.0, last + LEASE + 0.3 - time.time()))
        with server.lock:
            arrivals = [entry["arrived"] for entry in server.log]
        # (a request checked just before the fence reaches this process's
        # server a moment later: 0.3 s allowed, well inside the margin)
        late = [round(t - fence, 3) for t in arrivals if t > fence + 0.3]
        assert late == [], f"sent after the fence (s past it): {late}"
        assert old.is_alive()  # waiting for a renewal, not failed
        assert JudgingRun.objects.get(pk=run.pk).status == "running"
        # the lease expired: another worker takes the run over (here, inline)
        assert len(reclaim_stale_runs()) == 1
        taken = JudgingRun.objects.get(pk=run.pk)
        assert taken.status == "done", taken.message
        # the first holder reaches the database again: it finds the run taken and stops
        cut.clear()
        old.join(30)
        assert not old.is_alive()
    assert "error" not in outcome, outcome.get("error")
    done = JudgingRun.objects.get(pk=run.pk)
    assert (done.status, done.done, done.failed) == ("done", 36 * len(seeds), 0), done.message
    # the holder's answers were on the record before the takeover: nothing
    # was paid twice (at most the calls that could be in flight)
    paid_twice = server.count - DISTINCT * len(seeds)
    assert 0 <= paid_twice <= concurrency, paid_twice
    assert LLMCall.objects.count() == server.count
