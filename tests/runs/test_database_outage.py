"""A database blip in the middle of a run: every session of the run's worker
is ended by the server (`pg_terminate_backend`, as a PostgreSQL restart or a
failover does) while calls are in flight. The run must go on by itself and
end done, each call paid once and on the record once: the ledger's write is
tried again on a new connection, the lease's heartbeat keeps renewing, the
run's own look-ups and writes wait for the database."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from generation.models import GenerationRun, Response
from generation.runner import create_generation_run, run_generation
from judging.judging_runs import create_judging_run
from judging.model_judging import run_llm_judging
from judging.models import JudgingRun
from llm.models import LLMCall
from tests.conftest import require
from tests.corpus.fixtures import qa_test2
from tests.fakes.openai_server import FakeOpenAI
from tests.generation.test_api_ledger import api_system
from tests.judging.fixtures import llm_judge
from tests.judging.test_llm_runs import DISTINCT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_celery")]

TERMINATE = """
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
"""


@pytest.fixture(autouse=True)
def postgresql():
    require(connection.vendor == "postgresql", "ending the run's sessions needs PostgreSQL")


def terminate_other_sessions() -> int:
    with connection.cursor() as cursor:
        cursor.execute(TERMINATE)
        return cursor.fetchone()[0]


def in_background(work, *args) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["run"] = work(*args)
        except BaseException as error:  # the test reports it
            outcome["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def end_sessions_at(server: FakeOpenAI, counts: list[int], worker: threading.Thread) -> list[int]:
    """End every other session each time the server has had so many requests
    (while the run goes on: the sessions it ended with)."""
    ended = []
    for count in counts:
        deadline = time.monotonic() + 30
        while server.count < count and worker.is_alive():
            assert time.monotonic() < deadline, f"the run did not reach {count} requests"
            time.sleep(0.01)
        if not worker.is_alive():
            break
        ended.append(terminate_other_sessions())
    return ended


@pytest.mark.usefixtures("two_meetings_committed")
def test_a_judging_run_outlasts_its_sessions_being_ended():
    seeds = [2023, 2024, 2025, 2026, 2027]
    with FakeOpenAI(latency=0.05) as server:
        judge = llm_judge(server.url, max_concurrency=8, seeds=seeds, timeout_s=5)
        run = create_judging_run(judge, qa_test2(), "st")
        worker, outcome = in_background(run_llm_judging, run.pk)
        ended = end_sessions_at(server, [10, 35, 60], worker)
        worker.join(120)
        assert not worker.is_alive()
    assert "error" not in outcome, outcome.get("error")
    done = JudgingRun.objects.get(pk=run.pk)
    assert (done.status, done.done, done.failed) == ("done", 36 * len(seeds), 0), done.message
    assert len(ended) == 3 and all(ended), ended  # the worker's sessions were ended
    # each call paid once, and on the record once
    assert server.count == DISTINCT * len(seeds) == LLMCall.objects.count()
    assert done.requests == server.count


@pytest.mark.usefixtures("two_meetings_committed")
def test_a_generation_run_outlasts_its_sessions_being_ended():
    with FakeOpenAI(latency=0.2) as server:
        system = api_system(server.url, max_concurrency=2)
        run = create_generation_run(system, qa_test2(), "st")
        worker, outcome = in_background(run_generation, run.pk)
        ended = end_sessions_at(server, [3, 8], worker)
        worker.join(120)
        assert not worker.is_alive()
    assert "error" not in outcome, outcome.get("error")
    done = GenerationRun.objects.get(pk=run.pk)
    # the two synthetic meetings are different transcripts: 12 distinct requests
    assert (done.status, done.done, done.failed) == ("done", 12, 0), done.message
    assert len(ended) == 2 and all(ended), ended
    assert server.count == 12 == LLMCall.objects.count() == done.requests
    assert Response.objects.filter(run=run, call__isnull=False).count() == 12
