"""A Redis outage of 20 s in the middle of a judging run, with Redis as the
broker and as the endpoint gate's store: the worker, started as deployed,
stays up, the run pauses and then finishes by itself, nothing is asked twice.
The test starts its own redis-server on a free port (never the machine's
shared one) and stops it for 20 s."""

from __future__ import annotations

import shutil
import time
import uuid

import pytest

from corpus.models import Dataset
from judging.judging_runs import create_judging_run
from judging.models import Evaluator, JudgingRun, Judgment
from judging.tasks import run_judging
from llm.models import LLMCall
from tests.conftest import require
from tests.fakes.openai_server import FakeOpenAI
from tests.judging.test_gate_outage import PrivateRedis
from tests.workers import send_run, start_worker, stop, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SEEDS = [2023, 2024, 2025, 2026, 2027]
DISTINCT = 18  # distinct prompts per seed in the synthetic meetings


def test_a_worker_outlives_a_redis_outage_and_its_run_finishes(tmp_path):
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    require(shutil.which("redis-server") is not None, "redis-server is not installed")
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    redis = PrivateRedis(tmp_path)
    redis.start()
    queue = f"test-outage-{uuid.uuid4().hex[:8]}"
    worker = None
    try:
        with FakeOpenAI(latency=0.2) as server:
            judge = Evaluator.objects.create(
                name="outage judge",
                kind="llm_rubric",
                config={
                    "base_url": server.url,
                    "model": "m",
                    "server": "vllm",
                    "max_concurrency": 4,
                    "endpoint_max_in_flight": 3,
                    "seeds": SEEDS,
                    "timeout_s": 5,
                },
            )
            run = create_judging_run(
                judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
            )
            worker = start_worker(
                queue,
                redis.url,
                tmp_path,
                "outage",
                as_deployed=True,
                CONCORD_GATE_LEASE_SECONDS="2",
            )
            send_run(run_judging, run, queue, redis.url)
            assert wait_for(lambda: server.count >= 10, 60), (tmp_path / "outage.log").read_text()
            redis.stop()
            stopped_at = server.count
            time.sleep(20)
            during = JudgingRun.objects.get(pk=run.pk)
            sent_during = server.count - stopped_at
            redis.start()  # an empty Redis on the same port, as after a restart
            finished = wait_for(lambda: JudgingRun.objects.get(pk=run.pk).status == "done", 120)
            log = (tmp_path / "outage.log").read_text()
            assert finished, log
            alive = worker.poll() is None
            # the worker goes on taking work once the broker is back
            assert alive, log
            assert "Unrecoverable error" not in log, log
    finally:
        stop(worker)
        redis.stop()
    assert during.status == "running" and during.message == "", during.message
    assert sent_during <= 3  # only the requests holding a gate slot went out
    done = JudgingRun.objects.get(pk=run.pk)
    assert (done.done, done.failed) == (36 * len(SEEDS), 0), done.message
    assert Judgment.objects.filter(evaluator=judge).count() == 36 * len(SEEDS)
    assert server.count == DISTINCT * len(SEEDS) == LLMCall.objects.count()
