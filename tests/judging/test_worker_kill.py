"""A worker killed (-9) in the middle of an LLM judging run: another worker,
already running, takes it over once the dead worker's lease expires (within
seconds here, the lease being 3 s), with nothing lost, nothing judged twice
and no request paid twice beyond the ones in flight at the kill."""

import os
import signal
import time
import uuid

import pytest

from corpus.models import Dataset
from judging.judging_runs import create_judging_run
from judging.models import Evaluator, JudgingRun, Judgment
from judging.tasks import run_judging
from llm.models import LLMCall
from tests.conftest import port_open, require
from tests.fakes.openai_server import FakeOpenAI
from tests.workers import redis_url, send_run, start_worker, stop, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_killed_worker_loses_and_doubles_nothing(tmp_path):
    from corpus.importers.synthetic import write_synthetic_elitr
    from judging.importing import import_elitr_bench

    url = redis_url()
    host_port = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    require(port_open(host or "127.0.0.1", int(port or 6379)), f"Redis is not reachable at {url}")
    import_elitr_bench(write_synthetic_elitr(tmp_path / "data", meetings=2), with_responses=True)
    queue = f"test-kill-{uuid.uuid4().hex[:8]}"
    with FakeOpenAI(latency=0.4) as server:
        judge = Evaluator.objects.create(
            name="killable judge",
            kind="llm_rubric",
            config={
                "base_url": server.url,
                "model": "m",
                "server": "vllm",
                "max_concurrency": 2,
                "seeds": [2023],
                "timeout_s": 5,
            },
        )
        run = create_judging_run(
            judge, Dataset.objects.get(version="qa", language="en", split="test2"), "st"
        )
        first = start_worker(queue, url, tmp_path, "first")
        second = None
        try:
            send_run(run_judging, run, queue, url)
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).lease_owner != "", 60)
            # the second worker is up and idle before the first dies
            second = start_worker(queue, url, tmp_path, "second")
            assert wait_for(lambda: Judgment.objects.filter(evaluator=judge).count() >= 6, 60)
            dead_owner = JudgingRun.objects.get(pk=run.pk).lease_owner
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=10)
            killed_at = time.monotonic()
            judged_at_kill = Judgment.objects.filter(evaluator=judge).count()
            assert judged_at_kill < 36
            assert wait_for(
                lambda: JudgingRun.objects.get(pk=run.pk).lease_owner not in ("", dead_owner), 60
            ), (tmp_path / "second.log").read_text()
            taken_over_after = time.monotonic() - killed_at
            assert wait_for(lambda: JudgingRun.objects.get(pk=run.pk).status == "done", 90), (
                tmp_path / "second.log"
            ).read_text()
        finally:
            stop(first, second)
        # lease 3 s, reaper every 1 s: far below the broker's visibility timeout
        assert taken_over_after < 15
        assert "Took over judging run" in (tmp_path / "second.log").read_text()
        assert Judgment.objects.filter(evaluator=judge).count() == 36
        assert LLMCall.objects.filter(status="ok").count() == 18  # 18 distinct prompts
        # at most the calls in flight at the kill (2) were asked twice
        assert 18 <= server.count <= 18 + 2
        assert not LLMCall.objects.filter(attempt__gt=0).exists()  # nothing stored twice
        run = JudgingRun.objects.get(pk=run.pk)
        assert (run.done, run.failed) == (36, 0)
